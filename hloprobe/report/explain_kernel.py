"""Which sites' predictions are a "bit-exact model" and which a "band".

`kernel_models` asks `numerics.site_model` of every site of a target's
compiled configs (its fate, PTX evidence, split-K and the target's compute
capability); `kernel_model_lines` words them under "Effective algorithms",
e.g. "per site: sites 0-2 bit-exact model (mma.sync.aligned.m16n8k8...
on Ampere (MMA-Sim), K in k8 steps); site 3 band (multiply+reduce: ...)".
The sweep computes row 0 with the bit-exact sites by the kernel model
(`numerics.KernelRows`, `Prediction.kernel`); `kernel_rows` gathers them
and `kernel_model_lines` prints them after the per-site line. The
verdicts, shares and bands stay the emulation's.

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

from hloprobe.numerics import site_model
from hloprobe.report.kernel_words import kernel_site_words
from hloprobe.report.wording import numbers

BIT_EXACT = "bit-exact model"

__all__ = [
  "kernel_json",
  "kernel_model_lines",
  "kernel_models",
  "kernel_notes",
  "kernel_rows",
]


def kernel_models(configs, compute_capability) -> tuple:
  """((precision, kind, why, sites, sizes), ...) over the ok configs,
  first-seen: the sites of that kind at every batch size in `sizes` (the
  sizes at which a precision's sites keep one set of words are grouped).

  Args:
    configs: one target's `ConfigResult`s.
    compute_capability: the target's, e.g. "8.0"; None for the CPU.
  """
  per_n: dict[tuple[str, int], dict[tuple[str, str], list[int]]] = {}
  for r in configs:
    if not r.ok:
      continue
    groups = per_n.setdefault((r.config.precision, r.config.n), {})
    for f in r.compilation.fates:
      m = site_model(
        f.fate,
        f.mma_opcodes,
        compute_capability,
        f.split_k,
        f.effective_algorithm,
        f.ptx_tf32_rounding,
      )
      groups.setdefault((m.kind, kernel_site_words(m)), []).append(f.site.index)
  sizes: dict[tuple, list[int]] = {}
  for (precision, n), groups in per_n.items():
    key = (precision,) + tuple(
      (kind, why, tuple(sorted(set(s)))) for (kind, why), s in groups.items()
    )
    sizes.setdefault(key, []).append(n)
  return tuple(
    (key[0], kind, why, sites, tuple(sorted(ns)))
    for key, ns in sizes.items()
    for kind, why, sites in key[1:]
  )


def _sites(sites) -> str:
  return ("sites " if len(sites) > 1 else "site ") + numbers(sites)


def kernel_model_lines(e) -> list[str]:
  """One line per set of precisions with the same words; none on the CPU.

  E.g. "per site under bfloat16, tensorfloat32: sites 0-2 bit-exact model
  (...); site 3 band (...)"; where the words differ by batch size, one
  line per set of sizes ("per site under bfloat16 at n = 1: sites 0-3
  band (...)", "... at n = 2: sites 0-2 bit-exact model (...); site 3
  band (...)"). Then one line on where the numbers are.
  """
  if not e.kernel_models:
    return []
  words: dict[str, dict[tuple, list[str]]] = {}
  for precision, kind, why, sites, ns in e.kernel_models:
    by_n = words.setdefault(precision, {})
    by_n.setdefault(ns, []).append(f"{_sites(sites)} {kind} ({why})")
  by_text: dict[tuple[str, str], list[str]] = {}
  for precision, by_n in words.items():
    for ns, parts in by_n.items():
      at = f" at n = {numbers(ns)}" if len(by_n) > 1 else ""
      by_text.setdefault((at, "; ".join(parts)), []).append(precision)
  lines = [
    f"per site under {', '.join(ps)}{at}: {t}"
    for (at, t), ps in by_text.items()
  ]
  rows: dict[str, list[str]] = {}
  for precision, n, row0, err in e.kernel_rows:
    rows.setdefault(precision, []).append(
      f"n = {n}: {row0:.9g} (|err| vs f64 {err:.2e})"
    )
  lines += [
    f"row 0 with those bit-exact sites by the kernel model, the bands "
    f"emulated, under {precision}: {'; '.join(words)}"
    for precision, words in rows.items()
  ]
  if not rows and any(m[1] == BIT_EXACT for m in e.kernel_models):
    lines.append(  # records made before the sweep ran the kernel model
      "the row 0 prediction below emulates every site (band); the bit-exact"
      " model's numbers: hloprobe.numerics.kernel_model_run"
    )
  return lines


def kernel_rows(configs) -> tuple[tuple[str, int, float, float], ...]:
  """(precision, n, row 0, |row 0 - f64|) by the kernel model, for each ok
  config whose prediction has one (`Prediction.kernel`), in sweep order."""
  return tuple(
    (r.config.precision, r.config.n, k.row0, k.row0_abs)
    for r in configs
    if r.ok
    and r.prediction is not None
    and (k := r.prediction.kernel) is not None
    and k.row0 is not None
  )


def _not_run_words(k) -> str | None:
  """Why a `KernelRowZero`'s row 0 was not computed (its `budget` or
  `error`), e.g. "kernel model: <error>"; None where nothing stopped it."""
  if k.budget is not None:
    return (
      f"kernel model not run: its bit-exact sites take over {k.budget:,} "
      "multiply-adds at the bit level, the sweep's budget "
      "(hloprobe.numerics.kernel_model_run computes it without one)"
    )
  if k.error is not None:
    return f"kernel model: {k.error}"
  return None


def kernel_notes(configs) -> list[str]:
  """One line per ok config whose bit-exact sites the kernel model could
  not run (`KernelRowZero.budget`, `.error`), e.g. "n = 9, bfloat16: row
  0 not computed by the kernel model (kernel model: <error>); the
  emulation's row 0 stands"."""
  return [
    f"n = {r.config.n}, {r.config.precision}: row 0 not computed by the "
    f"kernel model ({note}); the emulation's row 0 stands"
    for r in configs
    if r.ok
    and r.prediction is not None
    and (k := r.prediction.kernel) is not None
    and (note := _not_run_words(k)) is not None
  ]


def kernel_json(k) -> dict:
  """A prediction's kernel model (`numerics.KernelRowZero`) as
  results.json's "row0_kernel_model", "row0_kernel_model_abs_err",
  "row0_kernel_model_note" and "site_models"; {} for a record made
  without it."""
  if k is None:
    return {}
  return {
    "row0_kernel_model": k.row0,
    "row0_kernel_model_abs_err": k.row0_abs,
    "row0_kernel_model_note": _not_run_words(k),
    "site_models": [
      {"site": i, "kind": m.kind, "why": kernel_site_words(m)}
      for i, m in enumerate(k.models)
    ],
  }
