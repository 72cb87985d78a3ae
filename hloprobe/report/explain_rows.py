"""`explain`'s rows beyond row 0: configs whose worst row stands out.

Every row of every output leaf is judged in `numerics.rows` (each against
its own f32 noise floor); `explain` adds a line where a config's worst row
says more than row 0's verdict (`numerics.stands_out`), e.g. "under
float32, n = 8: row 5: 1.2e-02, 1588x beyond f32 noise (1 of 8 rows)".

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

from collections.abc import Sequence

from hloprobe.numerics import row_words, stands_out
from hloprobe.records import ConfigResult
from hloprobe.report.explain_records import RowBeyond, TargetExplanation

__all__ = ["rows_beyond", "rows_lines"]


def rows_beyond(configs: Sequence[ConfigResult]) -> tuple[RowBeyond, ...]:
  """Each config's leaves whose worst row stands out, in sweep order."""
  return tuple(
    RowBeyond(r.config.precision, r.config.n, w)
    for r in configs
    if r.prediction is not None
    for w in r.prediction.rows
    if stands_out(w)
  )


def rows_lines(e: TargetExplanation) -> list[str]:
  """One line per `RowBeyond` of `e`, its precision under its label."""
  return [
    f"under {e.precisions.get(x.precision, x.precision)}, n = {x.n}: "
    f"{row_words(x.worst)}"
    for x in e.rows
  ]
