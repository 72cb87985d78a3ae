"""The sweep as one self-contained HTML page (`--format=html`).

One file with no outside references (styles inline, the plot as a
`data:image/png;base64` URI), for a CI job to keep as an artifact and a
person to open in a browser: what was swept, the row-0 error plot (`plot`,
when matplotlib is installed; the page says so when it is not) first, for
who would rather look than read, then the explanation
(`explain_text.render_explanation`), the sweep table with every column
(`tables.cells`) and the dot-site table. Every text is
HTML-escaped. Imports no matplotlib itself.

Private in intent: use the package, `hloprobe.pictures`.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence

from hloprobe.numerics import CHANGED
from hloprobe.report import (
  DEFAULT_COLUMNS,
  TABLE_COLUMNS,
  render_explanation,
)
from hloprobe.report import (
  cells as tables_cells,
)

__all__ = ["render_html"]

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em 2em;
       color: #1b1b1b; max-width: 110em; }
h1 { font-size: 1.5em; margin-bottom: .2em; }
h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.meta { color: #555; }
pre { background: #f6f8fa; padding: .8em 1em; overflow-x: auto;
      font-size: 13px; line-height: 1.35; }
img { max-width: 100%; height: auto; border: 1px solid #ddd; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 12.5px; }
th, td { border: 1px solid #d0d7de; padding: 2px 6px; text-align: left;
         white-space: nowrap; vertical-align: top; }
th { background: #f0f3f6; position: sticky; top: 0; }
tr.explained td { background: #fff4e5; }
tr.unexplained td, tr.failed td { background: #fde8e8; }
"""


def _row_class(verdict: str, status: str) -> str:
  if status != "ok":
    return "failed"
  if verdict.startswith("explained by"):
    return "explained"
  if verdict.startswith(CHANGED):  # numerics.made: "XLA changed the math"
    return "unexplained"
  return "unexplained" if verdict == "unexplained" else ""


def _table(headers: list[str], rows: list[list[str]]) -> str:
  """An HTML table; sweep rows are tinted by verdict and status."""
  col = {h: i for i, h in enumerate(headers)}
  out = ['<div class="scroll"><table>', "<thead><tr>"]
  out += [f"<th>{html.escape(h)}</th>" for h in headers]
  out.append("</tr></thead><tbody>")
  for row in rows:
    kind = ""
    if "verdict" in col and "status" in col:
      kind = _row_class(row[col["verdict"]], row[col["status"]])
    attr = f' class="{kind}"' if kind else ""
    cells = "".join(f"<td>{html.escape(c)}</td>" for c in row)
    out.append(f"<tr{attr}>{cells}</tr>")
  out.append("</tbody></table></div>")
  return "\n".join(out)


def _story_first(headers: list[str], rows: list[list[str]]):
  """The first screen's columns (`tables.DEFAULT_COLUMNS`) first, in its
  order, then the others: fates and verdict without scrolling."""
  header_of = dict(TABLE_COLUMNS)
  first = [header_of[k] for k in DEFAULT_COLUMNS]
  order = [h for h in first if h in headers]
  order += [h for h in headers if h not in order]
  keep = [headers.index(h) for h in order]
  return order, [[row[i] for i in keep] for row in rows]


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


def _figure(png: bytes | None, why_not: str | None) -> str:
  if png is None:
    return f"<p><em>No plot: {html.escape(why_not or 'not drawn')}</em></p>"
  data = base64.b64encode(png).decode("ascii")
  return (
    '<img alt="|row 0 - float64 row 0| against batch size, per target '
    f'and precision" src="data:image/png;base64,{data}">'
  )


def render_html(
  results: Sequence,
  explanations: Sequence,
  versions: dict[str, str],
  png: bytes | None = None,
  why_no_png: str | None = None,
) -> str:
  """The report page, as text.

  Args:
    results: a sweep's `records.ConfigResult`s (at least one).
    explanations: `explain.explain_results(results)`'s records.
    versions: {"jax": ..., "jaxlib": ...}, shown in the header.
    png: the row-0 error plot (`plot.row0_png`), embedded; or None.
    why_no_png: shown instead of the plot when `png` is None (e.g.
      "matplotlib is not installed").

  Returns:
    An HTML5 document; its sweep table has one <tr> per result in
    <tbody>, in the order given.
  """
  headers, rows = _story_first(*tables_cells(list(results)))
  site_headers, site_rows = tables_cells(list(results), sites=True)
  cases = dict.fromkeys(r.config.case for r in results)
  title = f"hloprobe: {', '.join(cases)}"
  version_words = ", ".join(f"{k} {v}" for k, v in versions.items())
  return "\n".join(
    [
      "<!DOCTYPE html>",
      '<html lang="en"><head><meta charset="utf-8">',
      f"<title>{html.escape(title)}</title>",
      f"<style>{_STYLE}</style></head><body>",
      f"<h1>{html.escape(title)}</h1>",
      f'<p class="meta">{html.escape(_swept(results))}<br>'
      f"{html.escape(version_words)}</p>",
      "<h2>Row 0's error against batch size</h2>",
      _figure(png, why_no_png),
      "<h2>Why row 0 depends on batch size and precision</h2>",
      f"<pre>{html.escape(render_explanation(explanations))}</pre>",
      "<h2>Configs</h2>",
      _table(headers, rows),
      "<h2>Contraction sites</h2>",
      "<details><summary>one row per contraction site per config</summary>",
      _table(site_headers, site_rows),
      "</details>",
      "</body></html>",
      "",
    ]
  )
