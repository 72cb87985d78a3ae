"""What `hloprobe sweep` and `hloprobe merge` print once the sweep is done,
and where: the table (or the JSON document, or the HTML page the caller
made), the findings by cause (a table only), the contraction-site table
(--sites), the cases' notes and the stage seconds (--timings), each on
stdout, but the notes and the seconds on stderr beside JSON.

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hloprobe.records import ConfigResult
from hloprobe.report.explain_answer import cause_lines
from hloprobe.report.tables import render, render_sites
from hloprobe.report.timings import render_timings
from hloprobe.verify import find_findings

__all__ = ["FINDINGS_TITLE", "SweepText", "sweep_text"]

FINDINGS_TITLE = (
  "Findings by cause, worst first (`hloprobe explain` for the fix):"
)


@dataclasses.dataclass(frozen=True, slots=True)
class SweepText:
  """A finished sweep's text, by stream.

  Attributes:
    out: what goes to stdout (printed with one newline after it).
    err: what goes to stderr (likewise), or None for nothing.
  """

  out: str
  err: str | None = None


def sweep_text(
  results: Sequence[ConfigResult],
  fmt: str,
  versions: dict[str, str],
  *,
  columns: Sequence[str] | None = None,
  wide: bool = False,
  host=None,
  sites: bool = False,
  timings: bool = False,
  notes: Sequence[str] = (),
  page: str | None = None,
) -> SweepText:
  """A finished sweep as `hloprobe sweep` prints it.

  Args:
    results: the sweep's records, in its order.
    fmt: --format: "table", "markdown", "json" or "html".
    versions, columns, wide, host: as `tables.render`.
    sites: --sites: the contraction-site table after the table (table and
      markdown only).
    timings: --timings: the stage seconds (`timings.render_timings`) last.
    notes: the cases' notes ("<case>: <note>"), after the site table;
      none with html.
    page: with fmt "html", the HTML page (`pictures.Outputs.page`) printed
      instead of the table.

  Raises:
    ValueError: an unknown format, or "html" without `page`.
    InvalidArgumentError: an unknown column.
  """
  if fmt == "html":
    if page is None:
      raise ValueError("fmt 'html' needs the page")
    out = [page]
  else:
    out = [render(list(results), fmt, versions, columns, wide, host)]
  err = []
  if fmt == "table":  # the findings as explain groups them, one per cause
    found = cause_lines(find_findings(results), FINDINGS_TITLE)
    if found:
      out.append("\n" + "\n".join(found))
  if sites and fmt not in ("json", "html"):
    out.append("\n" + render_sites(list(results), fmt))
  aside = err if fmt == "json" else out
  if notes and fmt != "html":  # a module file's case: inputs, precision
    aside.append("\n" + "\n".join(notes))
  if timings:
    aside.append("\n" + render_timings(list(results), fmt))
  return SweepText("\n".join(out), "\n".join(err) if err else None)
