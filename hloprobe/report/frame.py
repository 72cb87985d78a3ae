"""The sweep table as values: what a DataFrame holds (`Results.to_dataframe`).

`table_values` gives the full sweep table's columns (`tables.cells`: the
experiment column only where there is a choice), with its text columns
as plain `str` (a precision is its name, not the `Precision` enum) and its
number columns as numbers taken from the records, unrounded: `int` (n,
ULPs, top site) or `float` (errors in output units, seconds), None where
the table says "n/a", "not executed" or "not predicted" (the text cells
say why). The table's "pred row0 band" cell, "0.0819783±4.0e-05", is two
numbers here, "pred row0" and "pred row0 tolerance" (output units), and
a text column "pred row0 by": "kernel model" where the cell reads
"(kernel model)" (row 0 with the bit-exact sites by the kernel model,
`Prediction.kernel`, the number the cell shows), "emulation" where it is
the emulation's row 0, "n/a" where nothing was predicted.

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence

from hloprobe.records import ConfigResult
from hloprobe.report.tables import TABLE_COLUMNS, cells

__all__ = ["table_values"]

_BAND = dict(TABLE_COLUMNS)["pred_band"]
_BAND_PARTS = ("pred row0", "pred row0 tolerance", "pred row0 by")


def _run_stats(r: ConfigResult):
  return r.execution.stats if r.execution is not None else None


def _predicted(r: ConfigResult, read: Callable):
  return read(r.prediction) if r.prediction is not None else None


def _made_err(r: ConfigResult) -> float | None:
  made = r.made
  if made is None or made.stats is None:
    return None
  return made.stats.row0_abs


def _stat(name: str) -> Callable:
  def read(r: ConfigResult):
    s = _run_stats(r)
    return getattr(s, name) if s is not None else None

  return read


# Column key -> its value in a result (None: "n/a" in the table).
_NUMBERS: dict[str, Callable[[ConfigResult], int | float | None]] = {
  "n": lambda r: r.config.n,
  "row0": _stat("row0"),
  "err": _stat("row0_abs"),
  "max_rel": _stat("max_rel"),
  "ulp": lambda r: r.execution.ulp_vs_n1 if r.execution else None,
  "pred_err": lambda r: _predicted(r, lambda p: p.stats.row0_abs),
  "made_err": _made_err,
  "noise": lambda r: _predicted(r, lambda p: p.noise.row0_abs),
  "top_site": lambda r: _predicted(r, lambda p: p.top_site),
  "compile_s": lambda r: r.compilation.compile_s if r.compilation else None,
  "run_s": lambda r: r.execution.run_s if r.execution else None,
}
_KEY_OF = {header: key for key, header in TABLE_COLUMNS}


def _plain(value) -> int | float | None:
  """A Python int or float (numpy's scalars too), or None."""
  if value is None:
    return None
  return int(value) if isinstance(value, numbers.Integral) else float(value)


def _band(r: ConfigResult) -> list[float | str | None]:
  """The band cell's row 0, tolerance and whose row 0 it is, as
  `tables._prediction_cells` reads them."""
  p = r.prediction
  if p is None:
    return [None, None, "n/a"]
  if p.kernel is not None and p.kernel.row0 is not None:
    return [_plain(p.kernel.row0), _plain(p.tolerance_abs), "kernel model"]
  return [_plain(p.stats.row0), _plain(p.tolerance_abs), "emulation"]


def _value(key: str, r: ConfigResult, text: str):
  """The cell of column `key`: a number where the column holds numbers,
  else the table's text as a plain `str`."""
  if key in _NUMBERS:
    return _plain(_NUMBERS[key](r))
  return str(text)


# Columns of whole numbers; the other `_NUMBERS` and the band's first two
# parts are floats, the rest text.
_WHOLE = frozenset({"n", "ulp", "top_site"})
_BAND_KINDS = ("float", "float", "str")


def _kind(header: str) -> str:
  key = _KEY_OF[header]
  if key not in _NUMBERS:
    return "str"
  return "int" if key in _WHOLE else "float"


def table_values(
  results: Sequence[ConfigResult],
) -> tuple[list[str], list[str], list[list[str | int | float | None]]]:
  """(headers, kinds, rows) of the sweep table as values (see the module),
  one row per result in the order given; kinds: per column "int", "float"
  or "str", by column (the same with no rows, or every value None)."""
  headers, text_rows = cells(list(results))
  out_headers: list[str] = []
  kinds: list[str] = []
  for h in headers:
    out_headers += list(_BAND_PARTS) if h == _BAND else [h]
    kinds += list(_BAND_KINDS) if h == _BAND else [_kind(h)]
  rows = []
  for r, texts in zip(results, text_rows):
    row: list[str | int | float | None] = []
    for h, text in zip(headers, texts):
      if h == _BAND:
        row += _band(r)
      else:
        row.append(_value(_KEY_OF[h], r, text))
    rows.append(row)
  return out_headers, kinds, rows
