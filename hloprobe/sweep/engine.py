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
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import logging
import os
import re
import threading
import time
from collections.abc import Callable

import jax
import numpy as np

from hloprobe.compile import cache, lowering, timing, worker
from hloprobe.compile.cases import Case, get_case, resolvable_elsewhere
from hloprobe.compile.experiments import BASELINE, Experiment
from hloprobe.compile.targets import Target, get_target, is_config_path
from hloprobe.errors import CaseError, InvalidArgumentError, first_line
from hloprobe.ir import ptx
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.precisions import parse_precision
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.numerics import accuracy, predict, reference
from hloprobe.records import (
  RECORD_VERSION,
  Compilation,
  Config,
  ConfigResult,
  Execution,
  Failure,
)
from hloprobe.sites import dot_sites, effective, passes

__all__ = [
  "MAX_BATCH_SIZE",
  "MAX_BATCH_SIZES",
  "CompiledConfig",
  "SweepProgress",
  "SweepSpec",
  "compile_and_run",
  "load_target",
  "parse_batch_sizes",
  "run_sweep",
]


@dataclasses.dataclass(frozen=True)
class SweepSpec:
  """What to sweep, as records looked up once; every name already checked.

  Cases and targets may be given as names (then looked up here, once: a
  target's config file is read once per sweep) or as records with the
  names they were looked up by (`case_names`, `target_names`).

  Attributes:
    cases: `Case` records.
    batch_sizes: positive batch sizes, in the order given.
    precisions: matmul precision names (see `precisions.parse_precision`).
    targets: `Target` records.
    explain_passes: also name the XLA pass that rewrote each dot site
      (each compile also dumps the module after every pass; see `passes`).
    experiments: XLA_FLAGS experiments run beside the baseline; their
      configs compile in workers under their flags, as the baseline's do
      under the user's (see `run_sweep`).
    cache_dir: folder of the persistent record cache (see `cache`), or None
      to compute every config. Only successful configs are stored.
    jobs: how many worker processes compile and run at once (see
      `run_sweep`); results keep their order whatever it is.
    case_names: the name each case was looked up by (`seed_mlp`,
      `path/to/file.py:factory`): a worker process finds the case by it.
    target_names: the word each target was looked up by (`a100`, or a
      config file's path as given): what MANIFEST.json records.
  """

  cases: tuple[Case | str, ...]
  batch_sizes: tuple[int, ...]
  precisions: tuple[str, ...]
  targets: tuple[Target | str, ...]
  explain_passes: bool = False
  experiments: tuple[Experiment, ...] = ()
  cache_dir: str | None = None
  jobs: int = 1
  case_names: tuple[str, ...] = ()
  target_names: tuple[str, ...] = ()

  def __post_init__(self):
    # One rule for every list: a name (or size) given twice is swept once,
    # where it first appears.
    for field in ("batch_sizes", "precisions", "experiments"):
      object.__setattr__(
        self, field, tuple(dict.fromkeys(getattr(self, field)))
      )
    names = [e.name for e in self.experiments]
    if len(set(names)) != len(names) or BASELINE.name in names:
      raise InvalidArgumentError(
        f"experiment names must be unique and not 'baseline': {names}"
      )
    cases = _looked_up(self.cases, self.case_names, get_case)
    _check_cases(cases)
    targets = _check_target_names(
      _looked_up(self.targets, self.target_names, get_target)
    )
    for field, pairs in (("case", cases), ("target", targets)):
      object.__setattr__(self, f"{field}s", tuple(r for _, r in pairs))
      object.__setattr__(self, f"{field}_names", tuple(w for w, _ in pairs))
    for name in self.precisions:
      parse_precision(name)
    if not self.batch_sizes or min(self.batch_sizes) < 1:
      raise InvalidArgumentError(
        f"batch sizes must be positive integers, got {self.batch_sizes}"
      )

  @property
  def config_count(self) -> int:
    """How many configs the sweep runs, each experiment's included."""
    per_run = (
      len(self.cases)
      * len(self.targets)
      * len(self.precisions)
      * len(self.batch_sizes)
    )
    return per_run * (1 + len(self.experiments))


