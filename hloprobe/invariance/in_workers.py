"""The rows of a sweep's runnable configs, in its workers: one
`RowsRequest` per config of a target that runs (the CPU, an attached
GPU), on the sweep's own worker pool and lanes' XLA_FLAGS (the
experiment's, then the host devices a sharded case needs). A user
case's inputs are made in the worker that loaded it (`full_inputs_of`),
so its row 0 and anchor rows are run and compared as a built-in case's.

Private in intent: use the package, `hloprobe.invariance`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import sys
import threading
from collections.abc import Callable

from hloprobe.engine import PlannedConfig, SweepPlan, SweptCase
from hloprobe.errors import ExecutionError, HloprobeError, first_line
from hloprobe.invariance.answer import (
  Gap,
  Invariance,
  Why,
  config_key,
  group_key,
  invariance_of,
)
from hloprobe.invariance.kernel_identity import (
  KernelReader,
  KernelsRequest,
  RowKernel,
  batched_leaves,
  computes_rows,
  kernel_reader,
  records_as_kernels,
  site_kernels,
)
from hloprobe.invariance.model_bits import (
  GroupModel,
  Inexact,
  ModelRowsRequest,
  NotModelled,
  model_sites,
)
from hloprobe.invariance.rows import ConfigRows
from hloprobe.invariance.runs import RowsRequest, UserInputsRequest
from hloprobe.runtime import WorkerError

__all__ = [
  "EarlyAnswerIncomplete",
  "case_inputs",
  "invariance_of_sweep",
  "rows_and_kernels",
  "rows_kind",
  "sweep_kernels",
  "sweep_models",
  "sweep_rows",
]


def rows_kind(c: PlannedConfig) -> str | None:
  """Why config `c` has no rows to run, or None when it has: a
  compile-only target, a sized case (no rows), a module case (one fixed
  size), a case only this process knows."""
  case = c.case.case
  if c.config.target.compile_only:
    return "compile-only target"
  if case.swept_size is not None:
    return f"a sized case (swept over {case.swept_size}, no rows)"
  if case.fixed_size is not None:
    return "a module case runs at its one size"
  if not c.case.portable:
    return "a case only this process knows"
  return None


def sweep_rows(
  plan: SweepPlan,
  pool,
  full_inputs: Callable[[int], tuple],
  anchors: bool = True,
  given: dict[tuple, ConfigRows] | None = None,
) -> tuple[dict[tuple, ConfigRows], dict[tuple, str]]:
  """Every runnable config's rows (`rows_kind` None), each in the worker
  the sweep compiled it in; the lanes at once, one thread each (as
  `sweep_kernels`: decode's 14 CPU configs took 40 s one after another).

  Args:
    plan: the sweep's plan.
    pool: its `sweep.worker_pool`.
    full_inputs: case index -> that case's full inputs (the sweep's).
    anchors: also run the anchor at its offsets.
    given: `config_key` -> rows run before on the same executables and
      inputs (`EarlyAnswerIncomplete.rows`), taken as they are, not run.

  Returns:
    (`config_key` -> `ConfigRows`, `config_key` -> why a config's rows
    could not be run: one line).
  """
  rows, failed = dict(given or {}), {}
  inputs: dict[int, tuple] = {}
  dealt = _lanes(plan)
  lanes: dict[tuple[str, int], list] = {}
  for c in plan.configs():
    if rows_kind(c) is not None or len(plan.sizes_of(c.case)) < 2:
      continue  # nothing to compare it with
    if config_key(c.config) in rows:
      continue  # given
    lanes.setdefault(dealt[config_key(c.config)], []).append(c)
  made = threading.Lock()

  def run_one(flags: str, lane: int, c: PlannedConfig) -> None:
    key = config_key(c.config)
    try:  # a user case's are made in the worker that loaded it
      with made:
        if c.case_index not in inputs:
          inputs[c.case_index] = full_inputs(c.case_index)
    except HloprobeError as e:
      failed[key] = first_line(e)
      return
    request = RowsRequest(
      c.config, c.case.source, inputs[c.case_index], anchors, plan.inputs
    )
    try:
      rows[key] = pool.call(request, flags, lane=lane)
    except Exception as e:  # that config's rows are unknown, not all
      failed[key] = first_line(e)

  _each_lane(lanes, run_one)
  return _in_plan_order(plan, rows), _in_plan_order(plan, failed)


def _each_lane(
  lanes: dict[tuple[str, int], list],
  run_one: Callable[[str, int, object], None],
) -> None:
  """`run_one(flags, lane, item)` for each lane's items in turn, the lanes
  at once, one thread each (a lane's worker serves one request at a
  time; the sweep's lanes are its `jobs` workers). `run_one` records its
  own failures: one raising stops its lane's later items and is raised
  here after every lane ended."""

  def run_lane(flags: str, lane: int, todo: list) -> None:
    for item in todo:
      run_one(flags, lane, item)

  with concurrent.futures.ThreadPoolExecutor(max(1, len(lanes))) as threads:
    for done in [
      threads.submit(run_lane, flags, lane, todo)
      for (flags, lane), todo in lanes.items()
    ]:
      done.result()


def _in_plan_order(plan: SweepPlan, by_key: dict[tuple, object]) -> dict:
  """`by_key` (`config_key` -> anything) in the plan's config order, as
  lanes that ran at once filled it in any order."""
  keys = [config_key(c.config) for c in plan.configs()]
  return {k: by_key[k] for k in keys if k in by_key}


def sweep_kernels(
  plan: SweepPlan,
  pool,
  full_inputs: Callable[[int], tuple],
  results,
  given: dict[tuple, tuple[RowKernel, ...]] | None = None,
) -> tuple[dict[tuple, tuple[RowKernel, ...]], dict[tuple, str]]:
  """Every compile-only config's row kernels, read by `hloprobe.kernels`
  in the worker that compiled it (`KernelsRequest`: every kernel's PTX).

  Each request goes to the lane the sweep dealt its config to (`_lanes`),
  where that worker kept the compile; the lanes run at once, one thread
  each. A request carries no inputs; only where that worker did not keep
  the compile (a cached record, a worker started again) is it asked
  again with the case's full inputs (made then, once per case), and the
  config compiled again there.

  `given`: `config_key` -> kernels read before from the same compiles
  (`EarlyAnswerIncomplete.kernels`), taken as they are, not read again.

  Returns (`config_key` -> its `RowKernel`s, `config_key` -> (why not
  read: one line, whether a worker died or ran past its time: a
  `WorkerError`, which another try may not meet)); ({}, {}) where the
  kernels stage is not installed (the fates' reading, `site_kernels`,
  then stands).
  """
  by_key = {config_key(r.config): r for r in results if r.ok}
  found, failed = dict(given or {}), {}
  if kernel_reader() is site_kernels:
    return found, failed
  dealt = _lanes(plan)
  lanes: dict[tuple[str, int], list] = {}
  for c in plan.configs():
    key = config_key(c.config)
    if not c.config.target.compile_only or key not in by_key:
      continue
    if len(plan.sizes_of(c.case)) < 2 or key in found:
      continue  # nothing to compare it with, or given
    lanes.setdefault(dealt[key], []).append((key, c))
  made = threading.Lock()

  def ask(c, flags: str, lane: int):
    """The config's records: first without the inputs (the worker kept
    its compile), then, where it did not, with them (compiled again)."""
    request = KernelsRequest(
      c.config, c.case.source, None, plan.inputs, compile=False
    )
    records = pool.call(request, flags, lane=lane)
    if records is not None:
      return records
    with made:  # a user case's are made in the worker that loaded it
      full = full_inputs(c.case_index)
    request = KernelsRequest(c.config, c.case.source, full, plan.inputs)
    return pool.call(request, flags, lane=lane)

  def run_one(flags: str, lane: int, item) -> None:
    key, c = item
    try:
      found[key] = records_as_kernels(ask(c, flags, lane), by_key[key])
    except Exception as e:  # that config read from its fates instead
      # (or its inputs could not be made)
      failed[key] = (first_line(e), isinstance(e, WorkerError))

  _each_lane(lanes, run_one)
  return _in_plan_order(plan, found), _in_plan_order(plan, failed)


def rows_and_kernels(
  plan: SweepPlan,
  pool,
  full_inputs: Callable[[int], tuple] | None,
  results,
) -> tuple[
  dict[tuple, ConfigRows],
  dict[tuple, tuple[RowKernel, ...]],
  dict[tuple, GroupModel | NotModelled],
]:
  """What `invariance_of` judges a sweep's configs by, read on the
  sweep's workers: the runnable configs' rows (`sweep_rows`, the anchor
  at its offsets too), the compile-only configs' row kernels
  (`sweep_kernels`) and their row 0 by the kernel model where it is
  bit-exact (`sweep_models`).

  Args:
    plan: the sweep's plan.
    pool: its `sweep.worker_pool`.
    full_inputs: case index -> that case's full inputs (the sweep's), or
      None: each case's made once when first needed, a user case's in
      the worker that loaded it (`case_inputs`; its program never runs in
      this process).
    results: the sweep's records.

  Returns:
    (`config_key` -> `ConfigRows`, `config_key` -> `RowKernel`s,
    `group_key` -> `GroupModel` or why not). A config whose rows could
    not be run is not in the first (judged by its records' row 0); one
    whose kernels could not be read is not in the second (read from its
    fates).
  """
  full_inputs = full_inputs or case_inputs(plan, pool)
  rows, _ = sweep_rows(plan, pool, full_inputs)
  kernels, _ = sweep_kernels(plan, pool, full_inputs, results)
  model = sweep_models(plan, pool, full_inputs, results, kernels)
  return rows, kernels, model


def sweep_models(
  plan: SweepPlan,
  pool,
  full_inputs: Callable[[int], tuple],
  results,
  kernels: dict[tuple, tuple[RowKernel, ...]],
) -> dict[tuple, GroupModel | NotModelled]:
  """Every compile-only group's row 0 by the kernel model, at each size
  whose every row-computing kernel the model is bit-exact for
  (`model_bits.model_sites`), computed in the worker of the group's
  first config (`ModelRowsRequest`: the case is loaded there).

  Returns:
    `group_key` -> its `GroupModel` (the sizes computed, and why not the
    others), or why none was computed (a `NotModelled`: what computing
    raised).
    Groups of one size, or with fewer than two kernels read, are left
    out.
  """
  dealt = _lanes(plan)
  by_group: dict[tuple, list] = {}
  for c in plan.configs():
    if c.config.target.compile_only and len(plan.sizes_of(c.case)) >= 2:
      by_group.setdefault(group_key(c.config), []).append(c)
  done = {config_key(r.config): r for r in results}
  out: dict[tuple, GroupModel | NotModelled] = {}
  for key, planned in by_group.items():
    rs = [done[k] for c in planned if (k := config_key(c.config)) in done]
    rs = [r for r in rs if r.ok and config_key(r.config) in kernels]
    if len(rs) < 2:
      continue
    batched = batched_leaves(rs)
    specs, why = [], {}
    for r in sorted(rs, key=lambda r: r.config.n):
      ks = kernels[config_key(r.config)]
      spec, not_exact = model_sites(
        r, [k for k in ks if computes_rows(k, batched)]
      )
      if spec is None:
        why[r.config.n] = not_exact
      else:
        specs.append(spec)
    if not specs:
      out[key] = GroupModel({}, why)
      continue
    first = planned[0]
    try:
      request = ModelRowsRequest(
        first.case.source,
        full_inputs(first.case_index),
        tuple(specs),
        plan.inputs,
      )
      flags, lane = dealt[config_key(first.config)]
      out[key] = GroupModel(pool.call(request, flags, lane=lane), why)
    except Exception as e:  # kernel identity stands, saying why
      out[key] = NotModelled(Inexact.NOT_COMPUTED, error=first_line(e))
  return out


def _lanes(plan: SweepPlan) -> dict[tuple, tuple[str, int]]:
  """`config_key` -> (extra XLA_FLAGS, lane) of the worker the sweep
  compiled that config in, where it keeps the compile (`engine.KEPT`):
  the plan's deal (`SweepPlan.dealt_lanes`, the engine's). A config
  compiled in this process (not portable) is looked for on lane 0."""
  return {
    config_key(c.config): at if at is not None else (c.worker_flags, 0)
    for c, at in zip(plan.configs(), plan.dealt_lanes())
  }


def full_inputs_of(swept: SweptCase, pool, timeout_s: float) -> tuple | None:
  """A case's full inputs (`Case.full_inputs`; None for a sized case):
  made here for hloprobe's own cases and records, and for a user's case
  (`SweptCase.guarded`, whose code never runs in this process) in the
  worker that loaded it (`SweptCase.loader`, lane 0, under `timeout_s`
  seconds), or, once that pool is closed, in `pool`'s case worker
  (flags "", `SweptCase.case_worker`, as the sweep takes it: not a
  compile lane; the case loaded there from its source).

  Raises:
    CaseError: as `UserInputsRequest`.
    WorkerError: that worker died or ran past `timeout_s`.
  """
  if not swept.guarded:
    return swept.case.full_inputs()
  loader, lane = swept.case_worker(pool)
  folder = getattr(pool, "shared_folder", None)
  request = UserInputsRequest(
    swept.source, tuple(sys.path), folder() if folder is not None else None
  )
  return loader.call(request, "", timeout_s, lane=lane)


def case_inputs(plan: SweepPlan, pool) -> Callable[[int], tuple | None]:
  """case index -> that case's full inputs (`full_inputs_of`, under the
  plan's case timeout), each made once, when first asked for.

  Raises (from the callable):
    CaseError, WorkerError: as `full_inputs_of`.
  """
  full: dict[int, tuple | None] = {}

  def inputs(i: int) -> tuple | None:
    if i not in full:
      made = full_inputs_of(plan.cases[i], pool, plan.case_timeout_s)
      full[i] = SweptCase.shared_inputs(made, pool)
    return full[i]

  return inputs


class EarlyAnswerIncomplete(ExecutionError):
  """A strict answer's rows failed, or a worker died reading its kernels
  (`invariance_of_sweep`): the answer is made again (after explain's
  sweep), given what this one made, which is not made again, and the
  inputs it was made on.

  Attributes:
    rows: `config_key` -> the `ConfigRows` that were run.
    kernels: `config_key` -> the `RowKernel`s that were read (empty where
      the rows failed first: the kernels were not read).
    inputs: case index -> the full inputs the rows were run on
      (`invariance_of_sweep`'s `inputs`): the answer given these rows
      runs the others on the same ones (a user case's `make_inputs` may
      draw afresh where its loader was started again).
  """

  def __init__(
    self,
    message: str,
    rows: dict,
    kernels: dict | None = None,
    inputs: Callable[[int], tuple | None] | None = None,
  ):
    super().__init__(message)
    self.rows, self.kernels, self.inputs = rows, kernels or {}, inputs

  def __reduce__(self):  # the inputs, a function of this process, left
    return type(self), (str(self), self.rows, self.kernels)


def invariance_of_sweep(
  plan: SweepPlan,
  results,
  pool,
  reader: KernelReader | None = None,
  anchors: bool = True,
  inputs: Callable[[int], tuple | None] | None = None,
  strict: bool = False,
  given: EarlyAnswerIncomplete | None = None,
) -> tuple[Invariance, ...]:
  """A sweep's batch-invariance answer, one `Invariance` per (case,
  target, precision, experiment) group: the runnable configs' rows run in
  the sweep's workers (`sweep_rows`, on the executables its compiles left
  there), the compile-only ones by kernel identity (`reader`).

  A config whose rows fail to run is judged by its records' row 0 (the
  sweep's own run), and the failure is the answer's note.

  `results` may be a `concurrent.futures.Future` of the sweep's records,
  waited for once the rows have run (which need none of them): explain
  starts the answer when the sweep's lanes are done, while the case's
  worker still makes the records (issue 37). `inputs`: case index -> its
  full inputs as the sweep's lanes sent them (`engine.run_sweep`'s
  `lanes_done`), or None: made here (`case_inputs`).

  `given`: what a strict answer that failed made (its rows, its
  kernels), taken as they are, and the inputs it made them on, used for
  the rest: only what it did not make is asked again (issue 37: a config
  whose rows always fail had every config's rows run twice, in the
  answer begun during explain's sweep and after it).

  Raises:
    EarlyAnswerIncomplete: with `strict`, a config's rows failed, or a
      worker died reading a config's kernels (its first line), carrying
      what was made: explain's answer begun during the sweep is then made
      again after it, given them. A kernel that could not be read for
      another reason is read from its fates, as without `strict` (read
      again, it would fail again).
  """
  if given is not None and given.inputs is not None:
    inputs = given.inputs
  inputs = inputs or case_inputs(plan, pool)
  given_rows = given.rows if given is not None else None
  rows, failed = sweep_rows(plan, pool, inputs, anchors, given_rows)
  if strict and failed:
    key, why = next(iter(failed.items()))
    message = f"rows of {key} failed: {why}"
    raise EarlyAnswerIncomplete(message, rows, None, inputs)
  if isinstance(results, concurrent.futures.Future):
    results = results.result()
  kernels, model = {}, {}
  if reader is None:
    given_kernels = given.kernels if given is not None else None
    kernels, unread = sweep_kernels(plan, pool, inputs, results, given_kernels)
    died = {k: why for k, (why, worker) in unread.items() if worker}
    if strict and died:
      key, why = next(iter(died.items()))
      message = f"kernels of {key} not read: {why}"
      raise EarlyAnswerIncomplete(message, rows, kernels, inputs)
    model = sweep_models(plan, pool, inputs, results, kernels)
  sized = {s.case.name for s in plan.cases if s.case.swept_size is not None}
  found = invariance_of(results, rows, reader, kernels, sized, model)
  if not failed:
    return found
  out = []
  for a in found:
    mine = [why for key, why in failed.items() if key[:4] == _key_of(a)]
    if mine and a.why is None:
      a = dataclasses.replace(a, why=Why(Gap.ROWS_FAILED, message=mine[0]))
    out.append(a)
  return tuple(out)


def _key_of(a: Invariance) -> tuple:
  return (a.case, a.target, a.precision, a.experiment)
