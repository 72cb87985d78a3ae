"""`hloprobe explain`: the sweep with pass attribution, in words.

`explain_answered` runs the sweep (passes named) and returns its records,
their explanations (`report.explain_results` of the planned cases, as
`hloprobe.explain`'s) and the answer (`api.answer`): the
findings ranked and, with --try_fixes (the default), the candidate fixes
tried on the configs at fault, one at a time until one passes (every one
with --all_fixes), on the same workers and record cache
(`verify.plan_tries`); `main` prints the answer first, then
the explanations, as text, JSON or the HTML page (the answer's lines open
it, as they open report.html in --output_dir), and writes the files asked
for (the tries' configs are not among them). Exit status: 0 when every
config of the explain sweep succeeded, else 1 (a fix that fails to
compile is a fix that did not pass, not a failure of the command).

`--only=invariance` asks the bitwise question alone: the sweep without
numerics or pass dumps (`engine.SweepSpec.numerics` False), no finding
and no fix, then the batch-invariance answer and its pins as ever; it
prints that answer (`report.render_answered(..., bits_only=True)`).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import sys
import threading

from hloprobe.commands import common
from hloprobe.commands import sweep as sweep_command
from hloprobe.errors import InvalidArgumentError, first_line

__all__ = ["ExplainArgs", "explain_answered", "main"]


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
    overwrite: --overwrite: replace an earlier sweep's results in
      --output_dir (refused without it).
    try_fixes: --try_fixes: try the candidate fixes (`explain_answered`)
      until one passes.
    all_fixes: --all_fixes: try every candidate fix, whether one before it
      passed or not.
    results: --results, a `hloprobe merge` --output_dir whose records are
      explained instead of sweeping (the fixes are still tried), or None.
    executor, ray_address: --executor ("local" or "ray") and
      --ray_address (`common.with_executor`).
    invariance: --invariance: "answer" (the batch-invariance answer
      first, its pins listed untried), "pin" (the pins also searched and
      verified, `invariance.batch_invariance`) or "off".
    only: --only: "invariance" answers the bitwise question alone, with
      no accuracy numerics (`_bits_plan`); None (default): everything.
    verbose: --verbose: the detail per target, not the one screen.
  """

  common: common.SweepWords
  experiment: tuple[str, ...] = ()
  experiments_file: str | None = None
  plot: str | None = None
  model_explorer: str | None = None
  plot_shared_y: bool = True
  cache_max_mb: int = 2048
  try_fixes: bool = True
  all_fixes: bool = False
  overwrite: bool = False
  results: str | None = None
  executor: str = "local"
  ray_address: str | None = None
  invariance: str = "answer"
  only: str | None = None
  verbose: bool = False


def _spec(args: ExplainArgs):
  """The explain sweep's plan, once the format is checked.

  Raises:
    InvalidArgumentError: bad input, --format=markdown among it, and
      --all_fixes with --notry_fixes (every fix tried, and none).
  """
  if args.all_fixes and not args.try_fixes:
    raise InvalidArgumentError(
      "--all_fixes tries every candidate fix and --notry_fixes none; drop one"
    )
  fmt = common.check_format(
    args.common, plot=args.plot, model_explorer=args.model_explorer
  )
  if fmt == "markdown":
    raise InvalidArgumentError(
      "explain prints text (--format=table), HTML (--format=html) or JSON "
      "(--format=json); got --format=markdown"
    )
  words, experiments = args.common, args.experiment
  if args.results and not (
    set(words.given) & _SWEEP_FLAGS or experiments or args.experiments_file
  ):
    words, experiments = _recorded_words(args.results, words)
  spec = common.sweep_spec(
    words, experiments, args.experiments_file, explain_passes=True
  )
  if _bits_only(args):
    spec = _bits_plan(args, spec)
  return common.with_executor(spec, args)


