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

import dataclasses
import functools
import os
import re

import numpy as np

from hloprobe.compile import lowering, worker
from hloprobe.compile.cases import Case, get_case
from hloprobe.compile.experiments import BASELINE, Experiment
from hloprobe.compile.targets import Target, get_target, is_config_path
from hloprobe.errors import UsageError
from hloprobe.ir import ptx
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.precisions import parse_precision
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.numerics import accuracy, predict
from hloprobe.sites import dot_sites, effective, passes

__all__ = [
  "MAX_BATCH_SIZE",
  "MAX_BATCH_SIZES",
  "ConfigResult",
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
  """

  cases: tuple[str, ...]
  batch_sizes: tuple[int, ...]
  precisions: tuple[str, ...]
  targets: tuple[str, ...]
  explain_passes: bool = False
  experiments: tuple[Experiment, ...] = ()

  def __post_init__(self):
    # One rule for every list: a name (or size) given twice is swept once,
    # where it first appears.
    for field in ("cases", "batch_sizes", "precisions", "experiments"):
      object.__setattr__(
        self, field, tuple(dict.fromkeys(getattr(self, field)))
      )
    names = [e.name for e in self.experiments]
    if len(set(names)) != len(names) or BASELINE.name in names:
      raise UsageError(
        f"experiment names must be unique and not 'baseline': {names}"
      )
    for name in self.cases:
      get_case(name)
    for name in self.precisions:
      parse_precision(name)
    object.__setattr__(self, "targets", _check_target_names(self.targets))
    if not self.batch_sizes or min(self.batch_sizes) < 1:
      raise UsageError(
        f"batch sizes must be positive integers, got {self.batch_sizes}"
      )


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
    UsageError: an unknown target or bad config, or a shared name.
  """
  seen: dict[str, str] = {}
  for word in words:
    name = get_target(word).name
    if name in seen and not _same_target(seen[name], word):
      raise UsageError(
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
    stats: errors against float64 (None when not run).
    ulp_vs_n1: row 0 here against row 0 at batch 1, in ULPs of the output
      dtype (None when either did not run or n = 1 is not swept).
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
  fates: tuple[dot_sites.DotFate, ...] = ()
  stats: accuracy.ErrorStats | None = None
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

  @property
  def ok(self) -> bool:
    return self.error is None


# Stated maxima, checked before any list is built: a batch size (rows of
# the batched argument) and the number of batch sizes in one sweep.
MAX_BATCH_SIZE = 1 << 20
MAX_BATCH_SIZES = 4096
# ASCII digits only ([0-9], not \\d: `int` would read '١' and '１'), at most
# as many as MAX_BATCH_SIZE has, so no huge integer is ever made.
_ITEM_RE = re.compile(r"([0-9]{1,7})(?:-([0-9]{1,7}))?")


def _bad_batch_size(item: str, text: str, why: str = "") -> UsageError:
  return UsageError(
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
    UsageError: an item is not a positive integer or an ascending range,
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
  full_inputs: tuple,
  reference: np.ndarray | None,
  target: Target,
  precision: str,
  n: int,
  explain_passes: bool = False,
) -> ConfigResult:
  """Lowers, compiles, analyses and (where possible) runs one config.

  With `explain_passes`, the compile dumps every pass and each dot site is
  attributed to the pass that rewrote it (see `passes`).
  """
  base = ConfigResult(case.name, target.name, n, precision)
  stage = "compile"
  try:
    args = case.inputs_for(full_inputs, n)
    cc = lowering.compile_case(
      case, args, parse_precision(precision), target, dump_passes=explain_passes
    )
    stage = "analyse"
    sites = parse_stablehlo_dots(cc.stablehlo)
    module = parse_hlo_module(cc.optimized_hlo)
    fates = dot_sites.map_dot_sites(sites, module)
    ptx_kernels = [k for text in cc.ptx for k in ptx.parse_ptx(text)]
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
      result = _with_passes(result, cc.pass_dumps)
    if target.compile_only:
      return result
    stage = "run"
    out, run_s = lowering.run_compiled(cc, args)
    stats = None
    if reference is not None:
      ref = np.take(reference, np.arange(n), axis=case.output_axis)
      stats = accuracy.error_stats(out, ref)
    return dataclasses.replace(
      result, stats=stats, output_dtype=str(out.dtype), run_s=run_s
    )
  except Exception as e:  # one config's failure must not lose the others
    return dataclasses.replace(base, error=_first_line(e), stage=stage)


def _with_passes(r: ConfigResult, dumps) -> ConfigResult:
  """Attaches pass attribution; a failure is recorded, not raised."""
  try:
    found = passes.attribute_passes(dumps, [f.site for f in r.fates])
  except Exception as e:  # attribution is extra; the config stays ok
    return dataclasses.replace(r, passes_error=_first_line(e))
  return dataclasses.replace(r, passes=found)


def _predictor(case, full, reference) -> predict.Predictor | None:
  """A case's predictor; None (numerics say n/a) if it cannot be made."""
  if reference is None:
    return None
  try:
    return predict.Predictor(case, full, reference)
  except Exception:  # e.g. a scalar first output: no batch axis to cut
    return None


def _with_prediction(
  r: ConfigResult, predictor: predict.Predictor | None
) -> ConfigResult:
  """Attaches the predicted numerics; a failure is recorded, not raised."""
  if not r.fates:
    return r
  if predictor is None:
    return dataclasses.replace(r, prediction_error="no float64 reference")
  try:
    prediction = predictor.predict(r.n, r.fates, r.stats)
  except Exception as e:  # prediction is extra; the config stays ok
    return dataclasses.replace(r, prediction_error=_first_line(e))
  return dataclasses.replace(r, prediction=prediction)


def _with_batch_consistency(results: list[ConfigResult]) -> list[ConfigResult]:
  """Fills `ulp_vs_n1` from the n = 1 result of the same case/target/precision."""
  key = lambda r: (r.experiment, r.case, r.target, r.precision)
  row0_n1 = {key(r): r for r in results if r.n == 1 and r.stats is not None}
  out = []
  for r in results:
    base = row0_n1.get(key(r))
    if (
      r.stats is not None
      and base is not None
      and r.output_dtype in ("float16", "float32", "float64")
    ):
      ulp = accuracy.ulp_distance(r.stats.row0, base.stats.row0, r.output_dtype)
      r = dataclasses.replace(r, ulp_vs_n1=ulp)
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
        c, t, n, p, experiment=experiment.name, error=str(e), stage="worker"
      )
      for c, t, p, n in _configs(spec)
    ]
  return [dataclasses.replace(r, experiment=experiment.name) for r in results]