def _looked_up(items, names, lookup) -> list[tuple[str, object]]:
  """(name, record) pairs of names or records, a name given twice once.

  A name is looked up with `lookup`; a record keeps its name from `names`
  (same length as `items`), else takes its own `.name`.
  """
  if len(names) != len(items):
    names = [None] * len(items)
  found: dict[str, object] = {}
  for item, name in zip(items, names):
    word = item if isinstance(item, str) else name or item.name
    if word not in found:
      found[word] = lookup(item) if isinstance(item, str) else item
  return list(found.items())


def _same_target(a: tuple[str, Target], b: tuple[str, Target]) -> bool:
  """One built-in name, or two paths of one config file."""
  if a[0] == b[0]:
    return True
  files = is_config_path(a[0]) and is_config_path(b[0])
  return files and os.path.realpath(a[0]) == os.path.realpath(b[0])


def _check_target_names(pairs) -> list[tuple[str, Target]]:
  """No two targets share a name (rows and output folders are keyed by
  it; a config file's target is named after the file).

  Args:
    pairs: (word, Target) as `_looked_up` gives them.

  Returns:
    `pairs` with repeats of one target (`x.txtpb` and `./x.txtpb`) dropped
    after their first.

  Raises:
    InvalidArgumentError: two targets share a name.
  """
  seen: dict[str, tuple[str, Target]] = {}
  for word, target in pairs:
    first = seen.get(target.name)
    if first is not None and not _same_target(first, (word, target)):
      raise InvalidArgumentError(
        f"targets {first[0]!r} and {word!r} are both named {target.name!r}; "
        "rows and output folders are keyed by the name: rename a config "
        "file (a config's target is named after its file)"
      )
    seen.setdefault(target.name, (word, target))
  return list(seen.values())


@dataclasses.dataclass(frozen=True, slots=True)
class SweepProgress:
  """Where a running sweep is, given to `run_sweep`'s `progress` callable.

  Attributes:
    done: configs collected so far, in config order.
    total: all configs of the sweep, experiments included.
    current: the config collected next, e.g. "a100 seed_mlp n=3 bfloat16"
      or "cpu seed_mlp n=1 float32 [no_algsimp]"; "" once all are done.
  """

  done: int
  total: int
  current: str


# Stated maxima, checked before any list is built: a batch size (rows of
# the batched argument) and the number of batch sizes in one sweep.
MAX_BATCH_SIZE = 1 << 20
MAX_BATCH_SIZES = 4096
# ASCII digits only ([0-9], not \\d: `int` would read '١' and '１'), at most
# as many as MAX_BATCH_SIZE has, so no huge integer is ever made.
_ITEM_RE = re.compile(r"([0-9]{1,7})(?:-([0-9]{1,7}))?")


def _bad_batch_size(
  item: str, text: str, why: str = ""
) -> InvalidArgumentError:
  return InvalidArgumentError(
    f"bad batch size {item!r} in --batch_sizes={text!r}{why}; expected "
    f"positive integers and ascending ranges up to {MAX_BATCH_SIZE}, at "
    f"most {MAX_BATCH_SIZES} sizes, e.g. '1,2,4-9,64'"
  )


def parse_batch_sizes(text: str) -> tuple[int, ...]:
  """Parses `1,2,4-9,64` into (1, 2, 4, 5, 6, 7, 8, 9, 64).

  Sizes are ASCII integers in [1, MAX_BATCH_SIZE]; at most MAX_BATCH_SIZES
  of them, counted before any range is expanded. A size given twice is
  kept once, where it first appears.

  Raises:
    InvalidArgumentError: an item is not a positive integer or an ascending range,
      or the limits above are exceeded.
  """
  bounds, count = [], 0
  for item in text.split(","):
    item = item.strip()
    m = _ITEM_RE.fullmatch(item)
    if m is None:
      raise _bad_batch_size(item, text)
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if not 1 <= lo <= hi <= MAX_BATCH_SIZE:
      raise _bad_batch_size(item, text)
    count += hi - lo + 1
    if count > MAX_BATCH_SIZES:
      raise _bad_batch_size(item, text, f": more than {MAX_BATCH_SIZES} sizes")
    bounds.append((lo, hi))
  sizes = (n for lo, hi in bounds for n in range(lo, hi + 1))
  return tuple(dict.fromkeys(sizes))


