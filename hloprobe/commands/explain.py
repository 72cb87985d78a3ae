"""`hloprobe explain`: the sweep with pass attribution, in words.

`explain` runs the sweep (passes named) and returns its records and their
explanations; `main` prints them as text, JSON or the HTML page and writes
the files asked for. Exit status: 0 when every config succeeded, else 1.
"""

from __future__ import annotations

import dataclasses

from hloprobe.commands import common
from hloprobe.commands import sweep as sweep_command
from hloprobe.errors import InvalidArgumentError

__all__ = ["ExplainArgs", "explain", "main"]


@dataclasses.dataclass(frozen=True, slots=True)
class ExplainArgs:
  """`hloprobe explain`'s flags (each field a flag of the same name).

  Attributes:
    common: the flags every command accepts.
    experiment: --experiment words.
    experiments_file: --experiments_file, or None.
    plot: --plot, a PNG path, or None.
    model_explorer: --model_explorer, a folder, or None.
    plot_shared_y: --plot_shared_y: the plot's panels share one error axis.
    cache_max_mb: --cache_max_mb, the records' bound in MiB.
  """

  common: common.SweepWords
  experiment: tuple[str, ...] = ()
  experiments_file: str | None = None
  plot: str | None = None
  model_explorer: str | None = None
  plot_shared_y: bool = True
  cache_max_mb: int = 2048


def explain(args: ExplainArgs):
  """Runs the sweep with passes named; returns (records, explanations).

  Raises:
    InvalidArgumentError: bad input, --format=markdown among it.
    common.Interrupted: SIGINT/SIGTERM, with the configs finished.
  """
  from hloprobe.report import explain_results

  fmt = common.check_format(
    args.common, plot=args.plot, model_explorer=args.model_explorer
  )
  if fmt == "markdown":
    raise InvalidArgumentError(
      "explain prints text (--format=table), HTML (--format=html) or JSON "
      "(--format=json); got --format=markdown"
    )
  spec = common.sweep_spec(
    args.common, args.experiment, args.experiments_file, explain_passes=True
  )
  common.start_jax(spec.targets)
  results = common.run_streamed(spec, args.common.output_dir)
  return results, explain_results(results, [c.case for c in spec.cases])


def main(args: ExplainArgs) -> int:
  """`hloprobe explain`: runs, prints, writes; returns the exit status."""
  from hloprobe.compile import jax_versions
  from hloprobe.pictures import html_page
  from hloprobe.report import dumps_json, explanation_json, render_explanation

  results, explanations = explain(args)
  versions = jax_versions()
  cpu = common.host()
  out = sweep_command.outputs_of(args, args.common.format)
  if out.fmt == "json":
    doc = explanation_json(explanations, cpu)
    print(dumps_json(doc))
  elif out.fmt == "html":
    print(html_page(results, explanations, versions, out.plot_shared_y))
  else:
    print(render_explanation(explanations, host=cpu))
  sweep_command.write_files(results, explanations, versions, cpu, out)
  common.bound_cache(args.common, args.cache_max_mb)
  return common.EXIT_OK if all(r.ok for r in results) else common.EXIT_FAILED