def run_sweep(
  spec: SweepSpec, on_result=None, pool: worker.WorkerPool | None = None
) -> list[ConfigResult]:
  """Runs every config of a sweep, the baseline here and experiments in workers.

  Args:
    spec: what to sweep.
    on_result: optional callback given each baseline `ConfigResult` as it
      completes (for progress output).
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
      return run_sweep(spec, on_result, own)
  _check_case_sizes(spec)
  broken = _load_targets(spec, pool)
  results = _run_baseline(spec, on_result, pool, broken)
  for experiment in spec.experiments:
    results += _run_experiment(spec, experiment, pool)
  return _with_batch_consistency(results)


def _check_case_sizes(spec: SweepSpec) -> None:
  """A batch size larger than a case's rows is bad input, found up front.

  Raises:
    UsageError: names the case, its rows and the largest size asked for.
  """
  largest = max(spec.batch_sizes)
  for name in spec.cases:
    rows = get_case(name).full_size(_case_inputs(name))
    if largest > rows:
      raise UsageError(
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
  """A case's full-size inputs, made once per process (read only)."""
  return get_case(case_name).make_inputs()


def compile_config(
  case_name: str, target: Target, precision: str, n: int, explain_passes: bool
) -> ConfigResult:
  """`run_config` for a compile-only target, without a reference (in a worker)."""
  case = get_case(case_name)
  full = _case_inputs(case_name)
  return run_config(case, full, None, target, precision, n, explain_passes)


def _isolated_config(
  pool: worker.WorkerPool,
  case: Case,
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
          "case_name": case.name,
          "target": target,
          "precision": precision,
          "n": n,
          "explain_passes": explain_passes,
        },
      )
    except worker.WorkerError as e:
      broken = str(e)
  return ConfigResult(
    case.name, target.name, n, precision, error=broken, stage="compile"
  )


def _run_baseline(
  spec: SweepSpec, on_result, pool: worker.WorkerPool, broken: dict[str, str]
) -> list[ConfigResult]:
  results = []
  for case_name in spec.cases:
    case = get_case(case_name)
    full = _case_inputs(case_name)
    largest = max(spec.batch_sizes)
    try:
      reference = lowering.float64_reference(
        case, case.inputs_for(full, largest)
      )
    except Exception:  # configs still compile; numerics say n/a
      reference = None
    predictor = _predictor(case, full, reference)
    for target_name in spec.targets:
      target = get_target(target_name)
      for precision in spec.precisions:
        for n in spec.batch_sizes:
          if target.compile_only:  # XLA may die on it: in a worker
            r = _isolated_config(
              pool, case, target, precision, n, spec.explain_passes, broken
            )
          else:
            r = run_config(
              case, full, reference, target, precision, n, spec.explain_passes
            )
          r = _with_prediction(r, predictor)
          results.append(r)
          if on_result is not None:
            on_result(r)
  return results
