"""What the command line shows and writes besides tables: the glue between
`cli`, `plot` and `html_report`, the progress line and the line naming the
files written. Files are written whole or not at all
(`report.atomic_write`)."""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Sequence

from hloprobe.errors import HloprobeError
from hloprobe.pictures import html_report, plot
from hloprobe.report import render as report

__all__ = [
  "HTML_NAME",
  "html_page",
  "missing_extras",
  "progress_printer",
  "write_html",
  "wrote_line",
  "write_plot",
]

HTML_NAME = "report.html"  # written into --output_dir


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
  out": what a person opens first, and the folder at the end."""
  firsts = [
    os.path.basename(p)
    for p in paths
    if os.path.basename(p) in (HTML_NAME, "results.json") or p.endswith(".png")
  ]
  named = f" ({', '.join(firsts)})" if firsts else ""
  where = out or os.path.dirname(paths[-1]) or os.curdir
  return f"wrote {len(paths)} files{named} under {where}"