def _bits_only(args: ExplainArgs) -> bool:
  """Whether `args` ask the bitwise question alone (--only=invariance)."""
  return args.only == "invariance"


def _bits_plan(args: ExplainArgs, spec):
  """The explain sweep's plan without numerics (`engine.SweepSpec.numerics`
  False) and without pass dumps unless --explain_passes asks for them (a
  boundary's sites are named by their fates; the passes add which pass
  made each).

  Raises:
    InvalidArgumentError: --invariance=off (no question left), a flag
      that needs the accuracy numerics (--plot, --model_explorer,
      --format=html), or one batch size per case (nothing to compare).
  """
  from hloprobe import engine

  if args.invariance == "off":
    raise InvalidArgumentError(
      "--only=invariance answers the bitwise question, which "
      "--invariance=off turns off; give --invariance=answer or pin"
    )
  for flag, given in (
    ("--plot", args.plot),
    ("--model_explorer", args.model_explorer),
    ("--format=html", args.common.format == "html"),
  ):
    if given:
      raise InvalidArgumentError(
        f"{flag} shows the accuracy numerics, which --only=invariance "
        "does not compute; drop one of them"
      )
  if all(len(spec.sizes_of(c)) < 2 for c in spec.cases):
    raise InvalidArgumentError(
      "--only=invariance compares rows' bits across batch sizes and needs "
      f"at least two; got --batch_sizes={args.common.batch_sizes}"
    )
  return engine.plan_sweep(
    spec, numerics=False, explain_passes=args.common.explain_passes
  )


# The flags that name a sweep: without any, `--results=DIR` sweeps (and
# explains) the plan DIR's results.json records.
_SWEEP_FLAGS = frozenset(
  {
    "case",
    "batch_sizes",
    "precisions",
    "targets",
    "target_config",
    "autotune_results",
    "inputs",
    "batch_arg",
  }
)


def _recorded_words(folder: str, words):
  """The sweep words (`common.SweepWords`) and experiment words of the
  plan a `--results` folder's results.json records (a merge's or an
  unsharded sweep's "plan", a shard's "shard" plan), the other flags as
  given.

  Raises:
    InvalidArgumentError: no results.json, or one that records no plan
      (then the sweep flags name it: one line says so).
  """
  from hloprobe.commands.merge import recorded_plan

  plan = recorded_plan(folder)
  recorded = dataclasses.replace(
    words,
    case=tuple(plan["cases"]),
    batch_sizes=",".join(str(int(n)) for n in plan["batch_sizes"]),
    precisions=tuple(plan["precisions"]),
    targets=tuple(plan["targets"]),
    target_config=(),
    autotune_results=(),
    inputs=plan.get("inputs"),
    batch_arg=plan.get("batch_arg"),
  )
  return recorded, tuple(plan.get("experiments", ()))


def explain_answered(args: ExplainArgs, spec=None):
  """`explain`, then the answer: (records, explanations, `report.Answer`).
  `spec`: the sweep's plan (`_spec(args)`), made here when None.

  The findings ranked worst first (`verify.find_findings`); with
  `args.try_fixes` the candidate fixes tried on the configs at fault, on
  the explain sweep's workers and record cache, and judged as `verify`
  judges them, until one passes (every one with `args.all_fixes`); the
  others listed untried with their `verify` commands.

  Raises:
    InvalidArgumentError: bad input, --format=markdown among it.
    common.Interrupted: SIGINT/SIGTERM, with the configs finished.
  """
  from hloprobe import api, engine
  from hloprobe.report import explain_results

  spec = spec or _spec(args)
  common.start_jax(spec.targets)
  with engine.worker_pool(spec) as pool:
    ahead = _InvarianceAhead.of(spec, pool, args)
    if args.results:  # the explain sweep, done already (sharded)
      from hloprobe.commands.shards import recorded_results

      results = recorded_results(args.results, spec)
    else:
      try:
        results = api.run(
          spec,
          output_dir=args.common.output_dir,
          overwrite=args.overwrite,
          pool=pool,
          progress=common.progress_printer(sys.stderr),
          lanes_done=ahead and ahead.start,
        )
      except BaseException:
        if ahead is not None:
          ahead.cancel()
        raise
      if ahead is not None:
        ahead.swept(results)
    if not spec.numerics:  # the bitwise question alone: no finding
      from hloprobe.report import Answer

      answer = Answer((), not_tried="--only=invariance: no accuracy numerics")
    else:
      answer = _answer(spec, results, args, pool)
    answer = _with_invariance(
      spec,
      results,
      pool,
      answer,
      args.invariance,
      args.common.output_dir,
      args.common.cache_dir,
      ahead,
    )
  if not spec.numerics:
    return results, [], answer
  cases = [c.case for c in spec.cases]  # as `hloprobe.explain` explains
  return results, explain_results(results, cases), answer