@dataclasses.dataclass(frozen=True)
class CompiledConfig:
  """What a worker sends back for one config (pickled).

  Attributes:
    result: the config with its `Compilation` (no `Execution` and no
      prediction yet: the main process adds them), or with the `Failure`
      of the stage that stopped it.
    outputs: the run's output leaves as numpy arrays (`tree_leaves`
      order), or None when the target does not run or a stage failed.
    run_s: wall seconds of the run, or None when it did not run.
    timings: stage name -> exclusive wall seconds spent in the worker.
  """

  result: ConfigResult
  outputs: tuple[np.ndarray, ...] | None = None
  run_s: float | None = None
  timings: dict[str, float] = dataclasses.field(default_factory=dict)


def compile_and_run(
  case_name: str, target: Target, precision: str, n: int, explain_passes: bool
) -> CompiledConfig:
  """One config's work in a worker: lower, compile, parse, map sites and,
  for a target that runs (`cpu`, `gpu`), run it.

  Args:
    case_name: the name the sweep looked the case up by (a user's
      `file.py:factory` too); the worker looks it up again.
    target: the target record, whole.
    precision, n: the config.
    explain_passes: also attribute each site to the pass that rewrote it.
  """
  case = get_case(case_name)
  full = _case_inputs(case_name)
  return _compile_and_run(case, full, target, precision, n, explain_passes)


def _compile_and_run(
  case: Case,
  full: tuple | None,
  target: Target,
  precision: str,
  n: int,
  explain_passes: bool,
) -> CompiledConfig:
  """`compile_and_run` with the case's record and full inputs in hand.

  Before each stage it notes the stage (`worker.note_stage`), so a worker
  that dies in it names it.
  """
  watch = timing.Stopwatch()
  config = Config(case.name, target, n, precision)
  stage = "compile"
  try:
    worker.note_stage(stage)
    args = case.inputs_for(full, n)
    start = time.perf_counter()
    cc = lowering.compile_case(
      case, args, parse_precision(precision), target, dump_passes=explain_passes
    )
    watch.add("lower", cc.lower_s)
    watch.add("compile", time.perf_counter() - start - cc.lower_s)
    stage = "analyse"
    worker.note_stage(stage)
    compilation = _analysed(cc, target, watch)
    if explain_passes:
      with watch.stage("passes"):
        compilation = _with_passes(compilation, cc.pass_dumps)
    result = ConfigResult(config, compilation)
    if target.compile_only:
      return CompiledConfig(result, timings=watch.seconds())
    stage = "run"
    worker.note_stage(stage)
    with watch.stage("run"):
      outs, run_s = lowering.run_compiled(cc, args)
    return CompiledConfig(result, outs, run_s, watch.seconds())
  except Exception as e:  # one config's failure must not lose the others
    failed = ConfigResult(config, failure=Failure(stage, first_line(e)))
    return CompiledConfig(failed, timings=watch.seconds())


def _analysed(cc, target: Target, watch) -> Compilation:
  """The compiled config's texts and its dot sites' fates."""
  with watch.stage("parse"):
    sites = parse_stablehlo_dots(cc.stablehlo)
    module = parse_hlo_module(cc.optimized_hlo)
    ptx_kernels = [k for text in cc.ptx for k in ptx.parse_ptx(text)]
  with watch.stage("sites"):
    fates = dot_sites.map_dot_sites(sites, module)
    fates = effective.resolve(
      fates, module, ptx_kernels, target, cc.compute_capability
    )
  return Compilation(
    stablehlo=cc.stablehlo,
    optimized_hlo=cc.optimized_hlo,
    fates=tuple(fates),
    ptxas=str(cc.ptxas) if cc.ptxas else None,
    dropped_config_fields=cc.dropped_config_fields,
    lower_s=cc.lower_s,
    compile_s=cc.compile_s,
  )


