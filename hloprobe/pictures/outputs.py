"""What a sweep command writes: the HTML page, the files of --output_dir,
--plot and --model_explorer, and the line naming the files written. The
glue between `report`, `plot`, `html_report` and `model_explorer`; the
command layer (`hloprobe.commands`) prints. Files are written whole or not
at all (`report.files.atomic_write`).

Private in intent: use the package, `hloprobe.pictures`.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from collections.abc import Sequence

from hloprobe.engine import SweepPlan
from hloprobe.errors import HloprobeError, InvalidArgumentError, write_or_fail
from hloprobe.pictures import html_report, model_explorer, plot
from hloprobe.report import OUTPUT_FORMS, Answer, atomic_write, write_outputs
from hloprobe.runtime import HostCpu

__all__ = [
  "HTML_NAME",
  "Outputs",
  "check_extras",
  "html_page",
  "missing_extras",
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
    sites: --sites: one row per contraction site after the table.
    timings: --timings: the stage seconds table (stderr with json).
    output_dir: --output_dir, or None.
    plot: --plot, a PNG path, or None.
    model_explorer: --model_explorer, a folder, or None.
    plot_shared_y: --plot_shared_y: one error axis for every panel of the
      plot (--plot, the HTML page's); False: each panel its own.
    shard: a `--shard` run's plan (`engine.SweepPlan` with its `shard`),
      whose "shard" entry results.json carries, or None.
    plan: the sweep's plan words for results.json (`SweepPlan.words`:
      what `explain --results` reads), or None.
    answer: `explain`'s answer (`report.Answer`: the findings and the
      fixes tried), which the HTML page opens with; None where none was
      computed (`sweep`, `merge`: the page says so).
  """

  fmt: str = "table"
  columns: Sequence[str] | None = None
  wide: bool = False
  sites: bool = False
  timings: bool = False
  output_dir: str | None = None
  plot: str | None = None
  model_explorer: str | None = None
  plot_shared_y: bool = True
  shard: SweepPlan | None = None
  plan: dict | None = None
  answer: Answer | None = None

  @property
  def needs_explanations(self) -> bool:
    """The HTML page, report.html in --output_dir and --plot explain."""
    return bool(self.fmt == "html" or self.output_dir or self.plot)

  def check(self) -> None:
    """Checks --columns and the extras --plot and --model_explorer need,
    before anything is swept.

    Raises:
      InvalidArgumentError: an unknown column (`OUTPUT_FORMS.columns`), or
        a missing extra (names the pip words to install).
    """
    if self.columns is not None:
      OUTPUT_FORMS.check_columns(self.columns)
    check_extras(bool(self.plot), bool(self.model_explorer))

  def page(
    self, results: Sequence, explanations: Sequence, versions: dict[str, str]
  ) -> str:
    """The HTML page of `results` (`html_page`), its plot's panels sharing
    one error axis as --plot_shared_y says, opening with `answer` when
    there is one."""
    return html_page(
      results, explanations, versions, self.plot_shared_y, self.answer
    )

  def write(
    self,
    results: Sequence,
    why: Sequence,
    versions: dict[str, str],
    cpu: HostCpu,
  ) -> str | None:
    """Writes the files asked for (`write_files`); returns the line saying
    what was written, or None when nothing was asked.

    Raises:
      HloprobeError: "cannot write ...", for the first that fails.
    """
    return write_files(results, why, versions, cpu, self)


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
      f"pip install {' '.join(missing)} first (`make full` installs "
      f"{'them' if len(missing) > 1 else 'it'})"
    )


def _png_or_reason(
  results, explanations, shared_y: bool
) -> tuple[bytes | None, str | None]:
  """The plot, or why there is none (matplotlib missing)."""
  try:
    return plot.row0_png(results, explanations, shared_y), None
  except HloprobeError as e:
    return None, str(e)


def html_page(
  results: Sequence,
  explanations: Sequence,
  versions: dict[str, str],
  shared_y: bool = True,
  answer: Answer | None = None,
) -> str:
  """The self-contained report (`html_report.render_html`), its plot
  embedded when matplotlib is installed (else the page says why not);
  `shared_y`: the plot's panels share one error axis; `answer`: explain's
  answer, which opens the page as its finding table and what to do
  (`html_report.render_html`), or None."""
  png, why = _png_or_reason(results, explanations, shared_y)
  return html_report.render_html(
    results, explanations, versions, png, why, answer
  )


def write_html(
  results: Sequence,
  explanations: Sequence,
  versions: dict[str, str],
  output_dir: str,
  shared_y: bool = True,
  answer: Answer | None = None,
) -> list[str]:
  """Writes `<output_dir>/report.html` (`html_page`); returns [its path]."""
  path = os.path.join(output_dir, HTML_NAME)
  page = html_page(results, explanations, versions, shared_y, answer)
  atomic_write(path, page)
  return [path]


def write_plot(
  results: Sequence, explanations: Sequence, path: str, shared_y: bool = True
) -> list[str]:
  """Writes the row-0 error plot as a PNG at `path` (`shared_y`: one error
  axis for every panel); returns [path].

  Raises:
    HloprobeError: matplotlib is not installed.
    OSError: the file cannot be written (nothing is left behind).
  """
  atomic_write(path, plot.row0_png(results, explanations, shared_y))
  return [path]


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


def write_files(
  results: Sequence,
  why: Sequence,
  versions: dict[str, str],
  cpu: HostCpu,
  wanted: Outputs,
) -> str | None:
  """Writes --output_dir (with report.html), --plot, --model_explorer;
  returns the line saying what was written (`wrote_line`, e.g. "wrote 28
  files (report.html, ...) under out"), or None when nothing was asked.

  `why`: the sweep's explanations; needed with --output_dir or --plot.

  Raises:
    HloprobeError: "cannot write ...", for the first that fails.
  """
  out, wrote = wanted.output_dir, []
  if out:
    wrote += write_or_fail(
      f"--output_dir={out}",
      lambda: (
        write_outputs(
          results,
          out,
          versions,
          cpu,
          wanted.shard,
          wanted.answer,
          wanted.plan,
        )
        + write_html(
          results, why, versions, out, wanted.plot_shared_y, wanted.answer
        )
      ),
    )
  if wanted.plot:
    wrote += write_or_fail(
      f"--plot={wanted.plot}",
      lambda: write_plot(results, why, wanted.plot, wanted.plot_shared_y),
    )
  if wanted.model_explorer:
    wrote += write_or_fail(
      f"--model_explorer={wanted.model_explorer}",
      lambda: model_explorer.write_overlay(results, wanted.model_explorer),
    )
  return wrote_line(wrote, out) if wrote else None
