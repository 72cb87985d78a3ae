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

BIT_EXACT = "bit-exact model"

__all__ = ["kernel_model_lines", "kernel_models"]


def kernel_models(configs, compute_capability) -> tuple:
  """((precision, kind, why, sites), ...) over the ok configs, first-seen.

  Args:
    configs: one target's `ConfigResult`s.
    compute_capability: the target's, e.g. "8.0"; None for the CPU.
  """
  found: dict[tuple[str, str, str], set[int]] = {}
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
      key = (r.config.precision, m.kind, m.why)
      found.setdefault(key, set()).add(f.site.index)
  return tuple((*key, tuple(sorted(s))) for key, s in found.items())


def _sites(sites) -> str:
  if len(sites) > 1 and list(sites) == list(range(sites[0], sites[-1] + 1)):
    return f"sites {sites[0]}-{sites[-1]}"
  return ("sites " if len(sites) > 1 else "site ") + ", ".join(map(str, sites))


def kernel_model_lines(e) -> list[str]:
  """One line per set of precisions with the same words; none on the CPU.

  E.g. "per site under bfloat16, tensorfloat32: sites 0-2 bit-exact model
  (...); site 3 band (...)", then one line on where the numbers are.
  """
  if not e.kernel_models:
    return []
  words: dict[str, list[str]] = {}
  for precision, kind, why, sites in e.kernel_models:
    words.setdefault(precision, []).append(f"{_sites(sites)} {kind} ({why})")
  by_text: dict[str, list[str]] = {}
  for precision, parts in words.items():
    by_text.setdefault("; ".join(parts), []).append(precision)
  lines = [f"per site under {', '.join(ps)}: {t}" for t, ps in by_text.items()]
  if any(m[1] == BIT_EXACT for m in e.kernel_models):
    lines.append(
      "the row 0 prediction below emulates every site (band); the bit-exact"
      " model's numbers: hloprobe.numerics.kernel_model_run"
    )
  return lines