def _with_stats(
  work: CompiledConfig, references: reference.References | None, watch
) -> ConfigResult:
  """The worker's result with its `Execution`: run seconds and, with
  `references`, the outputs' errors against float64 (in this process); a
  failure is the config's, at stage "run"."""
  r = work.result
  if not r.ok or work.run_s is None:
    return r
  if work.outputs is None or references is None:
    return dataclasses.replace(r, execution=Execution(work.run_s))
  try:
    with watch.stage("reference"):
      at_n = references.at(r.config.n)
    leaves = tuple(
      accuracy.error_stats(out, ref, axis, name)
      for out, ref, axis, name in zip(
        work.outputs, at_n, references.axes, references.names
      )
    )
  except Exception as e:  # one config's failure must not lose the others
    return _failed(r, first_line(e), "run")
  headline = max(range(len(leaves)), key=lambda i: (leaves[i].max_rel, -i))
  return dataclasses.replace(
    r, execution=Execution(work.run_s, leaves, headline)
  )


def _failed(r: ConfigResult, error: str, stage: str) -> ConfigResult:
  """A failed record of `r`'s config (nothing else of `r` kept)."""
  return ConfigResult(r.config, failure=Failure(stage, error))


def run_config(
  case: Case,
  full_inputs: tuple | None,
  references: reference.References | None,
  target: Target,
  precision: str,
  n: int,
  explain_passes: bool = False,
  watch: timing.Stopwatch | None = None,
) -> ConfigResult:
  """Lowers, compiles, analyses and (where possible) runs one config here,
  in this process (the sweep does this in workers: `compile_and_run`).

  With `explain_passes`, the compile dumps every pass and each dot site is
  attributed to the pass that rewrote it (see `passes`). With
  `references`, the outputs' errors against float64 are added. `watch`,
  if given, is charged the time of each stage.
  """
  watch = watch or timing.Stopwatch()
  work = _compile_and_run(
    case, full_inputs, target, precision, n, explain_passes
  )
  for name, seconds in work.timings.items():
    watch.add(name, seconds)
  return _with_stats(work, references, watch)


def _with_passes(c: Compilation, dumps) -> Compilation:
  """Attaches pass attribution; a failure is recorded, not raised."""
  try:
    found = passes.attribute_passes(dumps, [f.site for f in c.fates])
  except Exception as e:  # attribution is extra; the config stays ok
    return dataclasses.replace(c, passes_error=first_line(e))
  return dataclasses.replace(c, passes=found)


def _references(case, full, sizes):
  """(References, None, None), (None, the case's error, None), or (None,
  None, why the numerics are n/a).

  A case that lies about `rows_independent` is an error of the case; any
  other failure leaves the numerics n/a, with its cause.
  """
  try:
    refs = reference.References(case, full, sizes)
    refs.at(refs.largest)  # made now, so a failure says why up front
    return refs, None, None
  except CaseError as e:
    return None, e, None
  except Exception as e:  # configs still compile; numerics say n/a
    return None, None, f"no float64 reference: {first_line(e)}"


def _predictor(case, full, references, why: str | None):
  """(a case's predictor, None), or (None, why it cannot be made)."""
  if references is None:
    return None, why
  try:
    return predict.Predictor(case, full, references), None
  except Exception as e:
    return None, f"no predictor: {first_line(e)}"


def _with_prediction(
  r: ConfigResult,
  predictor: predict.Predictor | None,
  why: str | None,
  watch: timing.Stopwatch | None = None,
) -> ConfigResult:
  """Attaches the predicted numerics; a failure is recorded, not raised.

  `why` says why there is no predictor when `predictor` is None.
  """
  if not r.ok or not r.compilation.fates:
    return r
  if predictor is None:
    return dataclasses.replace(r, prediction_error=why)
  run = r.execution
  leaves = run.leaf_stats if run is not None else ()
  try:
    prediction = predictor.predict(
      r.config.n, r.compilation.fates, leaves or None, watch
    )
  except Exception as e:  # prediction is extra; the config stays ok
    return dataclasses.replace(r, prediction_error=first_line(e))
  r = dataclasses.replace(r, prediction=prediction)
  if leaves:
    names = [s.leaf for s in leaves]
    r = _with_headline(r, names.index(prediction.leaf))
  return r


def _with_headline(r: ConfigResult, leaf: int) -> ConfigResult:
  """`r` with its execution's headline taken from output leaf `leaf`."""
  return dataclasses.replace(
    r, execution=dataclasses.replace(r.execution, headline=leaf)
  )


