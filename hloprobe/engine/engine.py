"""The sweep: every (case, target, precision, batch size) config, in order.

It drives the stages and holds no analysis: lower and compile
(`lowering`), parse (`hlo`, `stablehlo`), map dot sites
(`dot_sites`), run and compare (`accuracy`). One failing config records its
error and the sweep goes on. Every config is compiled (and run, on `cpu`
and `gpu`) in a persistent worker process (`worker.WorkerPool`): XLA can
die on a config it does not expect (SIGFPE on `threads_per_warp: 0`,
jaxlib 0.10.2), and that death is then one config's failure. This process
keeps the float64 references, the predictions and the cache; see
`run_sweep`.

Private in intent: use the package, `hloprobe.engine`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
from collections.abc import Callable, Sequence

import jax

from hloprobe.compile import BASELINE, Experiment
from hloprobe.engine.compiled import (
  CompiledConfig,
  CompileRequest,
  LoadTargetRequest,
  compile_and_run_case,
  failed,
)
from hloprobe.engine.executor import worker_pool
from hloprobe.engine.guarded import compile_guarded, setup_for
from hloprobe.engine.measure import (
  bits_only,
  with_batch_consistency,
  without_batch_consistency,
)
from hloprobe.engine.plan import (
  PlannedConfig,
  SweepPlan,
  check_case_sizes,
  plan_sweep,
)
from hloprobe.engine.shared import any_large, resolved, shapes, share
from hloprobe.engine.shell import source_folder
from hloprobe.engine.spec import SweepSpec
from hloprobe.errors import XlaFlagsError, first_line
from hloprobe.records import RECORD_VERSION, ConfigResult
from hloprobe.runtime import (
  RecordCache,
  Stopwatch,
  Warn,
  WorkerError,
  WorkerPool,
  log_warning,
)

__all__ = ["SweepProgress", "run_sweep"]


@dataclasses.dataclass(frozen=True, slots=True)
class SweepProgress:
  """Where a running sweep is, given to `run_sweep`'s `progress` callable.

  Attributes:
    done: configs collected so far, in config order.
    total: all configs of the sweep, experiments included.
    current: the config collected next, e.g. "a100 seed_mlp n=3 bfloat16"
      or "cpu seed_mlp n=1 float32 (no_algsimp)"; "" once all are done.
  """

  done: int
  total: int
  current: str


def run_sweep(
  spec: SweepSpec | SweepPlan,
  progress: Callable[[SweepProgress], None] | None = None,
  on_result: Callable[[ConfigResult], None] | None = None,
  pool: WorkerPool | None = None,
  warn: Warn | None = None,
  given: Sequence[tuple[SweepPlan, Sequence[ConfigResult]]] = (),
  lanes_done: Callable[[Callable[[int], tuple | None]], None] | None = None,
) -> list[ConfigResult]:
  """Runs every config of a sweep, each in a worker process.

  Every config (any target) is lowered, compiled, parsed, site-mapped
  and, where the target runs (`cpu`, `gpu`), run in a worker process
  keyed by its XLA_FLAGS: the user's for the baseline, the user's then
  the experiment's for an experiment (`WorkerPool.worker_flags`). XLA can
  die on a config it does not expect (SIGFPE on `threads_per_warp: 0`,
  jaxlib 0.10.2); the death is that config's failure, naming the stage,
  the signal and XLA's last lines, and the next config gets a fresh
  worker. This process keeps the case inputs, the float64 references,
  the predictions (emulation on the CPU), the errors against the
  references, batch consistency and the cache, on the CPU device (JAX's
  default device is set to it here: this process never allocates on an
  attached GPU, which the workers share). References and predictions are
  made once per case and shared by the baseline and every experiment: the
  float64 reference does not depend on XLA_FLAGS, by design. A config
  found in the cache needs no worker: a fully cached rerun starts none.
  When some config cannot be a hit (no cache, or fewer records than
  configs), the baseline's workers start before the inputs are made, so
  that they import jax meanwhile: its first, and with no record cached
  every lane that will get work (`_Sweep._early_lanes`).

  `spec.jobs` worker processes run at once: each of the E flag sets
  (baseline and experiments) gets max(1, jobs // E) lanes, its configs
  dealt to them by their estimated cost (those of one case, target and n
  together: `PlannedConfig.lanes_of`, `SweepPlan.dealt_lanes`), each lane
  one worker. Results are collected in config order, so the output and
  `on_result`'s order do not depend on jobs. A `Case` record given in the
  spec that another process cannot find by its name
  (`SweptCase.portable`) compiles and runs here instead, for the baseline
  only (an experiment's configs of it fail, stage "worker").

  Args:
    spec: what to sweep: a plan (`plan.plan_sweep`), or a spec planned
      here.
    progress: optional callable, given a `SweepProgress` before each
      config is collected, and once at the end (`current` == ""); the
      command line draws its progress line with it.
    on_result: optional callable given each `ConfigResult` as it is
      collected (e.g. to stream results to disk).
    pool: the worker processes to use; None: a pool of this call's own,
      ended when it returns or raises. On an exception or interrupt the
      pool is closed (its workers killed) before this returns.
    warn: given one line for what costs speed, never results (a cache
      entry that cannot be read or written, a case that cannot be
      fingerprinted); None: `cache.log_warning`.
    given: earlier sweeps' (plan, its records), e.g.
      explain's sweep and its first fix try for the next try: a config
      they hold ok (the same case record and source, target, precision,
      size and experiment flags, the same --all_rows and --inputs) is
      taken from them, as a cache hit is (`_given_records`), not
      computed again; without the cache too (--nocache).
    lanes_done: optional callable, called once when every lane has sent
      its last config's request and had its reply (at once when no config
      needs a worker), while this call still collects the records: its
      workers are then free for other requests (explain's batch-invariance
      rows, issue 37). It is given case index -> that case's full inputs
      as the lanes sent them (None for a case with no config here), and
      runs on a lane's thread, so it must return at once (start a thread
      for anything long). Not called when the sweep is stopped.

  Returns:
    One `ConfigResult` per config: the baseline's ordered case, target,
    precision, n; then each experiment's in the same order.

  Raises:
    TargetError: XLA rejects a compile-only target's config (before any
      config runs).
    CaseError: a case's inputs do not fit its batch axes.
    InvalidArgumentError: a batch size exceeds a case's rows; as
      `plan.plan_sweep` for a spec.
  """
  spec = plan_sweep(spec)  # a plan passes through, looked up already
  if pool is None:
    with worker_pool(spec) as own:
      return run_sweep(spec, progress, on_result, own, warn, given, lanes_done)
  tell = progress or (lambda _: None)
  known = _given_records(spec, given)
  sweep = _Sweep(spec, pool, warn or log_warning, known)  # inputs, cache
  sweep.start_workers()  # they import jax while the targets load
  if sweep.any_work:  # a fully cached rerun starts no worker
    sweep.broken = _load_targets(spec, pool)
  results = []
  with (
    concurrent.futures.ThreadPoolExecutor(max(1, spec.jobs)) as lanes,
    jax.default_device(jax.devices("cpu")[0]),  # never a GPU here
  ):
    try:
      sweep.dispatch(lanes, lanes_done)
      for i, c in enumerate(sweep.configs):
        tell(SweepProgress(i, len(sweep.configs), c.config.label()))
        results.append(sweep.collect(i))
        if on_result is not None:
          on_result(results[-1])
    except BaseException:  # an interrupt: unblock the lanes, then go
      sweep.stop.set()
      pool.close(kill=True)
      lanes.shutdown(wait=False, cancel_futures=True)
      raise
  tell(SweepProgress(len(results), len(results), ""))
  return with_batch_consistency(results)


def _when_all(
  futures: Sequence[concurrent.futures.Future], then: Callable[[], None]
) -> None:
  """`then()` once every future in `futures` is done, on the thread that
  finished the last one (at once, here, for none)."""
  left, lock = len(futures), threading.Lock()

  def one_done(_) -> None:
    nonlocal left
    with lock:
      left -= 1
      last = left == 0
    if last:
      then()

  if not futures:
    then()
  for f in futures:
    f.add_done_callback(one_done)


class _Sweep:
  """One sweep's configs, their cache lookups, lanes and per-case setups.

  Only `dispatch`'s lane threads call workers; everything else (cache,
  references, predictions) runs on the calling thread.
  """

  def __init__(self, spec, pool, warn: Warn, known: dict | None = None):
    self.spec, self.pool = spec, pool
    self.known = known or {}  # see `_given_records`
    self.broken: dict[str, str] = {}  # see `_load_targets`
    self.configs = spec.configs()
    self.stop = threading.Event()
    self.store = None
    if spec.cache_dir:
      self.store = RecordCache(spec.cache_dir, warn).usable()
    if self._surely_misses():
      # The baseline's workers import jax while the cases' inputs are
      # made (here, or in a user case's worker: decode's took 4.4 s, and
      # its compile workers, started after them, began 7.6 s into the
      # sweep).
      for flags, lane in self._early_lanes():
        pool.start(flags, lane)
    self.setups = [
      setup_for(
        c,
        spec.sizes_of(c),
        warn,
        pool,
        spec.case_timeout_s,
        bool(self.store),
        spec.all_rows,
      )
      for c in spec.cases
    ]
    self.hung: dict[int, str] = {}  # case index -> its timeout, one line
    # Where each case's source paths are stored relative to in the cache.
    self.case_dirs = [source_folder(c.case) for c in spec.cases]
    self.watches = [Stopwatch() for _ in self.configs]
    # Each case's full inputs, made once (the lanes send them): large ones
    # as files the processes share (`shared`).
    self.inputs = [
      self._shared(self._inputs(i)) for i in range(len(spec.cases))
    ]
    check_case_sizes(spec, [shapes(x) for x in self.inputs])
    self.keys = [self._key(c, w) for c, w in zip(self.configs, self.watches)]
    self.hits = [
      self._hit(c, k, w)
      for c, k, w in zip(self.configs, self.keys, self.watches)
    ]
    self.any_work = any(hit is None for hit in self.hits)
    self.lanes = self._lanes()
    self.futures: dict[int, concurrent.futures.Future] = {}

  def _surely_misses(self) -> bool:
    """True when some config cannot be a cache hit, known before any input
    is made: no cache, or fewer records in it than the sweep has distinct
    configs (a cheap count; the lookups need each case's inputs)."""
    if self.store is None:
      return True
    distinct = {
      (c.experiment.flags_text, c.case_index, c.config.target.name)
      + (c.config.precision, c.config.n)
      for c in self.configs
    }
    return not self.store.holds_at_least(len(distinct))

  def _early_lanes(self) -> list[tuple[str, int]]:
    """The baseline's (extra XLA_FLAGS, lane) to start before any input
    is made: lane 0 of its own flags (target loading uses it,
    `_load_targets`), and the lanes the plan deals its configs to
    (`SweepPlan.dealt_lanes`) that get one an earlier sweep's records
    (`known`) do not hold. Where the record cache holds any record, lane
    0 alone: a hit is not known before the inputs are made."""
    lanes = {(BASELINE.flags_text, 0): None}
    if self.store is not None and self.store.holds_at_least(1):
      return list(lanes)
    for c, at in zip(self.configs, self.spec.dealt_lanes()):
      if at is not None and c.experiment is BASELINE:
        if _reuse_key(c) not in self.known:
          lanes[at] = None
    return list(lanes)

  def _inputs(self, case: int) -> tuple | None:
    """Case `case`'s full inputs (made once, `CaseSetup`), charged to the
    stopwatch of its first config; None when none of this sweep's configs
    is of it (a `--shard` without it)."""
    mine = (i for i, c in enumerate(self.configs) if c.case_index == case)
    first = next(mine, None)
    if first is None:
      return None
    return self.setups[case].inputs(self.watches[first])

  def _shared(self, full):
    """A case's inputs as the lanes send them: large ones written once to
    a folder the local pool shares (`shared.share`; a user case's worker
    did so already); as they are for a pool of other machines (Ray)."""
    folder = getattr(self.pool, "shared_folder", None)
    if folder is None:
      return resolved(full)
    if not any_large(full):
      return full
    try:
      return share(full, folder())
    except OSError:  # no room: the arrays go as they are
      return resolved(full)

  def _key(self, c: PlannedConfig, watch) -> str | None:
    """The config's cache key (see `CaseKey.config_key`), or None."""
    if self.store is None:
      return None
    fingerprint = self.setups[c.case_index].fingerprint(watch)
    flags = self.pool.worker_flags(_flags(c))
    with watch.stage("cache"):
      return fingerprint and fingerprint.config_key(
        c.config.target,
        c.config.precision,
        c.config.n,
        max(self.spec.sizes_of(c.case)),
        self.spec.explain_passes,
        xla_flags=flags,
        record_version=RECORD_VERSION,
        all_rows=self.spec.all_rows,
        numerics=self.spec.numerics,
      )

  def _hit(self, c: PlannedConfig, key: str | None, watch):
    """The record of config `c` an earlier sweep made (`given`), else the
    cached one, carrying `c.config` (the key has the experiment's flags,
    not its name), or None."""
    known = self.known.get(_reuse_key(c))
    if known is not None:
      reused = dataclasses.replace(known, config=c.config)
      if key and reused.ok:  # a later sweep of these flags hits it too
        with watch.stage("cache"):
          if not self.store.has(key):
            self.store.put(
              key,
              dataclasses.replace(reused, timings={}),
              self.case_dirs[c.case_index],
            )
      return reused
    if not key:
      return None
    with watch.stage("cache"):
      hit = self.store.get(key, self.case_dirs[c.case_index])
    if not isinstance(hit, ConfigResult):
      return None
    return dataclasses.replace(hit, config=c.config)

  def _lanes(self) -> list[tuple[str, int, list[int]]]:
    """(extra XLA_FLAGS, lane, config indices) of every lane with work:
    the lane the plan deals each config to (`SweepPlan.dealt_lanes`:
    every portable config, done or not, so that each lands where the
    batch-invariance answer asks its rows and kernels; dealt without the
    hits, a config moved to another lane and the answer compiled it
    again), given those a worker must do (`_todo`). A lane may so get
    less work than another."""
    found: dict[tuple[str, int], list[int]] = {}
    for i, at in enumerate(self.spec.dealt_lanes()):
      if at is not None and self._todo(i):
        found.setdefault(at, []).append(i)
    return [(flags, lane, mine) for (flags, lane), mine in found.items()]

  def _todo(self, i: int) -> bool:
    """Whether a worker must do config i: no record of it was found and
    its case is not broken."""
    c = self.configs[i]
    return self.hits[i] is None and self.setups[c.case_index].broken is None

  def start_workers(self) -> None:
    """Starts every lane's worker (they warm up meanwhile), and ends a
    local pool's workers of other flag sets, which an earlier sweep on the
    pool started (`WorkerPool.retire`): explain's fix tries under flags of
    their own. The baseline's workers are kept: the batch-invariance
    answer, after the fix tries, reads the compiles they kept (`KEPT`)."""
    retire = getattr(self.pool, "retire", None)  # a RayPool keeps its own
    if retire is not None:
      # The baseline's flags, and each case's: a sharded case's workers
      # have its host devices among them.
      sets = dict.fromkeys(
        [BASELINE.flags_text, *(_flags(c, BASELINE) for c in self.configs)]
      )
      baseline = [
        (f, lane) for f in sets for lane in range(max(1, self.spec.jobs))
      ]
      retire([*baseline, *((flags, lane) for flags, lane, _ in self.lanes)])
    for flags, lane, _ in self.lanes:
      self.pool.start(flags, lane)

  def dispatch(self, lanes: concurrent.futures.Executor, done=None) -> None:
    """Submits every config a worker must do, one task per lane (not a
    config of a target that failed to load); `done` (`run_sweep`'s
    `lanes_done`), if given, is called once every lane's task ended,
    unless the sweep was stopped."""
    submitted = []
    for flags, lane, indices in self.lanes:
      mine = [
        i
        for i in indices
        if self.configs[i].config.target.name not in self.broken
      ]
      for i in mine:
        self.futures[i] = concurrent.futures.Future()
      if mine:
        submitted.append(lanes.submit(self._run_lane, flags, lane, mine))
    if done is not None:
      inputs = lambda case: self.inputs[case]
      _when_all(submitted, lambda: None if self.stop.is_set() else done(inputs))

  def _run_lane(self, flags: str, lane: int, indices: list[int]) -> None:
    """A lane's configs, one after another on its worker (a thread)."""
    rejected = None  # XLA rejected the flags: no worker of them starts
    for i in indices:
      future, c = self.futures[i], self.configs[i]
      if self.stop.is_set() or not future.set_running_or_notify_cancel():
        continue
      try:
        if rejected is not None:
          raise rejected
        future.set_result(self._compiled(c, flags, lane))
      except XlaFlagsError as e:
        rejected = e
        future.set_exception(e)
      except BaseException as e:  # handed to the collecting thread
        future.set_exception(e)

  def _compiled(self, c: PlannedConfig, flags: str, lane: int):
    """Config `c`'s worker reply; a user case's, under the case timeout
    (`guarded.compile_guarded`): once one of its configs ran past it, its
    later configs fail with that line, unrun (each would wait as long)."""
    hung = self.hung.get(c.case_index)
    if hung is None:
      request = CompileRequest(
        c.config,
        c.case.source,
        self.inputs[c.case_index],
        self.spec.explain_passes,
        self.spec.inputs,
        self.spec.batch_arg,
        self.pool.worker_flags(flags),
        # Only for a user case, whose records are made in a worker too
        # (`guarded`): both processes run numpy's BLAS on one thread
        # (`process._ONE_BLAS_THREAD`). A built-in case's are made in this
        # process, on OpenBLAS's threads, and a float64 gemm's last bits
        # follow the thread count: made here, as before (made in a worker,
        # tf_127577's, tm_mm's and jax_22557's `made.deviation_abs` moved
        # by 1e-9 to 1e-14 against this process's reference, check40).
        made=self.spec.numerics and c.case.guarded,
        all_rows=self.spec.all_rows,
      )
      if not c.case.guarded:
        return self.pool.call(request, flags, lane=lane)
      timeout_s = self.spec.case_timeout_s
      reply, hung = compile_guarded(self.pool, request, flags, lane, timeout_s)
      if hung is None:
        return reply
      self.hung[c.case_index] = hung
    return CompiledConfig(failed(ConfigResult(c.config), hung, "worker"))

  def collect(self, i: int) -> ConfigResult:
    """Config `i`'s record: from the cache, its worker or this process,
    with its statistics and prediction; stored in the cache when ok."""
    c, watch = self.configs[i], self.watches[i]
    setup = self.setups[c.case_index]
    r = self.hits[i]
    if r is None and not self.spec.numerics:
      r = bits_only(self._work(i), watch)
    elif r is None:
      setup.prepare(watch)  # here, while the worker compiles
      r = setup.finish(self._work(i), watch)
      if r.ok and self.keys[i]:
        with watch.stage("cache"):
          self.store.put(
            self.keys[i],
            dataclasses.replace(r, timings={}),
            self.case_dirs[c.case_index],
          )
    return dataclasses.replace(r, timings=watch.seconds())

  def _work(self, i: int) -> CompiledConfig:
    """Config `i`'s worker reply, or its failure as one."""
    c = self.configs[i]
    base = ConfigResult(c.config)
    broken = self.broken.get(c.config.target.name)
    if broken is not None:
      return CompiledConfig(failed(base, broken, "compile"))
    case_broken = self.setups[c.case_index].broken
    if case_broken is not None and i not in self.futures:
      return CompiledConfig(failed(base, case_broken, "worker"))
    future = self.futures.get(i)
    if future is None:
      return self._here(c, base, self.watches[i])
    try:
      return future.result()
    except WorkerError as e:
      return CompiledConfig(failed(base, str(e), e.stage or "worker"))
    except XlaFlagsError as e:  # no stage: the worker did not start
      return CompiledConfig(failed(base, str(e), "worker"))
    except Exception as e:  # raised in the worker, e.g. a CaseError
      return CompiledConfig(failed(base, first_line(e), "worker"))

  def _here(
    self, c: PlannedConfig, base: ConfigResult, watch
  ) -> CompiledConfig:
    """A config of a case found in this process only, done here."""
    if c.experiment is not BASELINE:
      return CompiledConfig(
        failed(
          base,
          f"case {base.config.case!r} exists in this process only (a "
          "record no other process finds by its name), so it cannot "
          "compile under an experiment's XLA_FLAGS (in a worker)",
          "worker",
        )
      )
    setup = self.setups[c.case_index]
    return compile_and_run_case(
      setup.case,
      setup.inputs(watch),
      c.config,
      self.spec.explain_passes,
      xla_flags=self.pool.worker_flags(BASELINE.flags_text),
    )


def _reuse_key(c: PlannedConfig) -> tuple:
  """What makes two configs of sweeps with the same --all_rows and
  --inputs one (`_given_records`): the very case record and its words,
  the target, precision and size, and the worker's extra XLA_FLAGS."""
  config = c.config
  return (
    id(c.case.case),
    c.case.source,
    config.target,
    config.precision,
    config.n,
    _flags(c),
  )


def _given_records(spec: SweepPlan, given) -> dict:
  """`_reuse_key` -> record, of the ok records of the earlier sweeps
  `given` (plan, its records, found by their `Config`) whose --all_rows and
  --inputs are `spec`'s and whose largest size per case is `spec`'s (the
  noise floor and reference are cut from it: `CaseKey.config_key`'s
  "largest").

  A record with numerics serves a sweep of the bits only
  (`SweepSpec.numerics` False), not the other way round. A record of a
  sweep with --explain_passes serves one without, its pass
  attribution dropped, unless what XLA made changed the math (its changes
  name their passes: it is computed again); a record without passes
  never serves a sweep that asks for them.
  """
  found = {}
  for plan, records in given:
    if (plan.all_rows, plan.inputs) != (spec.all_rows, spec.inputs):
      continue
    if spec.numerics and not plan.numerics:
      continue  # the bits only never serve a sweep that wants numerics
    if spec.explain_passes and not plan.explain_passes:
      continue
    by_config = {r.config: r for r in records}
    for c in plan.configs():
      r = by_config.get(c.config)
      if r is None or not r.ok or id(c.case.case) not in _case_ids(spec):
        continue
      if max(plan.sizes_of(c.case)) != max(spec.sizes_of(c.case)):
        continue
      if plan.explain_passes and not spec.explain_passes:
        if r.made is not None and r.made.changes:
          continue
        compilation = dataclasses.replace(
          r.compilation, passes=None, passes_error=None
        )
        r = dataclasses.replace(r, compilation=compilation)
      # Its batch consistency is the new sweep's to find (`run_sweep`).
      found[_reuse_key(c)] = without_batch_consistency([r])[0]
  return found


def _case_ids(spec: SweepPlan) -> set[int]:
  return {id(c.case) for c in spec.cases}


def _flags(c: PlannedConfig, experiment: Experiment | None = None) -> str:
  """The extra XLA_FLAGS of config `c`'s worker
  (`PlannedConfig.worker_flags`), or of its case under `experiment`."""
  if experiment is None:
    return c.worker_flags
  return dataclasses.replace(c, experiment=experiment).worker_flags


def _load_targets(spec: SweepPlan, pool: WorkerPool) -> dict[str, str]:
  """Loads every compile-only target in the baseline's first worker,
  before any config runs.

  Returns target name -> why the worker died loading it (those targets'
  configs fail with that line, without compiling).
  """
  broken = {}
  for target in spec.targets:
    if target.compile_only:
      try:
        pool.call(LoadTargetRequest(target))
      except (WorkerError, XlaFlagsError) as e:
        broken[target.name] = f"loading the target config: {e}"
  return broken
