"""One config's work in a worker process: lower, compile, parse, map the
dot sites and, where the target runs, run it (`compile_and_run`); and
loading a compile-only target's config (`load_target`).

What comes back is a `CompiledConfig` record (pickled): the config's
`Compilation` and the run's outputs; the main process adds the errors
against float64 and the prediction (see `measure`).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from hloprobe.compile import lowering, timing, worker
from hloprobe.compile.cases import Case, get_case
from hloprobe.compile.targets import Target
from hloprobe.errors import first_line
from hloprobe.ir import ptx
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.precisions import parse_precision
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.records import Compilation, Config, ConfigResult, Failure
from hloprobe.sites import dot_sites, effective, passes
from hloprobe.sweep.spec import case_inputs

__all__ = [
  "CompiledConfig",
  "compile_and_run",
  "compile_and_run_case",
  "failed",
  "load_target",
]


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
  case_name: str,
  target: Target,
  precision: str,
  n: int,
  explain_passes: bool,
  full_inputs: tuple | None = None,
) -> CompiledConfig:
  """One config's work in a worker: lower, compile, parse, map sites and,
  for a target that runs (`cpu`, `gpu`), run it.

  Args:
    case_name: the name the sweep looked the case up by (a user's
      `file.py:factory` too); the worker looks it up again.
    target: the target record, whole.
    precision, n: the config.
    explain_passes: also attribute each site to the pass that rewrote it.
    full_inputs: `(the case's full-size inputs,)` as the sweep's process
      made them, or None to make them here. Sent by the sweep, so the
      worker compiles and runs on the very inputs the float64 reference
      is computed from (a case whose `make_inputs` is not deterministic
      would otherwise be compared with other inputs' reference), and
      need not make them again.
  """
  case = get_case(case_name)
  full = full_inputs[0] if full_inputs else case_inputs(case_name)
  return compile_and_run_case(case, full, target, precision, n, explain_passes)


def compile_and_run_case(
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
    compile_notes=cc.compile_notes,
    lower_s=cc.lower_s,
    compile_s=cc.compile_s,
  )


def _with_passes(c: Compilation, dumps) -> Compilation:
  """Attaches pass attribution; a failure is recorded, not raised."""
  try:
    found = passes.attribute_passes(dumps, [f.site for f in c.fates])
  except Exception as e:  # attribution is extra; the config stays ok
    return dataclasses.replace(c, passes_error=first_line(e))
  return dataclasses.replace(c, passes=found)


def failed(r: ConfigResult, error: str, stage: str) -> ConfigResult:
  """A failed record of `r`'s config (nothing else of `r` kept)."""
  return ConfigResult(r.config, failure=Failure(stage, error))


def load_target(target: Target) -> tuple[str, ...]:
  """Loads a compile-only target's config into XLA (in a worker).

  Returns the fields dropped so the installed proto could read it.

  Raises:
    TargetError: XLA rejects the config.
  """
  return lowering.load_topology(target.name, target.config_text).dropped_fields
