"""What the command line shows and writes for a finished sweep: the report
(tables from `report.render`, or the HTML page), the files of --output_dir,
--plot and --model_explorer, the progress line and the line naming the
files written. The glue between `cli`, `report`, `plot`, `html_report` and
`model_explorer`. Files are written whole or not at all
(`report.atomic_write`).

Private in intent: use the package, `hloprobe.pictures`.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
import time
from collections.abc import Sequence

from hloprobe.errors import HloprobeError, InvalidArgumentError, write_or_fail
from hloprobe.pictures import html_report, model_explorer, plot
from hloprobe.report import explain_text, timings
from hloprobe.report import render as report
from hloprobe.runtime.host import HostCpu

__all__ = [
  "HTML_NAME",
  "Outputs",
  "check_extras",
  "html_page",
  "missing_extras",
  "progress_printer",
  "show_explanation",
  "show_sweep",
  "write_files",
  "write_html",
  "wrote_line",
  "write_plot",
]

HTML_NAME = "report.html"  # written into --output_dir


@dataclasses.dataclass(frozen=True)
class Outputs:
  """What a sweep command prints and writes, from its flags.

  Attributes:
    fmt: --format: "table", "json", "markdown" or "html".
    columns: --columns (table keys, checked), or None for the default.
    wide: --wide: every table column, unwrapped.
    sites: --sites: one row per dot site after the table.
    timings: --timings: the stage seconds table (stderr with json).
    output_dir: --output_dir, or None.
    plot: --plot, a PNG path, or None.
    model_explorer: --model_explorer, a folder, or None.
  """

  fmt: str = "table"
  columns: Sequence[str] | None = None
  wide: bool = False
  sites: bool = False
  timings: bool = False
  output_dir: str | None = None
  plot: str | None = None
  model_explorer: str | None = None

  @property
  def needs_explanations(self) -> bool:
    """The HTML page, report.html in --output_dir and --plot explain."""
    return bool(self.fmt == "html" or self.output_dir or self.plot)


def missing_extras(plot: bool, explorer: bool) -> list[str]:
  """The optional extras asked for but not installed, as pip words (e.g.
  "hloprobe[plot] (matplotlib)"), so a command can stop before sweeping."""
  wanted = [
    (plot, "matplotlib", "hloprobe[plot] (matplotlib)"),
    (explorer, "model_explorer", "hloprobe[explorer] (ai-edge-model-explorer)"),
  ]
  return [
    words
    for asked, module, words in wanted
    if asked and importlib.util.find_spec(module) is None
  ]


def check_extras(plot: bool, explorer: bool) -> None:
  """An optional extra asked for but missing: say so before sweeping.

  Raises:
    InvalidArgumentError: names the pip words to install.
  """
  missing = missing_extras(plot, explorer)
  if missing:
    raise InvalidArgumentError(
      f"pip install {' '.join(missing)} first (make installs both)"
    )


def _png_or_reason(results, explanations) -> tuple[bytes | None, str | None]:
  """The plot, or why there is none (matplotlib missing)."""
  try:
    return plot.row0_png(results, explanations), None
  except HloprobeError as e:
    return None, str(e)


def html_page(
  results: Sequence, explanations: Sequence, versions: dict[str, str]
) -> str:
  """The self-contained report (`html_report.render_html`), its plot
  embedded when matplotlib is installed (else the page says why not)."""
  png, why = _png_or_reason(results, explanations)
  return html_report.render_html(results, explanations, versions, png, why)


def write_html(
  results: Sequence,
  explanations: Sequence,
  versions: dict[str, str],
  output_dir: str,
) -> list[str]:
  """Writes `<output_dir>/report.html`; returns [its path]."""
  path = os.path.join(output_dir, HTML_NAME)
  report.atomic_write(path, html_page(results, explanations, versions))
  return [path]


def write_plot(
  results: Sequence, explanations: Sequence, path: str
) -> list[str]:
  """Writes the row-0 error plot as a PNG at `path`; returns [path].

  Raises:
    HloprobeError: matplotlib is not installed.
    OSError: the file cannot be written (nothing is left behind).
  """
  report.atomic_write(path, plot.row0_png(results, explanations))
  return [path]


def progress_printer(stream):
  """A `sweep.run_sweep` progress callable drawing one line on `stream`
  ("[12/81] a100 seed_mlp n=3 bfloat16  42 s"), or None when `stream` is
  not a terminal (logs and pipes get no progress)."""
  if not stream.isatty():
    return None
  start = time.monotonic()

  def show(p) -> None:
    if not p.current:
      stream.write("\r\x1b[K")  # done: erase the line
    else:
      took = time.monotonic() - start
      stream.write(f"\r\x1b[K[{p.done}/{p.total}] {p.current}  {took:.0f} s")
    stream.flush()

  return show


def wrote_line(paths: list[str], out: str | None) -> str:
  """E.g. "wrote 28 files (report.html, row0_error.png, results.json) under
  out" ("wrote 1 file ..." for one): what a person opens first, and the
  folder at the end."""
  firsts = [
    os.path.basename(p)
    for p in paths
    if os.path.basename(p) in (HTML_NAME, "results.json") or p.endswith(".png")
  ]
  named = f" ({', '.join(firsts)})" if firsts else ""
  where = out or os.path.dirname(paths[-1]) or os.curdir
  files = "file" if len(paths) == 1 else "files"
  return f"wrote {len(paths)} {files}{named} under {where}"


def show_sweep(
  results: Sequence,
  why: Sequence,
  versions: dict[str, str],
  cpu: HostCpu,
  out: Outputs,
) -> None:
  """Prints a finished sweep and writes --output_dir's and the pictures'
  files (`write_files`).

  `why`: the sweep's explanations; needed when `out.needs_explanations`.
  """
  fmt = out.fmt
  if fmt == "html":
    print(html_page(results, why, versions))
  else:
    print(
      report.render(
        results,
        fmt,
        versions,
        columns=out.columns,
        wide=out.wide,
        host=cpu,
      )
    )
  if out.sites and fmt not in ("json", "html"):
    print()
    print(report.render_sites(results, fmt))
  if out.timings:
    stream = sys.stderr if fmt == "json" else sys.stdout
    print("\n" + timings.render_timings(results, fmt), file=stream)
  write_files(results, why, versions, cpu, out)


def show_explanation(
  results: Sequence,
  explanations: Sequence,
  versions: dict[str, str],
  cpu: HostCpu,
  out: Outputs,
) -> None:
  """Prints `hloprobe explain`'s explanations as text, JSON or the HTML
  page (`out.fmt`), then writes the files asked for (`write_files`)."""
  if out.fmt == "json":
    print(report.dumps_json(explain_text.explanation_json(explanations, cpu)))
  elif out.fmt == "html":
    print(html_page(results, explanations, versions))
  else:
    print(explain_text.render_explanation(explanations, host=cpu))
  write_files(results, explanations, versions, cpu, out)


def write_files(
  results: Sequence,
  why: Sequence,
  versions: dict[str, str],
  cpu: HostCpu,
  files: Outputs,
) -> None:
  """--output_dir (with report.html), --plot, --model_explorer; then one
  line on stderr naming what was written, the folder last.

  `why`: the sweep's explanations; needed with --output_dir or --plot.

  Raises:
    HloprobeError: "cannot write ...", for the first that fails.
  """
  out, wrote = files.output_dir, []
  if out:
    wrote += write_or_fail(
      f"--output_dir={out}",
      lambda: (
        report.write_outputs(results, out, versions, cpu)
        + write_html(results, why, versions, out)
      ),
    )
  if files.plot:
    wrote += write_or_fail(
      f"--plot={files.plot}",
      lambda: write_plot(results, why, files.plot),
    )
  if files.model_explorer:
    wrote += write_or_fail(
      f"--model_explorer={files.model_explorer}",
      lambda: model_explorer.write_overlay(results, files.model_explorer),
    )
  if wrote:
    print(wrote_line(wrote, out), file=sys.stderr)