def _answer(spec, results, args: ExplainArgs, pool):
  """The findings, and the fixes tried (or why not): `api.answer`, the
  tries' progress on stderr; an interrupt says what finished."""
  from hloprobe import api

  try:
    return api.answer(
      spec,
      results,
      try_fixes=args.try_fixes,
      every_fix=args.all_fixes,
      pool=pool,
      progress=lambda: common.progress_printer(sys.stderr),
    )
  except BaseException as e:
    if (stop := common.Interrupted.after(e, results, len(results))) is None:
      raise
    raise stop from None


def _with_invariance(
  spec, results, pool, answer, mode: str, output_dir, cache_dir=None, ahead=None
):
  """`answer` with the batch-invariance answer (`mode` "answer" or
  "pin") and, under "pin", the pins searched and verified (a compile-only
  GPU's pinned-gemm file written under `output_dir`/pins, else pins/
  under the record cache's folder: `cache_dir` (--cache_dir, --nocache
  or not), else `RecordCache.default_dir()`; its `verify` command reads
  it there); untried, each applicable pin is listed with its `verify`
  command. `ahead`: the answer started during the sweep
  (`_InvarianceAhead`), or None."""
  import os

  from hloprobe import invariance
  from hloprobe.runtime import RecordCache

  if mode == "off":
    return answer
  try:
    folder = None
    if mode == "pin":
      folder = os.path.join(
        output_dir or cache_dir or RecordCache.default_dir(), "pins"
      )
    got = ahead.answer() if ahead is not None and ahead.started else None
    if got is None:
      given = ahead.error if ahead is not None else None
      got = invariance.batch_invariance(
        spec, results, pool, folder, given=given
      )
    found, pins = got
  except BaseException as e:
    if (stop := common.Interrupted.after(e, results, len(results))) is None:
      raise
    raise stop from None
  return dataclasses.replace(answer, invariance=found, pins=pins)


