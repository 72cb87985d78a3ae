"""`Results`: a sweep's records with their table, DataFrame and HTML forms.

Private in intent: use the package, `hloprobe.api`.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Iterator

from hloprobe.records import ConfigResult
from hloprobe.report import render, table_values

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
  """

  records: tuple[ConfigResult, ...]
  explanations: tuple = ()
  text: str = ""

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
    `pandas.DataFrame` (`report.table_values`): text columns (case,
    target, precision, fates, algorithms, verdict, status) plain `str`,
    number columns numbers from the records, unrounded (n, ULPs and the
    top site as nullable integers, "Int64"; errors in output units and
    seconds as float64, NaN where the table says "n/a"); "pred row0 band"
    is two columns, "pred row0" and "pred row0 tolerance".

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
    headers, rows = table_values(self.records)
    frame = pandas.DataFrame(rows, columns=headers)
    for i, header in enumerate(headers):
      values = [row[i] for row in rows if row[i] is not None]
      if any(isinstance(v, str) for v in values):
        continue  # a text column
      whole = values and all(isinstance(v, int) for v in values)
      frame[header] = frame[header].astype("Int64" if whole else "float64")
    return frame

  def _repr_html_(self) -> str:
    """A notebook's view: explain's words (if any), then the sweep table as
    the HTML report shows it (`pictures.html_table`: sortable, filterable,
    coloured by how far each config strays beyond its band)."""
    from hloprobe.pictures import html_table

    words = f"<pre>{html.escape(self.text)}</pre>" if self.explanations else ""
    return words + html_table(self.records)
