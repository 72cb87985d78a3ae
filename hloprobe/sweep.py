"""The sweep: every (case, target, precision, batch size) config, in order.

It drives the stages and holds no analysis: lower and compile
(`lowering`), parse (`hlo`, `stablehlo`), map dot sites
(`dot_sites`), run and compare (`accuracy`). One failing config records its
error and the sweep goes on. Compile-only GPU targets are loaded and
compiled in a persistent worker process (`worker.WorkerPool`): XLA can die
on a config it does not expect (SIGFPE on `threads_per_warp: 0`, jaxlib
0.10.2), and that death is then one config's failure.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import logging
import os
import re
import time
from collections.abc import Callable

from hloprobe.compile import cache, lowering, timing, worker
from hloprobe.compile.cases import Case, get_case, resolvable_elsewhere
from hloprobe.compile.experiments import BASELINE, Experiment
from hloprobe.compile.targets import Target, get_target, is_config_path
from hloprobe.errors import CaseError, InvalidArgumentError
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
  "SweepProgress",
  "SweepSpec",
  "compile_config",
  "load_target",
  "parse_batch_sizes",
  "run_sweep",
]


@dataclasses.dataclass(frozen=True)
class SweepSpec:
  """What to sweep; every name already checked.

  Attributes:
    cases: case names.
    batch_sizes: positive batch sizes, in the order given.
    precisions: matmul precision names (see `precisions.parse_precision`).
    targets: target names.
    explain_passes: also name the XLA pass that rewrote each dot site
      (each compile also dumps the module after every pass; see `passes`).
    experiments: XLA_FLAGS experiments run beside the baseline, each in its
      own worker process.
    cache_dir: folder of the persistent record cache (see `cache`), or None
      to compute every config. Only successful configs are stored.
    jobs: how many experiments' worker processes run at once, beside the
      baseline (1: one after another, after the baseline). Results keep
      their order whatever it is.
  """

  cases: tuple[str, ...]
  batch_sizes: tuple[int, ...]
  precisions: tuple[str, ...]
  targets: tuple[str, ...]
  explain_passes: bool = False
  experiments: tuple[Experiment, ...] = ()
  cache_dir: str | None = None
  jobs: int = 1

  def __post_init__(self):
    # One rule for every list: a name (or size) given twice is swept once,
    # where it first appears.
    for field in ("cases", "batch_sizes", "precisions", "experiments"):
      object.__setattr__(
        self, field, tuple(dict.fromkeys(getattr(self, field)))
      )
    names = [e.name for e in self.experiments]
    if len(set(names)) != len(names) or BASELINE.name in names:
      raise InvalidArgumentError(
        f"experiment names must be unique and not 'baseline': {names}"
      )
    _check_cases(self.cases)
    for name in self.precisions:
      parse_precision(name)
    object.__setattr__(self, "targets", _check_target_names(self.targets))
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


def _same_target(a: str, b: str) -> bool:
  """One built-in name, or two paths of one config file."""
  if a == b:
    return True
  files = is_config_path(a) and is_config_path(b)
  return files and os.path.realpath(a) == os.path.realpath(b)


def _check_target_names(words: tuple[str, ...]) -> tuple[str, ...]:
  """Every target loads, and no two share a name (rows and output folders
  are keyed by it; a config file's target is named after the file).

  Returns:
    `words` with repeats of one target (`cpu,cpu`; `x.txtpb` and
    `./x.txtpb`) dropped after their first.

  Raises:
    InvalidArgumentError: an unknown target or bad config, or a shared name.
  """
  seen: dict[str, str] = {}
  for word in words:
    name = get_target(word).name
    if name in seen and not _same_target(seen[name], word):
      raise InvalidArgumentError(
        f"targets {seen[name]!r} and {word!r} are both named {name!r}; rows "
        "and output folders are keyed by the name: rename a config file "
        "(a config's target is named after its file)"
      )
    seen.setdefault(name, word)
  return tuple(seen.values())


@dataclasses.dataclass(frozen=True, slots=True)
class SweepProgress:
  """Where a running sweep is, given to `run_sweep`'s `progress` callable.

  Attributes:
    done: configs finished so far (an experiment's configs finish together,
      when its worker process returns).
    total: all configs of the sweep, experiments included.
    current: what runs now, e.g. "a100 seed_mlp n=3 bfloat16" or
      "experiment no_triton_gemm (worker process)"; "" once all are done.
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


def _first_line(e: BaseException) -> str:
  text = str(e).strip().splitlines()
  return f"{type(e).__name__}: {text[0] if text else ''}".strip()


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
  """Lowers, compiles, analyses and (where possible) runs one config.

  With `explain_passes`, the compile dumps every pass and each dot site is
  attributed to the pass that rewrote it (see `passes`). `watch`, if
  given, is charged the time of each stage.
  """
  watch = watch or timing.Stopwatch()
  config = Config(case.name, target, n, precision)
  stage = "compile"
  try:
    args = case.inputs_for(full_inputs, n)
    start = time.perf_counter()
    cc = lowering.compile_case(
      case, args, parse_precision(precision), target, dump_passes=explain_passes
    )
    watch.add("lower", cc.lower_s)
    watch.add("compile", time.perf_counter() - start - cc.lower_s)
    stage = "analyse"
    with watch.stage("parse"):
      sites = parse_stablehlo_dots(cc.stablehlo)
      module = parse_hlo_module(cc.optimized_hlo)
      ptx_kernels = [k for text in cc.ptx for k in ptx.parse_ptx(text)]
    with watch.stage("sites"):
      fates = dot_sites.map_dot_sites(sites, module)
      fates = effective.resolve(
        fates, module, ptx_kernels, target, cc.compute_capability
      )
    compilation = Compilation(
      stablehlo=cc.stablehlo,
      optimized_hlo=cc.optimized_hlo,
      fates=tuple(fates),
      ptxas=str(cc.ptxas) if cc.ptxas else None,
      dropped_config_fields=cc.dropped_config_fields,
      lower_s=cc.lower_s,
      compile_s=cc.compile_s,
    )
    if explain_passes:
      with watch.stage("passes"):
        compilation = _with_passes(compilation, cc.pass_dumps)
    result = ConfigResult(config, compilation)
    if target.compile_only:
      return result
    stage = "run"
    with watch.stage("run"):
      outs, run_s = lowering.run_compiled(cc, args)
    if references is None:
      return dataclasses.replace(result, execution=Execution(run_s))
    with watch.stage("reference"):
      at_n = references.at(n)
    leaves = tuple(
      accuracy.error_stats(out, ref, axis, name)
      for out, ref, axis, name in zip(
        outs, at_n, references.axes, references.names
      )
    )
    headline = max(range(len(leaves)), key=lambda i: (leaves[i].max_rel, -i))
    return dataclasses.replace(
      result, execution=Execution(run_s, leaves, headline)
    )
  except Exception as e:  # one config's failure must not lose the others
    return ConfigResult(config, failure=Failure(stage, _first_line(e)))


def _with_passes(c: Compilation, dumps) -> Compilation:
  """Attaches pass attribution; a failure is recorded, not raised."""
  try:
    found = passes.attribute_passes(dumps, [f.site for f in c.fates])
  except Exception as e:  # attribution is extra; the config stays ok
    return dataclasses.replace(c, passes_error=_first_line(e))
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
    return None, None, f"no float64 reference: {_first_line(e)}"


def _predictor(case, full, references, why: str | None):
  """(a case's predictor, None), or (None, why it cannot be made)."""
  if references is None:
    return None, why
  try:
    return predict.Predictor(case, full, references), None
  except Exception as e:
    return None, f"no predictor: {_first_line(e)}"


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
    return dataclasses.replace(r, prediction_error=_first_line(e))
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


def _configs(spec: SweepSpec):
  for case in spec.cases:
    for target in spec.targets:
      for precision in spec.precisions:
        for n in spec.batch_sizes:
          yield case, target, precision, n


def _run_experiment(
  spec: SweepSpec, experiment: Experiment, pool: worker.WorkerPool
) -> list[ConfigResult]:
  """The sweep under an experiment's XLA_FLAGS, in a worker process."""
  inner = dataclasses.replace(spec, experiments=())
  try:
    results = pool.call("run_sweep", {"spec": inner}, experiment.flags_text)
  except worker.WorkerError as e:
    return [
      ConfigResult(
        Config(get_case(c).name, get_target(t), n, p, experiment.name),
        failure=Failure("worker", str(e)),
      )
      for c, t, p, n in _configs(spec)
    ]
  return [
    dataclasses.replace(
      r, config=dataclasses.replace(r.config, experiment=experiment.name)
    )
    for r in results
  ]


def run_sweep(
  spec: SweepSpec,
  progress: Callable[[SweepProgress], None] | None = None,
  on_result: Callable[[ConfigResult], None] | None = None,
  pool: worker.WorkerPool | None = None,
) -> list[ConfigResult]:
  """Runs every config of a sweep, the baseline here and experiments in workers.

  Args:
    spec: what to sweep.
    progress: optional callable, given a `SweepProgress` before each
      baseline config and each experiment starts, and once at the end
      (`current` == ""); the command line draws its progress line with it.
    on_result: optional callable given each baseline `ConfigResult` as it
      completes (e.g. to stream results to disk).
    pool: the worker processes to use; None: a pool of this call's own,
      ended when it returns or raises.

  Returns:
    One `ConfigResult` per config: the baseline's ordered case, target,
    precision, n; then each experiment's in the same order.

  Raises:
    TargetError: XLA rejects a compile-only target's config (before any
      config runs).
  """
  if pool is None:
    with worker.WorkerPool() as own:
      return run_sweep(spec, progress, on_result, own)
  _check_case_sizes(spec)
  broken = _load_targets(spec, pool)
  tell = progress or (lambda _: None)
  total = spec.config_count
  with concurrent.futures.ThreadPoolExecutor(max(1, spec.jobs)) as ahead:
    # With jobs > 1 the experiments' workers start now, beside the baseline.
    early = [
      ahead.submit(_run_experiment, spec, e, pool)
      for e in (spec.experiments if spec.jobs > 1 else ())
    ]
    results = _run_baseline(
      spec,
      lambda done, now: tell(SweepProgress(done, total, now)),
      on_result,
      pool,
      broken,
    )
    for i, experiment in enumerate(spec.experiments):
      tell(
        SweepProgress(
          len(results), total, f"experiment {experiment.name} (worker process)"
        )
      )
      if early:
        results += early[i].result()
      else:
        results += _run_experiment(spec, experiment, pool)
  tell(SweepProgress(len(results), total, ""))
  return _with_batch_consistency(results)


def _check_cases(names) -> None:
  """Every case resolves, its batch axes fit, and none is named twice.

  Raises:
    CaseError: an unknown or broken case, a batch axis out of range,
      arguments that disagree on the batch size, or a name given twice.
  """
  seen: dict[str, str] = {}
  for name in names:
    case = get_case(name)
    if ":" in name:  # a user's: axes in range, one batch size
      _case_inputs(name)  # made once; the sweep reuses them
    label = case.name
    if name in seen.values() or label in seen:
      also = "" if seen.get(label, name) == name else f" (as {seen[label]!r})"
      raise CaseError(
        f"case {label!r} given twice{also}; each case may be swept once"
      )
    seen[label] = name


def _check_case_sizes(spec: SweepSpec) -> None:
  """A batch size larger than a case's rows is bad input, found up front.

  Raises:
    InvalidArgumentError: names the case, its rows and the largest size.
  """
  largest = max(spec.batch_sizes)
  for name in spec.cases:
    full = _case_inputs(name)
    if full is None:  # a sized case makes its inputs at each size
      continue
    rows = get_case(name).full_size(full)
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
  """Loads every compile-only target in a worker, before any config runs.

  Returns target name -> why the worker died loading it (those targets'
  configs fail with that line, without compiling).
  """
  broken = {}
  for name in spec.targets:
    target = get_target(name)
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


def compile_config(
  case_name: str, target: Target, precision: str, n: int, explain_passes: bool
) -> ConfigResult:
  """`run_config` for a compile-only target, without a reference (in a
  worker); `case_name` as the sweep names it (a user's `file.py:factory`
  too)."""
  case = get_case(case_name)
  full = _case_inputs(case_name)
  return run_config(case, full, None, target, precision, n, explain_passes)


def _isolated_config(
  pool: worker.WorkerPool,
  case_name: str,
  target: Target,
  precision: str,
  n: int,
  explain_passes: bool,
  broken_targets: dict[str, str],
) -> ConfigResult:
  """A compile-only config, compiled in a worker; its death is this failure.

  A target in `broken_targets` (its worker died loading it) fails at once.
  """
  broken = broken_targets.get(target.name)
  if broken is None:
    try:
      return pool.call(
        "compile_config",
        {
          "case_name": case_name,
          "target": target,
          "precision": precision,
          "n": n,
          "explain_passes": explain_passes,
        },
      )
    except worker.WorkerError as e:
      broken = str(e)
  return ConfigResult(
    Config(get_case(case_name).name, target, n, precision),
    failure=Failure("compile", broken),
  )


def _run_baseline(
  spec: SweepSpec,
  starting,
  on_result,
  pool: worker.WorkerPool,
  broken: dict[str, str],
) -> list[ConfigResult]:
  """The baseline configs in order; `starting(done, label)` before each,
  `on_result(result)` after each. Compile-only targets compile in `pool`'s
  workers (XLA may die on them); `broken` names targets that failed to
  load."""
  store = cache.RecordCache(spec.cache_dir) if spec.cache_dir else None
  results = []
  for case_name in spec.cases:
    case = get_case(case_name)
    watch = timing.Stopwatch()  # the case's first config pays for its setup
    with watch.stage("inputs"):
      full = _case_inputs(case_name)
    setup = _CaseSetup(case_name, case, full, spec.batch_sizes, pool, broken)
    with watch.stage("cache"):
      fingerprint = _fingerprint(store, case, full)
    largest = max(spec.batch_sizes)
    for target_name in spec.targets:
      target = get_target(target_name)
      for precision in spec.precisions:
        for n in spec.batch_sizes:
          starting(len(results), f"{target_name} {case_name} n={n} {precision}")
          key = fingerprint and cache.config_key(
            fingerprint,
            target,
            precision,
            n,
            largest,
            spec.explain_passes,
            record_version=RECORD_VERSION,
          )
          r = _through_cache(
            store,
            key,
            functools.partial(setup.run, target, precision, n, spec, watch),
            watch,
          )
          r = dataclasses.replace(r, timings=watch.seconds())
          watch = timing.Stopwatch()
          results.append(r)
          if on_result is not None:
            on_result(r)
  return results


class _CaseSetup:
  """A case's references and predictor, made when a config first needs them
  (a warm rerun from the cache makes neither)."""

  def __init__(
    self,
    case_name: str,
    case: Case,
    full: tuple | None,
    sizes: tuple[int, ...],
    pool: worker.WorkerPool,
    broken: dict[str, str],
  ):
    self.name, self.case = case_name, case
    self.full, self.sizes = full, sizes
    self.pool, self.broken = pool, broken
    self._made = None

  def run(self, target, precision, n, spec, watch) -> ConfigResult:
    """`run_config` and its prediction; the first call makes the setup.

    A compile-only target compiles in a worker (XLA may die on it), where
    the worker can find the case by name (not a case added to `CASES` at
    run time: that one compiles here). A case
    that lied about `rows_independent` fails every config at stage
    "reference", naming the case.
    """
    if self._made is None:
      with watch.stage("reference"):
        references, lie, why = _references(self.case, self.full, self.sizes)
        predictor, why = _predictor(self.case, self.full, references, why)
      self._made = references, lie, predictor, why
    references, lie, predictor, why = self._made
    if lie is not None:
      return ConfigResult(
        Config(self.case.name, target, n, precision),
        failure=Failure("reference", str(lie)),
      )
    if target.compile_only and resolvable_elsewhere(self.name):
      r = _isolated_config(
        self.pool,
        self.name,
        target,
        precision,
        n,
        spec.explain_passes,
        self.broken,
      )
      if r.compilation is not None:  # spent in the worker
        watch.add("lower", r.compilation.lower_s or 0.0)
        watch.add("compile", r.compilation.compile_s or 0.0)
    else:
      r = run_config(
        self.case,
        self.full,
        references,
        target,
        precision,
        n,
        spec.explain_passes,
        watch,
      )
    return _with_prediction(r, predictor, why, watch)


def _fingerprint(store, case: Case, full: tuple) -> str | None:
  """The case's cache fingerprint; None without a store or when it fails."""
  if store is None:
    return None
  try:
    return cache.case_fingerprint(case, full)
  except Exception as e:  # the sweep still runs, uncached
    logging.warning("hloprobe: not caching case %s: %s", case.name, e)
    return None


def _through_cache(store, key, compute, watch) -> ConfigResult:
  """The record stored under `key`, or `compute()` (stored when ok).

  Without a key (no --cache_dir, or an uncacheable case) it computes.
  """
  if not key:
    return compute()
  with watch.stage("cache"):
    hit = store.get(key)
  if isinstance(hit, ConfigResult):
    return hit
  r = compute()
  if r.ok:
    with watch.stage("cache"):
      store.put(key, dataclasses.replace(r, timings={}))
  return r
