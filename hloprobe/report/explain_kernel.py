"""Which sites' predictions are a "bit-exact model" and which a "band".

`kernel_models` asks `numerics.site_model` of every site of a target's
compiled configs (its fate, PTX evidence, split-K and the target's compute
capability); `kernel_model_lines` words them under "Effective algorithms",
e.g. "per site: sites 0-2 bit-exact model (mma.sync.aligned.m16n8k8...
on Ampere (MMA-Sim), K in k8 steps); site 3 band (multiply+reduce: ...)".
The bit-exact model's numbers come from `numerics.kernel_model_run`; the
default sweep still predicts with the emulation's band at every site, and
the line says so.

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

from hloprobe.numerics import site_model

__all__ = ["kernel_model_lines", "kernel_models"]


def kernel_models(configs, compute_capability) -> tuple:
  """((kind, why, sites), ...) over the ok configs, in first-seen order.

  Args:
    configs: one target's `ConfigResult`s.
    compute_capability: the target's, e.g. "8.0"; None for the CPU.
  """
  found: dict[tuple[str, str], set[int]] = {}
  for r in configs:
    if not r.ok:
      continue
    for f in r.compilation.fates:
      m = site_model(
        f.fate.value,
        f.algorithm_evidence,
        compute_capability,
        f.split_k,
        f.effective_algorithm,
      )
      found.setdefault((m.kind, m.why), set()).add(f.site.index)
  return tuple((k, why, tuple(sorted(s))) for (k, why), s in found.items())


def _sites(sites) -> str:
  if len(sites) > 1 and list(sites) == list(range(sites[0], sites[-1] + 1)):
    return f"sites {sites[0]}-{sites[-1]}"
  return ("sites " if len(sites) > 1 else "site ") + ", ".join(map(str, sites))


def kernel_model_lines(e) -> list[str]:
  """One line for a GPU target's sites; none on the CPU or without sites."""
  if not e.kernel_models:
    return []
  parts = [f"{_sites(s)} {kind} ({why})" for kind, why, s in e.kernel_models]
  return [
    "per site: "
    + "; ".join(parts)
    + " [row 0 below emulates every site (band); the bit-exact model is"
    " hloprobe.numerics.kernel_model_run]"
  ]
