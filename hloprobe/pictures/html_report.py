"""The sweep as one self-contained HTML page (`--format=html`), from a
Jinja2 template.

One file with no outside references (styles and the table script inline,
the plot as a `data:image/png;base64` URI), for a CI job to keep as an
artifact and a person to open in a browser, offline: what was swept,
then first `explain`'s answer (the lines `explain` prints first: the
worst finding, the fixes that passed with their cost and `hloprobe
verify` command; a `sweep`'s page says explain computes them), the row-0
error plot (`plot`, when matplotlib is installed; the page says so when
it is not), the explanation, the sweep table with every column (the first
screen's first) and the contraction-site table (their words:
`report.page_words`), each
sortable (click a header) and filterable (the box above it: rows holding
every word typed), whole, in a container that scrolls. Each config's row
is coloured by how far it strays beyond its band (`severity`: 1x pale to
1000x and more dark), named in its "beyond band" column, with its worst
row (`report.rows_cell`) beside the verdict.

The templates are package data, `hloprobe/pictures/templates/`:
report.html.j2 (the page), table.html.j2 (one table: the macro),
fragment.html.j2 (one table alone, `html_table`), page.css,
table.css and table.js (inlined). Jinja2 escapes every text
(`autoescape`); its loader reads the templates with the package
(`jinja2.PackageLoader`), so an installed hloprobe finds them. Imports no
matplotlib itself.

Private in intent: use the package, `hloprobe.pictures`.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import math
from collections.abc import Sequence

from hloprobe.numerics import NOISE_FACTOR
from hloprobe.pictures import severity
from hloprobe.report import OUTPUT_FORMS, page_words, rows_cell

__all__ = [
  "BEYOND_HEADER",
  "WORST_ROW_HEADER",
  "html_table",
  "render_html",
]

BEYOND_HEADER = "beyond band"
FINDING_HEADER = "finding"
WORST_ROW_HEADER = "worst row"
_TITLES = {
  BEYOND_HEADER: (
    f"the largest of: |row 0 error| / ({NOISE_FACTOR:g} x its f32 noise "
    "floor), the worst row's own, and where XLA changed the math its "
    "deviation / its band; the row's colour, 1x pale to 1000x dark"
  ),
  WORST_ROW_HEADER: "every row judged as row 0 is, each against its own floor",
  FINDING_HEADER: "the finding (cause) of the answer's table this config "
  "shows; none: within its band",
}
# The legend's swatches: distances beyond the band.
_SWATCHES = (2.0, 10.0, 100.0, severity.DARK_AT)


@dataclasses.dataclass(frozen=True, slots=True)
class Header:
  """A column's header: its text and the tooltip explaining it, if any."""

  text: str
  title: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Cell:
  """A cell: its text and, for a number, the value sorted on (a float's
  repr; None for text and "n/a")."""

  text: str
  sort: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Row:
  """A <tr>: its cells, m (`severity.beyond_band`, dimensionless; None
  where not compared), its class ("failed" or "") and inline colours."""

  cells: tuple[Cell, ...]
  beyond: float | None = None
  kind: str = ""
  style: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Table:
  """What table.html.j2's macro draws: `id` names the table element (its
  filter box is `<id>-filter`, its row count `<id>-shown`)."""

  id: str
  caption: str
  headers: tuple[Header, ...]
  rows: tuple[Row, ...]
  legend: str = ""
  swatches: tuple[tuple[str, str, str], ...] = ()


