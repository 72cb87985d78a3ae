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
from hloprobe.sites import dot_sites, effective, passes

__all__ = [
  "MAX_BATCH_SIZE",
  "MAX_BATCH_SIZES",
  "ConfigResult",
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


@dataclasses.dataclass(frozen=True)
class ConfigResult:
  """Everything one config produced.

  Attributes:
    case, target, n, precision, experiment: the config.
    error: first line of the error when a stage failed, else None.
    stage: the stage that failed ("lower", "compile", "run", ...), or None.
    stablehlo, optimized_hlo: module texts, or None if not reached.
    fates: what each StableHLO dot site became.
    stats: errors against float64 of the output leaf the row is about (the
      prediction's `leaf` where there is one, else the leaf with the
      largest max_rel); None when not run.
    leaf_stats: the errors of every output leaf (tree_leaves order).
    output_dtype: the dtype of `stats`'s leaf, e.g. "bfloat16".
    ulp_vs_n1: row 0 (batch element 0) here against row 0 at batch 1, max
      over its values and the batched leaves, in ULPs of each leaf's dtype
      (None when either did not run, n = 1 is not swept, or no leaf is
      batched).
    lower_s, compile_s, run_s: wall times in seconds, or None.
    passes: site index -> the pass that rewrote it (with --explain_passes;
      a site absent here stayed a plain dot).
    passes_error: why pass attribution failed, or None.
    prediction: the emulated numerics at the sites' effective algorithms,
      with noise floor, attribution and verdict (see `predict`).
    prediction_error: why there is no prediction, or None.
    ptxas: the ptxas that built the GPU kernels, as "PATH (CUDA 12.9.86,
      via ...)"; None on CPU or when not reached.
    dropped_config_fields: target-config fields dropped so the installed
      proto could load the config, e.g. ("GpuDeviceInfoProto.mem_clock_ghz",).
    timings: stage name -> exclusive wall seconds spent on this config
      (`timing.STAGES`; a case's inputs and reference are charged to its
      first config).
  """

  case: str
  target: str
  n: int
  precision: str
  experiment: str = BASELINE.name
  error: str | None = None
  stage: str | None = None
  stablehlo: str | None = None
  optimized_hlo: str | None = None
  fates: tuple[dot_sites.SiteFate, ...] = ()
  stats: accuracy.ErrorStats | None = None
  leaf_stats: tuple[accuracy.ErrorStats, ...] = ()
  output_dtype: str | None = None
  ulp_vs_n1: int | None = None
  lower_s: float | None = None
  compile_s: float | None = None
  run_s: float | None = None
  passes: dict[int, passes.PassAttribution] | None = None
  passes_error: str | None = None
  prediction: predict.Prediction | None = None
  prediction_error: str | None = None
  ptxas: str | None = None
  dropped_config_fields: tuple[str, ...] = ()
  timings: dict[str, float] = dataclasses.field(default_factory=dict)

  @property
  def ok(self) -> bool:
    return self.error is None


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
  base = ConfigResult(case.name, target.name, n, precision)
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
    result = dataclasses.replace(
      base,
      stablehlo=cc.stablehlo,
      optimized_hlo=cc.optimized_hlo,
      fates=tuple(fates),
      lower_s=cc.lower_s,
      compile_s=cc.compile_s,
      ptxas=str(cc.ptxas) if cc.ptxas else None,
      dropped_config_fields=cc.dropped_config_fields,
    )
    if explain_passes:
      with watch.stage("passes"):
        result = _with_passes(result, cc.pass_dumps)
    if target.compile_only:
      return result
    stage = "run"
    with watch.stage("run"):
      outs, run_s = lowering.run_compiled(cc, args)
    result = dataclasses.replace(result, run_s=run_s)
    if references is None:
      return result
    with watch.stage("reference"):
      at_n = references.at(n)
    leaves = tuple(
      accuracy.error_stats(out, ref, axis, name)
      for out, ref, axis, name in zip(
        outs, at_n, references.axes, references.names
      )
    )
    return _with_headline(
      dataclasses.replace(result, leaf_stats=leaves),
      max(range(len(leaves)), key=lambda i: (leaves[i].max_rel, -i)),
    )
  except Exception as e:  # one config's failure must not lose the others
    return dataclasses.replace(base, error=_first_line(e), stage=stage)


def _with_headline(r: ConfigResult, leaf: int) -> ConfigResult:
  """`r` with `stats` (and its dtype) taken from output leaf `leaf`."""
  stats = r.leaf_stats[leaf]
  return dataclasses.replace(
    r, stats=stats, output_dtype=str(stats.row0_values.dtype)
  )


def _with_passes(r: ConfigResult, dumps) -> ConfigResult:
  """Attaches pass attribution; a failure is recorded, not raised."""
  try:
    found = passes.attribute_passes(dumps, [f.site for f in r.fates])
  except Exception as e:  # attribution is extra; the config stays ok
    return dataclasses.replace(r, passes_error=_first_line(e))
  return dataclasses.replace(r, passes=found)


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
  if not r.fates or not r.ok:
    return r
  if predictor is None:
    return dataclasses.replace(r, prediction_error=why)
  try:
    prediction = predictor.predict(r.n, r.fates, r.leaf_stats or None, watch)
  except Exception as e:  # prediction is extra; the config stays ok
    return dataclasses.replace(r, prediction_error=_first_line(e))
  r = dataclasses.replace(r, prediction=prediction)
  if r.leaf_stats:
    names = [s.leaf for s in r.leaf_stats]
    r = _with_headline(r, names.index(prediction.leaf))
  return r


def _ulp_vs(a: accuracy.ErrorStats, b: accuracy.ErrorStats) -> int | None:
  """Row 0 of two runs of the same leaf apart, in ULPs; None if unbatched."""
  if a.axis is None or a.row0_values.shape != b.row0_values.shape:
    return None
  return accuracy.ulp_distance(
    a.row0_values, b.row0_values, a.row0_values.dtype
  )


def _with_batch_consistency(results: list[ConfigResult]) -> list[ConfigResult]:
  """Fills `ulp_vs_n1` from the n = 1 result of the same case/target/precision."""
  key = lambda r: (r.experiment, r.case, r.target, r.precision)
  at_n1 = {key(r): r for r in results if r.n == 1 and r.leaf_stats}
  out = []
  for r in results:
    base = at_n1.get(key(r))
    if r.leaf_stats and base is not None:
      found = [
        u
        for a, b in zip(r.leaf_stats, base.leaf_stats)
        if (u := _ulp_vs(a, b)) is not None
      ]
      if found:
        r = dataclasses.replace(r, ulp_vs_n1=max(found))
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
        get_case(c).name,
        t,
        n,
        p,
        experiment=experiment.name,
        error=str(e),
        stage="worker",
      )
      for c, t, p, n in _configs(spec)
    ]
  return [dataclasses.replace(r, experiment=experiment.name) for r in results]


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
    get_case(case_name).name,
    target.name,
    n,
    precision,
    error=broken,
    stage="compile",
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
            fingerprint, target, precision, n, largest, spec.explain_passes
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
        self.case.name,
        target.name,
        n,
        precision,
        error=str(lie),
        stage="reference",
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
      watch.add("lower", r.lower_s or 0.0)  # spent in the worker
      watch.add("compile", r.compile_s or 0.0)
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