class _InvarianceAhead:
  """The batch-invariance answer ("answer" mode), started on a thread of
  its own once the sweep's lanes are done (`api.run`'s `lanes_done`): its
  rows run in the sweep's compile workers, idle then, while the case's
  worker still makes the records, and beside explain's fix tries (issue
  37: decode's rows took 40 s after its sweep). The same answer as after
  them: the same executables run on the same inputs.

  Only where nothing else ends those workers meanwhile: a sweep of the
  baseline alone (a fix try's sweep ends other flag sets' workers,
  `WorkerPool.retire`, never the baseline's), without pins (their search
  runs sweeps of its own). Else, and with --results, `of` gives None.
  """

  def __init__(self, spec, pool):
    self._spec, self._pool = spec, pool
    self._results = concurrent.futures.Future()
    self._answer = concurrent.futures.Future()
    self.started = False
    # What `answer` found raised: the answer made after the sweep takes
    # the rows and kernels it carries (`batch_invariance`'s `given`).
    self.error: BaseException | None = None

  @classmethod
  def of(cls, spec, pool, args: ExplainArgs):
    """One for this explain, or None where it cannot start early."""
    if args.invariance != "answer" or args.results or spec.experiments:
      return None
    return cls(spec, pool)

  def start(self, inputs) -> None:
    """`lanes_done`: runs the answer on a daemon thread (a pool closed by
    an interrupt fails its calls, which ends it)."""
    threading.Thread(
      target=self._run, args=(inputs,), name="invariance", daemon=True
    ).start()
    self.started = True  # not where the thread did not start: made after

  def _run(self, inputs) -> None:
    from hloprobe import invariance

    try:
      self._answer.set_result(
        invariance.batch_invariance(
          self._spec, self._results, self._pool, None, inputs, strict=True
        )
      )
    except BaseException as e:  # raised where the answer is read
      self._answer.set_exception(e)

  def swept(self, results) -> None:
    """The sweep's records, which the answer waits for after its rows."""
    self._results.set_result(results)

  def cancel(self) -> None:
    """The sweep failed: the answer's wait for its records ends."""
    self._results.cancel()

  def answer(self):
    """(the `Invariance` answers, the pins): `batch_invariance`'s; None
    where it raised, a group's rows failing among it or a worker dying as
    it read kernels (`strict`): the caller then makes the answer again
    after the sweep, as without this, given what this one made (`error`:
    only the rest is asked again), and a warning names what failed. Its
    rows run beside the sweep's last requests and explain's fix tries, on
    the same workers; the answer after them is the one that has always
    held. (The worker a make test saw end mid-request here had been
    started by a thread that ended: Linux's PR_SET_PDEATHSIG, which
    workers no longer ask for: `runtime.serve._die_with_parent`.)"""
    from absl import logging

    try:
      return self._answer.result()
    except Exception as e:  # made again, where an error shows as ever
      self.error = e
      logging.warning(
        "the batch-invariance answer begun during the sweep failed (%s); "
        "made again after it",
        first_line(e),
      )
      return None


def numbers_host(results: str | None):
  """(the `runtime.HostCpu` that computed the CPU numbers, or None; a line
  saying it is unknown, or None).

  Without --results, this machine's CPU. With --results=DIR, the host
  DIR/results.json names (the shards' CPU, `merge.results_host`): never
  this machine's, whose ISA may differ (the numbers' last digits follow
  it); where it names none or cannot be read, None and "host: unknown
  (not in DIR/results.json)".
  """
  if not results:
    return common.host(), None
  from hloprobe.commands.merge import results_host

  cpu = results_host(results)
  if cpu is not None:
    return cpu, None
  path = os.path.join(results, "results.json")
  return None, f"host: unknown (not in {path})"


def main(args: ExplainArgs) -> int:
  """`hloprobe explain`: runs, prints, writes; returns the exit status."""
  from hloprobe.compile import jaxlib_release
  from hloprobe.report import render_answered

  spec = _spec(args)
  results, explanations, answer = explain_answered(args, spec)
  versions = jaxlib_release().versions
  cpu, host_unknown = numbers_host(args.results)
  out = sweep_command.outputs_of(args, args.common.format)
  # results.json records the plan, as sweep's does: `explain --results`
  # of this folder sweeps it again without the flags retyped.
  out = dataclasses.replace(out, answer=answer, plan=spec.words())
  if out.fmt == "html":
    page = out.page(results, explanations, versions)
    print(page)
  else:
    print(
      render_answered(
        explanations,
        answer,
        host=cpu,
        verbose=args.verbose,
        fmt=out.fmt,
        bits_only=not spec.numerics,
      )
    )
    if host_unknown and out.fmt != "json":
      print(host_unknown)
  sweep_command.write_files(results, explanations, versions, cpu, out)
  common.bound_cache(args.common, args.cache_max_mb)
  return (
    common.ExitStatus.OK
    if all(r.ok for r in results)
    else common.ExitStatus.FAILED
  )