def _environment():
  """A Jinja2 environment on the package's templates, escaping all text."""
  import jinja2

  return jinja2.Environment(
    loader=jinja2.PackageLoader("hloprobe.pictures", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
  )


def _sort_value(text: str) -> str | None:
  """A number's sort key (the cell is a float as tables write it, e.g.
  "6.10e-01", "2"), else None."""
  try:
    value = float(text)
  except ValueError:
    return None
  return repr(value) if math.isfinite(value) else None


def _story_first(headers: list[str], rows: list[list[str]]):
  """The first screen's columns (`report.OUTPUT_FORMS.default_columns`) first, in its
  order but the verdict right after the precision (so that it stays on
  screen at 1400 px, before the long fates and algorithms cells), then the
  others."""
  header_of = dict(OUTPUT_FORMS.columns)
  first = [header_of[k] for k in OUTPUT_FORMS.default_columns]
  if "verdict" in first and "precision" in first:
    first.remove("verdict")
    first.insert(first.index("precision") + 1, "verdict")
  order = [h for h in first if h in headers]
  order += [h for h in headers if h not in order]
  keep = [headers.index(h) for h in order]
  return order, [[row[i] for i in keep] for row in rows]


def _worst_rows(r) -> str:
  """Every judged leaf's worst row in words; "n/a" without a prediction."""
  return rows_cell(r.prediction)


def _beyond_sort(m: float | None) -> str | None:
  if m is None:
    return None
  return repr(min(m, 1e308))  # inf sorts as the largest number


def _config_rows(
  results: Sequence,
  cells: tuple[list[str], list[list[str]]],
  causes: Sequence[str] | None = None,
) -> tuple[list[Header], list[Row]]:
  """The sweep table: story columns first, then "beyond band" and "worst
  row" after the verdict; each row coloured by `severity.shade`. With
  `causes` (each result's finding number, `report.page_words`' answer's
  `causes`), a
  "finding" column first and the rows grouped by finding (the findings in
  their order, then the configs with none; sweep order within each).
  `cells`: the sweep table's (headers, rows), `report.page_words`'."""
  headers, rows = _story_first(*cells)
  at = headers.index("verdict") + 1 if "verdict" in headers else len(headers)
  headers[at:at] = [BEYOND_HEADER, WORST_ROW_HEADER]
  if causes is not None:
    headers.insert(0, FINDING_HEADER)
    order = sorted(
      range(len(results)),
      key=lambda i: (not causes[i], int(causes[i] or 0), i),
    )
    results = [results[i] for i in order]
    rows = [rows[i] for i in order]
    causes = [causes[i] for i in order]
  out = []
  for i, (r, row) in enumerate(zip(results, rows)):
    m = severity.beyond_band(r)
    shown = [Cell(text, _sort_value(text)) for text in row]
    shown[at:at] = [
      Cell(severity.beyond_words(m), _beyond_sort(m)),
      Cell(_worst_rows(r)),
    ]
    if causes is not None:
      shown.insert(0, Cell(causes[i] or "none", causes[i] or None))
    colours = severity.shade(m)
    style = ""
    if colours:
      style = f"background-color: {colours[0]}; color: {colours[1]}"
    kind = "" if r.ok else "failed"
    out.append(Row(tuple(shown), m, kind, style))
  return [Header(h, _TITLES.get(h)) for h in headers], out


def _swatches() -> tuple[tuple[str, str, str], ...]:
  found = []
  for m in _SWATCHES:
    back, fore = severity.shade(m)
    found.append(
      (f"{m:.0f}x" + ("+" if m == severity.DARK_AT else ""), back, fore)
    )
  return tuple(found)


def _configs_table(
  results: Sequence,
  cells: tuple[list[str], list[list[str]]],
  table_id: str = "configs",
  causes: Sequence[str] | None = None,
) -> Table:
  """The sweep table of `results` (`records.ConfigResult`s; `cells`, its
  words), one row per result, in the order given or grouped by `causes`
  (`_config_rows`)."""
  headers, rows = _config_rows(results, cells, causes)
  return Table(
    table_id,
    "the configs",
    tuple(headers),
    tuple(rows),
    legend="colour: distance beyond the band, log scale:",
    swatches=_swatches(),
  )


def _sites_table(cells: tuple[list[str], list[list[str]]]) -> Table:
  headers, rows = cells
  return Table(
    "sites",
    "the contraction sites",
    tuple(Header(h) for h in headers),
    tuple(
      Row(tuple(Cell(text, _sort_value(text)) for text in row)) for row in rows
    ),
  )


def _swept(results: Sequence) -> str:
  """One line: what the sweep covered."""
  parts = []
  for name, values in (
    ("case", [r.config.case for r in results]),
    ("targets", [r.config.target.name for r in results]),
    ("batch sizes", [str(r.config.n) for r in results]),
    ("precisions", [r.config.precision for r in results]),
    ("experiments", [r.config.experiment for r in results]),
  ):
    parts.append(f"{name}: {', '.join(dict.fromkeys(values))}")
  return "; ".join(parts)


def render_html(
  results: Sequence,
  explanations: Sequence,
  versions: dict[str, str],
  png: bytes | None = None,
  why_no_png: str | None = None,
  answer=None,
) -> str:
  """The report page, as text.

  Args:
    results: a sweep's `records.ConfigResult`s (at least one).
    explanations: `explain.explain_results(results)`'s records.
    versions: {"jax": ..., "jaxlib": ...}, shown in the header.
    png: the row-0 error plot (`plot.row0_png`), embedded; or None.
    why_no_png: shown instead of the plot when `png` is None (e.g.
      "matplotlib is not installed").
    answer: `explain`'s answer (`report.Answer`), which opens the page as
      the finding table and what to do (`report.page_words`), the
      configs table grouped by its findings; or None where none was
      computed (the page says `hloprobe explain` computes them).

  Returns:
    An HTML5 document; its sweep table (id "configs") has one <tr> per
    result in <tbody>, in the order given, with `data-beyond` (m, see
    `severity`) where known; the contraction-site table has id "sites".
  """
  cases = dict.fromkeys(r.config.case for r in results)
  template = _environment().get_template("report.html.j2")
  words = page_words(results, explanations, answer)
  view = words.answer
  return template.render(
    title=f"hloprobe: {', '.join(cases)}",
    swept=_swept(results),
    answer=view,
    versions=", ".join(f"{k} {v}" for k, v in versions.items()),
    png=base64.b64encode(png).decode("ascii") if png is not None else None,
    why_no_png=why_no_png or "not drawn",
    explanation=words.explanation,
    configs=_configs_table(
      results, words.configs, causes=None if view is None else view.causes
    ),
    sites=_sites_table(words.sites),
  )


def html_table(results: Sequence, answer=None) -> str:
  """The sweep table alone as an HTML fragment (a <div> with its style and
  script, sortable, filterable and coloured as in the page), e.g. for a
  notebook's `_repr_html_`. Its ids are made from its contents, so several
  fragments on one page keep apart (the same results twice share them:
  the script binds each table once).

  Args:
    results: `records.ConfigResult`s, one row each, in the order given
      (grouped by finding when `answer` is given).
    answer: a `report.Answer`: the finding table comes first and the
      configs table groups its rows by finding; or None (the table alone).
  """
  labels = "\n".join(r.config.label() for r in results)
  digest = hashlib.sha256(labels.encode()).hexdigest()[:10]
  template = _environment().get_template("fragment.html.j2")
  words = page_words(results, answer=answer)
  view = words.answer
  causes = None if view is None else view.causes
  return template.render(
    configs=_configs_table(
      results, words.configs, f"hloprobe-{digest}", causes
    ),
    answer=view,
  )