def _ulp_vs(a: accuracy.ErrorStats, b: accuracy.ErrorStats) -> int | None:
  """Row 0 of two runs of the same leaf apart, in ULPs; None if unbatched."""
  if a.axis is None or a.row0_values.shape != b.row0_values.shape:
    return None
  return accuracy.ulp_distance(
    a.row0_values, b.row0_values, a.row0_values.dtype
  )


def _leaf_stats(r: ConfigResult) -> tuple[accuracy.ErrorStats, ...]:
  return r.execution.leaf_stats if r.execution is not None else ()


def _with_batch_consistency(results: list[ConfigResult]) -> list[ConfigResult]:
  """Fills each execution's `ulp_vs_n1` from the n = 1 result of the same
  experiment, case, target and precision."""
  key = lambda c: (c.experiment, c.case, c.target.name, c.precision)
  at_n1 = {
    key(r.config): r for r in results if r.config.n == 1 and _leaf_stats(r)
  }
  out = []
  for r in results:
    base = at_n1.get(key(r.config))
    if _leaf_stats(r) and base is not None:
      found = [
        u
        for a, b in zip(_leaf_stats(r), _leaf_stats(base))
        if (u := _ulp_vs(a, b)) is not None
      ]
      if found:
        run = dataclasses.replace(r.execution, ulp_vs_n1=max(found))
        r = dataclasses.replace(r, execution=run)
    out.append(r)
  return out


@dataclasses.dataclass(frozen=True)
class _Config:
  """One config of a sweep, by its flag set and case index."""

  experiment: Experiment
  case: int
  target: Target
  precision: str
  n: int


def _configs(spec: SweepSpec) -> list[_Config]:
  """Every config in output order: the baseline's (case, target,
  precision, n), then each experiment's in the same order."""
  return [
    _Config(e, i, t, p, n)
    for e in (BASELINE, *spec.experiments)
    for i in range(len(spec.cases))
    for t in spec.targets
    for p in spec.precisions
    for n in spec.batch_sizes
  ]


def _label(spec: SweepSpec, c: _Config) -> str:
  """A config in words, e.g. "a100 seed_mlp n=3 bfloat16 [no_algsimp]"."""
  name = spec.case_names[c.case]
  text = f"{c.target.name} {name} n={c.n} {c.precision}"
  return text if c.experiment is BASELINE else f"{text} [{c.experiment.name}]"


def run_sweep(
  spec: SweepSpec,
  progress: Callable[[SweepProgress], None] | None = None,
  on_result: Callable[[ConfigResult], None] | None = None,
  pool: worker.WorkerPool | None = None,
) -> list[ConfigResult]:
  """Runs every config of a sweep, each in a worker process.

  Every config (any target) is lowered, compiled, parsed, site-mapped
  and, where the target runs (`cpu`, `gpu`), run in a worker process
  keyed by its XLA_FLAGS: the user's for the baseline, the user's then
  the experiment's for an experiment (`worker.worker_xla_flags`). XLA can
  die on a config it does not expect (SIGFPE on `threads_per_warp: 0`,
  jaxlib 0.10.2); the death is that config's failure, naming the stage,
  the signal and XLA's last lines, and the next config gets a fresh
  worker. This process keeps the case inputs, the float64 references,
  the predictions (emulation on the CPU), the errors against the
  references, batch consistency and the cache, on the CPU device (JAX's
  default device is set to it here: this process never allocates on an
  attached GPU, which the workers share). References and predictions are
  made once per case and shared by the baseline and every experiment: the
  float64 reference does not depend on XLA_FLAGS, by design.

  `spec.jobs` worker processes run at once: each of the E flag sets
  (baseline and experiments) gets max(1, jobs // E) lanes, its configs
  dealt to them in turn, each lane one worker. Results are collected in
  config order, so the output and `on_result`'s order do not depend on
  jobs. A case added to `CASES` at run time (not found by name in another
  process, see `resolvable_elsewhere`) compiles and runs here instead,
  for the baseline only (an experiment's configs of it fail, stage
  "worker").

  Args:
    spec: what to sweep.
    progress: optional callable, given a `SweepProgress` before each
      config is collected, and once at the end (`current` == ""); the
      command line draws its progress line with it.
    on_result: optional callable given each `ConfigResult` as it is
      collected (e.g. to stream results to disk).
    pool: the worker processes to use; None: a pool of this call's own,
      ended when it returns or raises. On an exception or interrupt the
      pool is closed (its workers killed) before this returns.

  Returns:
    One `ConfigResult` per config: the baseline's ordered case, target,
    precision, n; then each experiment's in the same order.

  Raises:
    TargetError: XLA rejects a compile-only target's config (before any
      config runs).
    InvalidArgumentError: a batch size exceeds a case's rows.
  """
  if pool is None:
    with worker.WorkerPool(_worker_platforms(spec), _PRELOAD) as own:
      return run_sweep(spec, progress, on_result, own)
  _check_case_sizes(spec)
  tell = progress or (lambda _: None)
  sweep = _Sweep(spec, pool)
  sweep.start_workers()  # they import jax while the targets load
  sweep.broken = _load_targets(spec, pool)
  results = []
  with (
    concurrent.futures.ThreadPoolExecutor(max(1, spec.jobs)) as lanes,
    jax.default_device(jax.devices("cpu")[0]),  # never a GPU here
  ):
    try:
      sweep.dispatch(lanes)
      for i, c in enumerate(sweep.configs):
        tell(SweepProgress(i, len(sweep.configs), _label(spec, c)))
        results.append(sweep.collect(i))
        if on_result is not None:
          on_result(results[-1])
    except BaseException:  # an interrupt: unblock the lanes, then go
      sweep.stop.set()
      pool.close(kill=True)
      lanes.shutdown(wait=False, cancel_futures=True)
      raise
  tell(SweepProgress(len(results), len(results), ""))
  return _with_batch_consistency(results)


