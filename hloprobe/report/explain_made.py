"""`explain`'s "What XLA made": each config's optimized module executed.

`numerics.made` runs every config's optimized module in the numpy
executor; here configs with one verdict are grouped in runs of batch sizes:
a change of the math ("XLA changed the math: ..."), what could not be
executed ("prediction incomplete: not executed: ..."), and the configs
whose module does what the program asks (`AGREES`, with row 0's error at
the effective algorithms beside the program's prediction).

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import itertools

from hloprobe.records import ConfigResult
from hloprobe.report.explain_records import AGREES, MadeMath
from hloprobe.report.verdict_words import made_words

__all__ = ["made_math"]


def made_math(precision: str, configs) -> list[MadeMath]:
  """What XLA made, in runs of batch sizes with one verdict: configs whose
  executed module changed the math or could not be executed, and those
  whose module does what the program asks (`AGREES`, with row 0's error
  at the effective algorithms beside the program's prediction)."""
  checked = [r for r in configs if r.made is not None]
  out = []
  key = lambda r: made_words(r.made) or AGREES
  for run in [list(g) for _, g in itertools.groupby(checked, key)]:
    ms = [r.made for r in run]
    devs = [m.deviation_abs for m in ms if m.deviation_abs is not None]
    bounds = [m.bound_abs for m in ms if m.bound_abs is not None]
    out.append(
      MadeMath(
        precision,
        tuple(r.config.n for r in run),
        made_words(ms[0]) or _agrees_words(run),
        ms[0].changed,
        max(devs, default=None),
        min(bounds, default=None),
        agrees=ms[0].agrees,
      )
    )
  return out


def _agrees_words(run: list[ConfigResult]) -> str:
  """E.g. "does what the program asks (row 0 |err| vs f64 at the
  effective algorithms 6.1e-01, the program's prediction 6.1e-01)"."""

  def span(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return (
      f"{lo:.2g}" if f"{lo:.2g}" == f"{hi:.2g}" else f"{lo:.2g} to {hi:.2g}"
    )

  made = [r.made.stats.row0_abs for r in run if r.made.stats is not None]
  asked = [r.prediction.stats.row0_abs for r in run if r.prediction]
  if not made or not asked:
    return AGREES
  return (
    f"{AGREES} (row 0 |err| vs f64 at the effective algorithms "
    f"{span(made)}, the program's prediction {span(asked)})"
  )
