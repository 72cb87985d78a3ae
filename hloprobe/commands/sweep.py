"""`hloprobe sweep`: one row per config (table, markdown, JSON or HTML).

`sweep` runs the configs (streamed to --output_dir/results.jsonl) and
returns their records; `main` prints them and writes the files asked for.
Exit status: 0 when every config succeeded, 1 otherwise.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence

from hloprobe import api
from hloprobe.commands import common
from hloprobe.errors import InvalidArgumentError

__all__ = ["SweepArgs", "main", "show", "sweep"]


@dataclasses.dataclass(frozen=True, slots=True)
class SweepArgs:
  """`hloprobe sweep`'s flags (each field a flag of the same name).

  Attributes:
    common: the flags every command accepts.
    experiment: --experiment words.
    experiments_file: --experiments_file, or None.
    timings: --timings: the stage seconds table after the results.
    sites: --sites: one row per contraction site after the table.
    wide: --wide: every table column, unwrapped.
    columns: --columns (table keys), or None for the default.
    plot: --plot, a PNG path, or None.
    model_explorer: --model_explorer, a folder, or None.
    plot_shared_y: --plot_shared_y: the plot's panels share one error axis.
    cache_max_mb: --cache_max_mb, the records' bound in MiB.
    overwrite: --overwrite: replace an earlier sweep's results in
      --output_dir (refused without it).
    shard: --shard: "I/N" (0-based) or "auto/N": run part I of N of the
      configs (`sweep.Shard`; needs --output_dir, which `hloprobe merge`
      joins), or None for all.
    executor, ray_address: --executor ("local" or "ray") and
      --ray_address (`common.with_executor`).
  """

  common: common.SweepWords
  experiment: tuple[str, ...] = ()
  experiments_file: str | None = None
  timings: bool = False
  sites: bool = False
  wide: bool = False
  columns: tuple[str, ...] | None = None
  plot: str | None = None
  model_explorer: str | None = None
  plot_shared_y: bool = True
  cache_max_mb: int = 2048
  overwrite: bool = False
  shard: str | None = None
  executor: str = "local"
  ray_address: str | None = None


def outputs_of(args, fmt: str, shard=None):
  """What a sweep command prints and writes (`pictures.outputs.Outputs`);
  `shard`: a `--shard` run's plan, whose entry results.json carries."""
  from hloprobe.pictures import (
    Outputs,
  )

  return Outputs(
    fmt=fmt,
    columns=getattr(args, "columns", None),
    wide=getattr(args, "wide", False),
    sites=getattr(args, "sites", False),
    timings=getattr(args, "timings", False),
    output_dir=args.common.output_dir,
    plot=args.plot,
    model_explorer=args.model_explorer,
    plot_shared_y=getattr(args, "plot_shared_y", True),
    shard=shard,
  )


def sweep(args: SweepArgs):
  """Runs the sweep `args` asks for; returns (its spec, its records).

  Raises:
    InvalidArgumentError: bad input (before anything runs).
    api.Interrupted: SIGINT/SIGTERM, with the configs finished.
  """
  # The HTML page (printed, or report.html in --output_dir) explains: it
  # names the passes.
  spec = common.sweep_spec(
    args.common,
    args.experiment,
    args.experiments_file,
    explain_passes=args.common.format == "html" or bool(args.common.output_dir),
    shard=args.shard,
  )
  common.check_format(args.common, args.columns, args.plot, args.model_explorer)
  if args.shard is not None and not args.common.output_dir:
    raise InvalidArgumentError(
      f"--shard={args.shard} needs --output_dir=DIR: `hloprobe merge` joins "
      "the shards' folders"
    )
  spec = common.with_executor(spec, args)
  common.start_jax(spec.targets)
  return spec, api.run(
    spec,
    output_dir=args.common.output_dir,
    overwrite=args.overwrite,
    progress=common.progress_printer(sys.stderr),
  )


def write_files(results, why, versions, cpu, out) -> None:
  """Writes --output_dir, --plot and --model_explorer's files as `out`
  (`pictures.Outputs`) asks, then says
  on stderr what was written, the folder last.

  Raises:
    HloprobeError: "cannot write ...", for the first that fails.
  """
  wrote = out.write(results, why, versions, cpu)
  if wrote:
    print(wrote, file=sys.stderr)


def write_records(results, output_dir: str) -> None:
  """Writes the records `hloprobe merge` reads (`shards.RECORDS_NAME`).

  Raises:
    HloprobeError: "cannot write ...".
  """
  from hloprobe.commands.shards import write_records as shard_records
  from hloprobe.errors import HloprobeError

  try:
    shard_records(output_dir, results)
  except OSError as e:
    raise HloprobeError(f"cannot write {output_dir}: {e}") from None


def show(results: Sequence, spec, out, cpu=None) -> None:
  """Prints a finished sweep of plan `spec` (`sweep.SweepPlan`) as `out`
  (`pictures.outputs.Outputs`) asks and writes --output_dir's and the
  pictures' files. `cpu`: the `runtime.HostCpu` the numbers were
  computed on (a merge's: its shards'); None: this one."""
  from hloprobe.compile import jaxlib_release
  from hloprobe.report import explain_results, sweep_text

  if out.shard is None and out.plan is None:  # for `explain --results`
    out = dataclasses.replace(out, plan=spec.words())
  fmt, versions, cpu = out.fmt, jaxlib_release().versions, cpu or common.host()
  cases = common.reported_cases(spec)
  why = explain_results(results, cases) if out.needs_explanations else []
  page = None
  if fmt == "html":
    page = out.page(results, why, versions)
  text = sweep_text(
    results,
    fmt,
    versions,
    columns=out.columns,
    wide=out.wide,
    host=cpu,
    sites=out.sites,
    timings=out.timings,
    notes=[f"{c.name}: {note}" for c in cases for note in c.notes],
    page=page,
  )
  print(text.out)
  if text.err is not None:
    print(text.err, file=sys.stderr)
  write_files(results, why, versions, cpu, out)


def main(args: SweepArgs) -> int:
  """`hloprobe sweep`: runs, prints, writes; returns the exit status.

  Raises:
    common.Interrupted: an interrupt while the results are shown or
      written (every config finished: they are kept).
    HloprobeError: as `sweep` raises (the cli prints it in one line).
  """
  spec, results = sweep(args)
  try:
    shard = spec if spec.shard is not None else None
    show(results, spec, outputs_of(args, args.common.format, shard))
    if spec.shard is not None:
      write_records(results, args.common.output_dir)
    # Inside: an interrupt while the cache is bounded (a walk of its
    # folder) also says that every config finished (main_reliability_
    # test's soak saw "interrupted" alone with all 6 results kept).
    common.bound_cache(args.common, args.cache_max_mb)
  except BaseException as e:  # every config finished and is streamed
    if (stop := common.Interrupted.after(e, results, len(results))) is None:
      raise
    raise stop from None
  return (
    common.ExitStatus.OK
    if all(r.ok for r in results)
    else common.ExitStatus.FAILED
  )