# What a sweep's own workers import as they start (`WorkerPool` preload).
_PRELOAD = ("hloprobe.sweep",)


def _worker_platforms(spec: SweepSpec) -> str | None:
  """JAX_PLATFORMS for a sweep's workers: with an attached GPU target the
  user's JAX_PLATFORMS or JAX's own choice (""), else this process's."""
  if any(t.platform == "cuda" and not t.compile_only for t in spec.targets):
    return os.environ.get("JAX_PLATFORMS", "")
  return None


class _Sweep:
  """One sweep's configs, their cache lookups, lanes and per-case setups.

  Only `dispatch`'s lane threads call workers; everything else (cache,
  references, predictions) runs on the calling thread.
  """

  def __init__(self, spec, pool):
    self.spec, self.pool = spec, pool
    self.broken: dict[str, str] = {}  # see `_load_targets`
    self.configs = _configs(spec)
    self.stop = threading.Event()
    self.store = cache.RecordCache(spec.cache_dir) if spec.cache_dir else None
    self.setups = [
      _CaseSetup(name, case, spec.batch_sizes)
      for name, case in zip(spec.case_names, spec.cases)
    ]
    self.watches = [timing.Stopwatch() for _ in self.configs]
    self.keys = [self._key(c, w) for c, w in zip(self.configs, self.watches)]
    self.hits = [self._hit(k, w) for k, w in zip(self.keys, self.watches)]
    self.lanes = self._lanes()
    self.futures: dict[int, concurrent.futures.Future] = {}

  def _key(self, c: _Config, watch) -> str | None:
    """The config's cache key (see `cache.config_key`), or None."""
    if self.store is None:
      return None
    fingerprint = self.setups[c.case].fingerprint(watch)
    flags = worker.worker_xla_flags(
      os.environ.get("XLA_FLAGS", ""), c.experiment.flags_text
    )
    with watch.stage("cache"):
      return fingerprint and cache.config_key(
        fingerprint,
        c.target,
        c.precision,
        c.n,
        max(self.spec.batch_sizes),
        self.spec.explain_passes,
        xla_flags=flags,
        record_version=RECORD_VERSION,
      )

  def _hit(self, key: str | None, watch) -> ConfigResult | None:
    if not key:
      return None
    with watch.stage("cache"):
      hit = self.store.get(key)
    return hit if isinstance(hit, ConfigResult) else None

  def _lanes(self) -> list[tuple[str, int, list[int]]]:
    """(extra XLA_FLAGS, lane, config indices) of every lane with work:
    each flag set's configs that a worker must do, dealt in turn to its
    max(1, jobs // flag sets) lanes."""
    sets = (BASELINE, *self.spec.experiments)
    per_set = max(1, self.spec.jobs // len(sets))
    found = []
    for e in sets:
      todo = [
        i
        for i, c in enumerate(self.configs)
        if c.experiment is e
        and resolvable_elsewhere(self.spec.case_names[c.case])
        and self.hits[i] is None
      ]
      found += [
        (e.flags_text, lane, todo[lane::per_set])
        for lane in range(per_set)
        if todo[lane::per_set]
      ]
    return found

  def start_workers(self) -> None:
    """Starts every lane's worker (they warm up meanwhile)."""
    for flags, lane, _ in self.lanes:
      self.pool.start(flags, lane)

  def dispatch(self, lanes: concurrent.futures.Executor) -> None:
    """Submits every config a worker must do, one task per lane (not a
    config of a target that failed to load)."""
    for flags, lane, indices in self.lanes:
      mine = [
        i for i in indices if self.configs[i].target.name not in self.broken
      ]
      for i in mine:
        self.futures[i] = concurrent.futures.Future()
      if mine:
        lanes.submit(self._run_lane, flags, lane, mine)

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
        future.set_result(
          self.pool.call(
            "compile_and_run",
            {
              "case_name": self.spec.case_names[c.case],
              "target": c.target,
              "precision": c.precision,
              "n": c.n,
              "explain_passes": self.spec.explain_passes,
            },
            flags,
            lane=lane,
          )
        )
      except worker.WorkerError as e:
        if str(e).startswith("XLA rejected"):
          rejected = e
        future.set_exception(e)
      except BaseException as e:  # handed to the collecting thread
        future.set_exception(e)

  def collect(self, i: int) -> ConfigResult:
    """Config `i`'s record: from the cache, its worker or this process,
    with its statistics and prediction; stored in the cache when ok."""
    c, watch = self.configs[i], self.watches[i]
    setup = self.setups[c.case]
    r = self.hits[i]
    if r is None:
      setup.prepare(watch)  # here, while the worker compiles
      r = setup.finish(self._work(i), watch)
      if r.ok and self.keys[i]:
        with watch.stage("cache"):
          self.store.put(self.keys[i], dataclasses.replace(r, timings={}))
    config = dataclasses.replace(r.config, experiment=c.experiment.name)
    return dataclasses.replace(r, config=config, timings=watch.seconds())

  def _work(self, i: int) -> CompiledConfig:
    """Config `i`'s worker reply, or its failure as one."""
    c = self.configs[i]
    base = ConfigResult(
      Config(self.spec.cases[c.case].name, c.target, c.n, c.precision)
    )
    broken = self.broken.get(c.target.name)
    if broken is not None:
      return CompiledConfig(_failed(base, broken, "compile"))
    future = self.futures.get(i)
    if future is None:
      return self._here(c, base, self.watches[i])
    try:
      return future.result()
    except worker.WorkerError as e:
      return CompiledConfig(_failed(base, str(e), e.stage or "worker"))
    except Exception as e:  # raised in the worker, e.g. a CaseError
      return CompiledConfig(_failed(base, first_line(e), "worker"))

  def _here(self, c: _Config, base: ConfigResult, watch) -> CompiledConfig:
    """A config of a case found in this process only, done here."""
    if c.experiment is not BASELINE:
      return CompiledConfig(
        _failed(
          base,
          f"case {base.config.case!r} was added to CASES at run time: it exists in "
          "this process only, so it cannot compile under an experiment's "
          "XLA_FLAGS (in a worker)",
          "worker",
        )
      )
    setup = self.setups[c.case]
    return _compile_and_run(
      setup.case,
      setup.inputs(watch),
      c.target,
      c.precision,
      c.n,
      self.spec.explain_passes,
    )


def _check_cases(pairs) -> None:
  """Every case's batch axes fit, and no case is named twice.

  Args:
    pairs: (name looked up by, Case) as `_looked_up` gives them.

  Raises:
    CaseError: a batch axis out of range, arguments that disagree on the
      batch size, or one case given under two names.
  """
  seen: dict[str, str] = {}
  for name, case in pairs:
    if ":" in name:  # a user's: axes in range, one batch size
      _case_inputs(name)  # made once; the sweep reuses them
    if case.name in seen:
      raise CaseError(
        f"case {case.name!r} given twice (as {seen[case.name]!r}); each "
        "case may be swept once"
      )
    seen[case.name] = name


def _check_case_sizes(spec: SweepSpec) -> None:
  """A batch size larger than a case's rows is bad input, found up front.

  Raises:
    InvalidArgumentError: names the case, its rows and the largest size.
  """
  largest = max(spec.batch_sizes)
  for name, case in zip(spec.case_names, spec.cases):
    full = _case_inputs(name)
    if full is None:  # a sized case makes its inputs at each size
      continue
    rows = case.full_size(full)
    if largest > rows:
      raise InvalidArgumentError(
        f"batch size {largest} exceeds case {name!r}'s {rows} rows; use "
        f"--batch_sizes up to {rows}"
      )


def load_target(target: Target) -> tuple[str, ...]:
  """Loads a compile-only target's config into XLA (in a worker).

  Returns the fields dropped so the installed proto could read it.

  Raises:
    TargetError: XLA rejects the config.
  """
  return lowering.load_topology(target.name, target.config_text).dropped_fields


def _load_targets(spec: SweepSpec, pool: worker.WorkerPool) -> dict[str, str]:
  """Loads every compile-only target in the baseline's first worker,
  before any config runs.

  Returns target name -> why the worker died loading it (those targets'
  configs fail with that line, without compiling).
  """
  broken = {}
  for target in spec.targets:
    if target.compile_only:
      try:
        pool.call("load_target", {"target": target})
      except worker.WorkerError as e:
        broken[target.name] = f"loading the target config: {e}"
  return broken


@functools.lru_cache(maxsize=4)
def _case_inputs(case_name: str):
  """A case's full-size inputs, made once per process (read only); None
  for a case that makes its inputs at each size."""
  return get_case(case_name).full_inputs()


class _CaseSetup:
  """A case's inputs, fingerprint, references and predictor in the main
  process, each made when first needed (a warm rerun from the cache makes
  no reference) and shared by every target, precision and experiment.
  The time is charged to the stopwatch of the config that needs it first.
  """

  def __init__(self, name: str, case: Case, sizes: tuple[int, ...]):
    self.name, self.case, self.sizes = name, case, sizes
    self._full, self._print, self._made = None, None, None

  def inputs(self, watch) -> tuple | None:
    if self._full is None:
      with watch.stage("inputs"):
        self._full = (_case_inputs(self.name),)
    return self._full[0]

  def fingerprint(self, watch) -> str | None:
    """The case's cache fingerprint; None when it cannot be made."""
    if self._print is None:
      full = self.inputs(watch)
      with watch.stage("cache"):
        self._print = (_fingerprint(self.case, full),)
    return self._print[0]

  def prepare(self, watch) -> None:
    """Makes the references and the predictor (once)."""
    if self._made is None:
      full = self.inputs(watch)
      with watch.stage("reference"):
        references, lie, why = _references(self.case, full, self.sizes)
        predictor, why = _predictor(self.case, full, references, why)
      self._made = references, lie, predictor, why

  def finish(self, work: CompiledConfig, watch) -> ConfigResult:
    """A worker's reply with the errors against float64 and the prediction.

    A case that lied about `rows_independent` fails every config at stage
    "reference", naming the case.
    """
    for name, seconds in work.timings.items():
      watch.add(name, seconds)  # spent in the worker
    self.prepare(watch)
    references, lie, predictor, why = self._made
    if lie is not None:
      return _failed(work.result, str(lie), "reference")
    r = _with_stats(work, references, watch)
    return _with_prediction(r, predictor, why, watch)


def _fingerprint(case: Case, full: tuple) -> str | None:
  """The case's cache fingerprint; None when it fails."""
  try:
    return cache.case_fingerprint(case, full)
  except Exception as e:  # the sweep still runs, uncached
    logging.warning("hloprobe: not caching case %s: %s", case.name, e)
    return None
