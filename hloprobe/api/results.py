"""`Results`: a sweep's records with their table, DataFrame and HTML forms.

Private in intent: use the package, `hloprobe.api`.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Iterator

import numpy

from hloprobe.records import ConfigResult
from hloprobe.report import Answer, render, rows_cell, table_values

__all__ = ["Results"]


@dataclasses.dataclass(frozen=True)
class Results:
  """A sweep's records, with their table, DataFrame and HTML forms.

  Attributes:
    records: one `ConfigResult` per config, in sweep order (as
      `run_sweep` returns them); also `results[i]`, `len`, iteration.
    explanations: `explain`'s `TargetExplanation` records; () from `sweep`.
    text: `explain`'s words (as `hloprobe explain` prints them), or
      `sweep`'s table.
    answer: `explain`'s answer (`report.Answer`: the findings, grouped by
      cause when shown), or None from `sweep`.
  """

  records: tuple[ConfigResult, ...]
  explanations: tuple = ()
  text: str = ""
  answer: Answer | None = None

  def __len__(self) -> int:
    return len(self.records)

  def __iter__(self) -> Iterator[ConfigResult]:
    return iter(self.records)

  def __getitem__(self, i: int) -> ConfigResult:
    return self.records[i]

  def __str__(self) -> str:
    return self.text

  @property
  def ok(self) -> bool:
    """Whether every config compiled (and ran where its target runs)."""
    return all(r.ok for r in self.records)

  def table(self, fmt: str = "table", wide: bool = False) -> str:
    """The sweep table as `hloprobe sweep` prints it: "table" (its first
    screen, or every column with `wide`) or "markdown" (every column).

    Raises:
      ValueError: another `fmt`.
    """
    if fmt not in ("table", "markdown"):
      raise ValueError(f"unknown fmt {fmt!r}; choose from table, markdown")
    return render(list(self.records), fmt, {}, wide=wide)

  def to_dataframe(self):
    """The full sweep table (every column, one row per config) as a
    `pandas.DataFrame` (`report.table_values`; each column's type is the
    column's, whatever its rows hold, none included): text columns (case,
    target, precision, fates, algorithms, verdict, status) plain `str`,
    number columns numbers from the records, unrounded (n, ULPs and the
    top site as nullable integers, "Int64"; errors in output units and
    seconds as nullable floats, "Float64"; NA where the table says "n/a",
    while an error that is NaN stays NaN: `Series.isna()` is False for it
    and `dropna()` keeps it); "pred row0 band" is three columns, "pred row0" and "pred row0 tolerance" (the numbers
    the cell shows) and "pred row0 by" ("kernel model", "emulation" or
    "n/a", as the cell says). After "verdict", as in the HTML report's
    table: "beyond band" (Float64: m, how many times its band the
    config's worst error is, `pictures.beyond_band`, dimensionless; NA
    where nothing was compared, inf over a zero band) and "worst row"
    (str: every judged leaf's worst row in words, `report.rows_cell`;
    "n/a" without a prediction).

    Raises:
      ImportError: pandas is not installed (one line saying so).
    """
    try:
      import pandas
    except ImportError:
      raise ImportError(
        "Results.to_dataframe needs pandas, which is not installed; "
        "`pip install pandas`, or use Results.table()"
      ) from None
    headers, kinds, rows = table_values(self.records)
    frame = pandas.DataFrame(rows, columns=headers)
    for i, (header, kind) in enumerate(zip(headers, kinds)):
      column = [row[i] for row in rows]
      if kind == "str":
        frame[header] = frame[header].astype(str)
        continue
      if kind == "int":
        frame[header] = frame[header].astype("Int64")
        continue
      # Masked where the table says "n/a": a NaN error stays NaN, not NA.
      missing = numpy.array([v is None for v in column], bool)
      floats = numpy.array([0.0 if v is None else v for v in column], float)
      frame[header] = pandas.arrays.FloatingArray(floats, missing)
    return _with_html_columns(frame, self.records)

  def _repr_html_(self) -> str:
    """A notebook's view: explain's finding table and what to do (if
    any), then the sweep table as the HTML report shows it
    (`pictures.html_table`: sortable, filterable, coloured by how far each
    config strays beyond its band, its rows grouped by finding), then
    explain's words folded (a <details>)."""
    from hloprobe.pictures import html_table

    table = html_table(self.records, self.answer)
    if not self.explanations:
      return table
    words = html.escape(self.text)
    return (
      f"{table}<details><summary>explain's words</summary>"
      f"<pre>{words}</pre></details>"
    )


def _with_html_columns(frame, records):
  """`frame` with the HTML table's "beyond band" and "worst row" columns
  after "verdict" (see `Results.to_dataframe`)."""
  import pandas

  from hloprobe.pictures import beyond_band

  at = (
    list(frame.columns).index("verdict") + 1
    if "verdict" in frame.columns
    else len(frame.columns)
  )
  found = [beyond_band(r) for r in records]
  missing = numpy.array([m is None for m in found], bool)
  floats = numpy.array([0.0 if m is None else m for m in found], float)
  frame.insert(at, "beyond band", pandas.arrays.FloatingArray(floats, missing))
  words = [rows_cell(r.prediction) for r in records]
  frame.insert(at + 1, "worst row", pandas.Series(words, dtype=str))
  return frame
