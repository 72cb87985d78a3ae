"""`explain`'s rows beyond row 0: configs whose worst row stands out.

Every row of every output leaf is judged in `numerics.rows` (each against
its own f32 noise floor); `explain` adds a line where a config's worst row
says more than row 0's verdict (`numerics.WorstRow.stands_out`), e.g. "under
float32, n = 8: row 5: 1.2e-02, 1588x beyond f32 noise (1 of 8 rows)",
and the same for what XLA made (`numerics.made`'s rows), under "What XLA
made".

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

from collections.abc import Sequence

from hloprobe.records import ConfigResult
from hloprobe.report.explain_records import RowBeyond, TargetExplanation
from hloprobe.report.verdict_words import judged_how, row_words, whole_how

__all__ = [
  "judged_lines",
  "made_rows_beyond",
  "made_rows_lines",
  "rows_beyond",
  "rows_lines",
]


def _beyond(configs, rows_of) -> tuple[RowBeyond, ...]:
  """Each config's worst rows (`rows_of(config)`) that stand out."""
  return tuple(
    RowBeyond(r.config.precision, r.config.n, w)
    for r in configs
    for w in rows_of(r)
    if w is not None and w.stands_out
  )


def judged_lines(configs: Sequence[ConfigResult]) -> tuple[str, ...]:
  """Which rows the configs judged, where some judged not every row
  (`numerics.rows.judged_rows`): one line, each batch size with the most
  rows a leaf of it judged, then how they were picked, e.g. "n = 100: 48
  of 100 rows, n = 4000: 57 of 4000 rows: row 0, 32 spread evenly and
  the 16 of largest error by a first pass, per leaf (--all_rows: every
  row)"; a large program's rows against row 0's floor
  (`verdict_words.whole_how`) also where every row was judged, "n = 2:
  every row of 2, n = 8: 2 of 8 rows: ..."; () where every row was
  judged against its own floor."""
  counts: dict[int, tuple[int, int]] = {}
  how = whole = ""
  for r in configs:
    found = [w for w in (r.prediction.rows if r.prediction else ()) if w]
    some = [w for w in found if w.judged is not None]
    if some:
      w = max(some, key=lambda w: w.judged_count)
      held = counts.get(r.config.n, (0, w.rows))
      counts[r.config.n] = (max(held[0], w.judged_count), w.rows)
      how = judged_how(w)
    for w in found:  # a large program's rows against row 0's floor
      if w.judged is None and w.rows > 1 and whole_how(w):
        counts.setdefault(r.config.n, (w.rows, w.rows))
        whole = whole_how(w)
  if not counts:
    return ()
  sizes = ", ".join(
    f"n = {n}: " + (f"every row of {k}" if k == rows else f"{k} of {rows} rows")
    for n, (k, rows) in counts.items()
  )
  return (f"{sizes}: {how or whole}",)


def rows_beyond(configs: Sequence[ConfigResult]) -> tuple[RowBeyond, ...]:
  """Each config's leaves whose worst row stands out, in sweep order."""
  return _beyond(configs, lambda r: r.prediction.rows if r.prediction else ())


def made_rows_beyond(configs: Sequence[ConfigResult]) -> tuple[RowBeyond, ...]:
  """The same of what XLA made (`Made.rows`: the optimized module executed
  at the effective algorithms, every row judged), in sweep order."""
  return _beyond(configs, lambda r: r.made.rows if r.made else ())


def made_rows_lines(e: TargetExplanation) -> list[str]:
  """One line per `RowBeyond` of `e.made_rows`, e.g. "float32 (HIGHEST),
  n = 8: every row judged: row 5: 1.2e-02, 1588x beyond f32 noise (1 of
  8 rows)"."""
  return [
    f"{e.precisions.get(x.precision, x.precision)}, n = {x.n}: every row "
    f"judged: {row_words(x.worst)}"
    for x in e.made_rows
  ]


def rows_lines(e: TargetExplanation) -> list[str]:
  """One line per `RowBeyond` of `e`, its precision under its label."""
  return [
    f"under {e.precisions.get(x.precision, x.precision)}, n = {x.n}: "
    f"{row_words(x.worst)}"
    for x in e.rows
  ]
