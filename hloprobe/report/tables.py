"""Tables for people: the sweep table, its first screen and the site table.

Holds `table`, the one table layout (tabulate) the other tables use too. It
formats what the records already say; it computes nothing new. Missing
values render as "n/a"; `render` gives "json" to `results_json`.

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import collections
import dataclasses
import textwrap
from collections.abc import Sequence

from tabulate import tabulate

from hloprobe.errors import InvalidArgumentError
from hloprobe.records import ConfigResult
from hloprobe.report.files import RESULTS_STREAM
from hloprobe.report.results_schema import dumps_json, results_json
from hloprobe.report.site_rows import SITE_HEADERS as _SITE_HEADERS
from hloprobe.report.site_rows import effective_cell, num, site_rows
from hloprobe.report.site_words import failure_words
from hloprobe.report.verdict_words import (
  config_words,
  leaf_verdicts,
  made_words,
  row_words,
)
from hloprobe.sites import fate_summary

__all__ = [
  "DEFAULT_COLUMNS",
  "OUTPUT_FORMS",
  "OutputForms",
  "REPORT_FORMATS",
  "TABLE_COLUMNS",
  "TERMINAL_WIDTH",
  "cells",
  "render",
  "render_sites",
  "table",
]

REPORT_FORMATS = ("table", "json", "markdown")
# The sweep table's columns as (key, header); `--columns=` takes the keys.
TABLE_COLUMNS = (
  ("experiment", "experiment"),
  ("case", "case"),
  ("target", "target"),
  ("n", "n"),
  ("precision", "precision"),
  ("row0", "row0"),
  ("err", "abs err row0"),
  ("max_rel", "max rel"),
  ("ulp", "ULP vs n=1"),
  ("pred_band", "pred row0 band"),
  ("pred_err", "pred abs err row0"),
  ("made_err", "made abs err row0"),
  ("noise", "noise floor"),
  ("top_site", "top site"),
  ("verdict", "verdict"),
  ("fates", "site fates"),
  ("algorithms", "effective algorithms"),
  ("compile_s", "compile s"),
  ("run_s", "run s"),
  ("status", "status"),
)
_TABLE_HEADERS = tuple(header for _, header in TABLE_COLUMNS)
# The first screen, in the order of the story a row tells. experiment and
# status show only where they say something (several experiments; a failed
# config, whose error is written under the table). Without them a row fits
# TERMINAL_WIDTH (long cells wrap); a status column may cost a few more.
DEFAULT_COLUMNS = (
  "experiment",
  "case",
  "target",
  "n",
  "precision",
  "fates",
  "algorithms",
  "err",
  "pred_err",
  "made_err",
  "verdict",
  "status",
)
TERMINAL_WIDTH = 120


@dataclasses.dataclass(frozen=True, slots=True)
class OutputForms:
  """What report can write, for the command line's output flags
  (--format, --columns, --output_dir) and the pictures that repeat the
  table.

  Attributes:
    formats: the text formats `render` takes ("table", "json", "markdown").
    columns: the sweep table's columns as (key, header); `--columns=` takes
      the keys.
    default_columns: the first screen's keys, in the order of the story a
      row tells.
    terminal_width: characters the first screen's rows fit in.
    results_stream: the file name of the per-config JSON lines written
      under an output folder as configs finish.
  """

  formats: tuple[str, ...]
  columns: tuple[tuple[str, str], ...]
  default_columns: tuple[str, ...]
  terminal_width: int
  results_stream: str

  def check_columns(self, columns: Sequence[str]) -> tuple[str, ...]:
    """`columns` as a tuple, each a key of `columns`.

    Raises:
      InvalidArgumentError: an unknown or empty column name.
    """
    known = [key for key, _ in self.columns]
    bad = [c for c in columns if c not in known]
    if bad or not columns:
      raise InvalidArgumentError(
        f"unknown --columns {', '.join(bad) or '(none)'}; choose from "
        f"{', '.join(known)}"
      )
    return tuple(columns)


OUTPUT_FORMS = OutputForms(
  REPORT_FORMATS,
  TABLE_COLUMNS,
  DEFAULT_COLUMNS,
  TERMINAL_WIDTH,
  RESULTS_STREAM,
)
# Columns the first screen may wrap onto more lines to fit TERMINAL_WIDTH.
_WRAPPABLE_INDEX = tuple(
  i
  for i, (key, _) in enumerate(TABLE_COLUMNS)
  if key in ("fates", "algorithms", "verdict")
)


def _row(r: ConfigResult) -> list[str]:
  c, comp, run = r.config, r.compilation, r.execution
  s = run and run.stats
  fates = comp.fates if comp else ()
  return [
    c.experiment,
    c.case,
    c.target.name,
    str(c.n),
    c.precision,
    _row0_cell(s),
    num(s and s.row0_abs, ".2e"),
    num(s and s.max_rel, ".2e"),
    num(run and run.ulp_vs_n1, "d"),
    *_prediction_cells(r),
    fate_summary(list(fates)) if fates else "n/a",
    _algorithm_summary(fates),
    num(comp and comp.compile_s, ".2f"),
    num(run and run.run_s, ".3f"),
    _status_cell(r, error=True),
  ]


def _status_cell(r: ConfigResult, error: bool) -> str:
  """The status cell: ok ("ok, see notes" where hloprobe changed the
  compile to get it through), or FAILED (stage) and, with `error`, the
  error."""
  if r.ok:
    return "ok, see notes" if _compile_notes(r) else "ok"
  f = r.failure
  return (
    f"FAILED ({f.stage}): {failure_words(f)}"
    if error
    else f"FAILED ({f.stage})"
  )


def _compile_notes(r: ConfigResult) -> tuple[str, ...]:
  return r.compilation.compile_notes if r.compilation else ()


def _prediction_cells(r: ConfigResult) -> list[str]:
  """Predicted row 0 +- tolerance (the kernel model's where a site is a
  "bit-exact model", `Prediction.kernel`), its error ("what the program
  asks"), the executed module's error ("what XLA made"), noise floor, top
  site, verdict ("not predicted" where the prediction failed, told under
  the table)."""
  p = r.prediction
  made = _made_cell(r.made)
  if p is None:
    verdict = config_words(r) or (
      "not predicted" if r.prediction_error else "n/a"
    )
    return ["n/a"] * 2 + [made] + ["n/a"] * 2 + [verdict]
  band = f"{p.stats.row0:.7g}±{p.tolerance_abs:.1e}"
  if p.kernel is not None and p.kernel.row0 is not None:  # bit-exact sites
    band = f"{p.kernel.row0:.7g}±{p.tolerance_abs:.1e} (kernel model)"
  return [
    band,
    f"{p.stats.row0_abs:.2e}",
    made,
    f"{p.noise.row0_abs:.2e}",
    num(p.top_site, "d"),
    _verdict_cell(r),
  ]


def _made_cell(made) -> str:
  """The executed module's |row 0 - f64| at the effective algorithms;
  "not executed" where it could not be run, "n/a" where not checked."""
  if made is None:
    return "n/a"
  if made.stats is None:
    return "not executed"
  return f"{made.stats.row0_abs:.2e}"


def _row0_cell(s) -> str:
  """Row 0's first value, after its leaf's name where there are several."""
  if s is None:
    return "n/a"
  return f"{s.leaf} {s.row0:.7g}" if s.leaf else f"{s.row0:.7g}"


def _verdict_cell(r: ConfigResult) -> str:
  """The verdict (`config_words`: "XLA changed the math" leads);
  every leaf's where several, named; then worst rows that stand out (`WorstRow.stands_out`)."""
  p = r.prediction
  rows = [row_words(w) for w in p.rows if w is not None and w.stands_out]
  if len(p.leaves) <= 1 or (r.made is not None and r.made.changed):
    return "; ".join([config_words(r), *rows])
  text = "; ".join(f"{leaf}: {v}" for leaf, v in leaf_verdicts(p))
  made = made_words(r.made) if r.made is not None else None
  extra = [made] if made else []
  return "; ".join([text, *extra, *rows])


def _algorithm_summary(fates) -> str:
  """E.g. "TF32_TF32_F32 x3, unknown x1" (see `site_rows.effective_cell`)."""
  counts = collections.Counter(map(effective_cell, fates))
  return ", ".join(f"{name} x{n}" for name, n in counts.items()) or "n/a"


def render(
  results: list[ConfigResult],
  fmt: str,
  versions: dict[str, str],
  columns: Sequence[str] | None = None,
  wide: bool = False,
  host=None,
) -> str:
  """Renders results as "table" (plain), "markdown" (GitHub) or "json".

  Args:
    results: the sweep's records.
    fmt: "table", "markdown" or "json".
    versions: {"jax": ..., "jaxlib": ...} for the JSON document.
    host: the `runtime.host.HostCpu` for the JSON document, or None.
    columns: keys of `TABLE_COLUMNS` to show, in this order. None: for
      "table", the first screen (`DEFAULT_COLUMNS`, long cells wrapped so a
      row fits `TERMINAL_WIDTH` characters) unless `wide`; for "markdown",
      every column. JSON always has everything.
    wide: with columns None, a "table" of every column, unwrapped.

  Raises:
    ValueError: unknown format.
    InvalidArgumentError: an unknown column.
  """
  if fmt not in REPORT_FORMATS:
    raise ValueError(
      f"unknown --format {fmt!r}; choose from {', '.join(REPORT_FORMATS)}"
    )
  if fmt == "json":
    return dumps_json(results_json(results, versions, host))
  rows = [_row(r) for r in results]
  if columns is None and fmt == "table" and not wide:
    return _first_screen(results, rows)
  if columns is None:
    headers, rows = cells(results)
    return table(rows, headers, fmt) + _notes_text(results)
  keep = [_COLUMN_INDEX[c] for c in OUTPUT_FORMS.check_columns(columns)]
  return table(
    [[row[i] for i in keep] for row in rows],
    [_TABLE_HEADERS[i] for i in keep],
    fmt,
  ) + _notes_text(results)


_COLUMN_INDEX = {key: i for i, (key, _) in enumerate(TABLE_COLUMNS)}


def _first_screen(results, rows: list[list[str]]) -> str:
  """The default columns, the context ones only where they vary, wrapped
  to fit TERMINAL_WIDTH; a failed config's status is "FAILED (stage)" and
  its error is written under the table."""
  status = _COLUMN_INDEX["status"]
  rows = [
    row[:status] + [_status_cell(r, error=False)] + row[status + 1 :]
    for r, row in zip(results, rows)
  ]
  shown = {
    "experiment": len({row[_COLUMN_INDEX["experiment"]] for row in rows}) > 1,
    "status": any(row[_COLUMN_INDEX["status"]] != "ok" for row in rows),
  }
  keep = [_COLUMN_INDEX[c] for c in DEFAULT_COLUMNS if shown.get(c, True)]
  columns = [[row[i] for row in rows] for i in keep]
  headers = [_TABLE_HEADERS[i] for i in keep]
  limits = [_width(c, h) for c, h in zip(columns, headers)]
  wrappable = [k for k, i in enumerate(keep) if i in _WRAPPABLE_INDEX]
  while sum(limits) + 2 * (len(limits) - 1) > TERMINAL_WIDTH:
    k = max(wrappable, key=lambda k: limits[k], default=None)
    if k is None:
      break
    narrower = _width([_wrap(c, limits[k] - 1) for c in columns[k]], headers[k])
    if narrower >= limits[k]:  # a word as wide as the column: stop there
      wrappable.remove(k)
    limits[k] = min(narrower, limits[k])
  wrapped = [[_wrap(c, w) for c in col] for col, w in zip(columns, limits)]
  headers = [_wrap(h, w - 2) for h, w in zip(headers, limits)]
  errors = [
    textwrap.fill(
      f"{r.config.label()}: {r.failure.stage} failed: {failure_words(r.failure)}",
      TERMINAL_WIDTH,
      initial_indent="  ",
      subsequent_indent="    ",
    )
    for r in results
    if not r.ok
  ]
  text = table(list(zip(*wrapped)), headers, "table")
  return "\n".join(
    [text] + (["", "failed:"] + errors if errors else [])
  ) + _notes_text(results)


def _notes_text(results) -> str:
  """ "\n\nnotes:\n  ..." for the notes of `_notes`, or "" when none."""
  notes = [
    textwrap.fill(
      f"{'; '.join(labels)}: {note}",
      TERMINAL_WIDTH,
      initial_indent="  ",
      subsequent_indent="    ",
    )
    for note, labels in _notes(results).items()
  ]
  return "\n\nnotes:\n" + "\n".join(notes) if notes else ""


def _notes(results) -> dict[str, list[str]]:
  """Each note under the table (a compile hloprobe changed, a prediction
  that failed) with the labels of the configs it is about, in order."""
  notes: dict[str, list[str]] = {}
  for r in results:
    said = _compile_notes(r) + (
      (f"not predicted: {r.prediction_error}",) if r.prediction_error else ()
    )
    for note in said:
      notes.setdefault(note, []).append(r.config.label())
  return notes


def _wrap(text: str, width: int) -> str:
  """Words of `text` on lines of at most `width` (a longer word alone)."""
  return "\n".join(textwrap.wrap(text, width, break_long_words=False)) or text


def _width(cells: list[str], header: str) -> int:
  """A "simple" tabulate column's width: its longest line, or its header's
  longest word and 2 (tabulate's MIN_PADDING) if that is longer."""
  return max(
    [len(word) + 2 for word in header.split()]
    + [len(line) for c in cells for line in c.splitlines()]
  )


def table(rows, headers, fmt: str = "table") -> str:
  """hloprobe's one table layout: tabulate "simple" for `fmt` "table",
  GitHub markdown for "markdown"; cells are shown as given (no number
  parsing)."""
  tablefmt = "github" if fmt == "markdown" else "simple"
  return tabulate(
    rows, headers=headers, tablefmt=tablefmt, disable_numparse=True
  )


def cells(
  results: list[ConfigResult], sites: bool = False
) -> tuple[list[str], list[list[str]]]:
  """(headers, rows) of the full sweep table (every column) or, with
  `sites`, of the dot-site table; the experiment column only when there is
  a choice. For renderers of other formats (the HTML report)."""
  rows = (
    [row for r in results for row in site_rows(r)]
    if sites
    else [_row(r) for r in results]
  )
  headers = list(_SITE_HEADERS if sites else _TABLE_HEADERS)
  first = results[0].config.experiment if results else None
  if all(r.config.experiment == first for r in results):
    return headers[1:], [row[1:] for row in rows]
  return headers, rows


def render_sites(results: list[ConfigResult], fmt: str) -> str:
  """One row per contraction site per config ("table" or "markdown")."""
  headers, rows = cells(results, sites=True)
  return table(rows, headers, fmt)
