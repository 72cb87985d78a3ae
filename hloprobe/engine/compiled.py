"""One config's work in a worker process: lower, compile, parse, map the
dot sites and, where the target runs, run it (`CompileRequest`); and
loading a compile-only target's config (`LoadTargetRequest`).

The requests are `runtime.serve.Request` records, pickled whole to the
worker, which runs their `run` method (pickle names this module, so the
worker imports it). What comes back is a `CompiledConfig` record
(pickled): the config's `Compilation` and the run's outputs; the main
process adds the errors against float64 and the prediction (see
`measure`).

Private in intent: use the package, `hloprobe.engine`.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import numpy as np

from hloprobe.compile import (
  Case,
  Rejection,
  Target,
  compile_case,
  get_case,
  load_topology,
  missing_lowering,
)
from hloprobe.engine.plan import SweptCase
from hloprobe.engine.shared import resolved
from hloprobe.errors import HloprobeError, TraceError, first_line
from hloprobe.ir import parse_hlo_module, parse_ptx, parse_stablehlo_dots
from hloprobe.numerics import CaseNumerics
from hloprobe.records import Compilation, Config, ConfigResult, Failure
from hloprobe.runtime import Request, Stopwatch
from hloprobe.sites import (
  attribute_passes,
  explain_rejection,
  map_dot_sites,
  resolve,
)

__all__ = [
  "KEPT",
  "CompileRequest",
  "CompiledConfig",
  "LoadTargetRequest",
  "compile_and_run_case",
  "evidence_ptx",
  "failed",
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
    made: what XLA made's executions of the config gave
      (`MadeChecker.runs`' function's value: the optimized module's
      widened and made runs, output-sized, or the `Made` naming why they
      were not made), made in the worker that compiled it
      (`CompileRequest.made`) for the main process to judge
      (`MadeChecker.judged`); None where not made there (not asked, a
      failed config, a partitioned module, a reply of a config done in
      the sweep's process or of an older worker): the main process then
      makes them itself. Issue 37: they were the case's process's work,
      longer than the prediction beside them at gpt2_12, while the
      compile workers sat idle.
  """

  result: ConfigResult
  outputs: tuple[np.ndarray, ...] | None = None
  run_s: float | None = None
  timings: dict[str, float] = dataclasses.field(default_factory=dict)
  made: object = None


@dataclasses.dataclass(frozen=True)
class CompileRequest(Request):
  """One config's work, sent to a worker whole (see `compile_and_run_case`).

  Attributes:
    config: the config, as its results carry it (the worker's result
      holds this very record).
    case_source: the words the case was given by (`seed_mlp`,
      `path/to/file.py:factory`); the worker resolves them once per process
      (a case's function may not pickle).
    full_inputs: the case's full-size inputs as the sweep's process made
      them (None for a sized case), so the worker compiles and runs on the
      very inputs the float64 reference is computed from (a case whose
      `make_inputs` is not deterministic would otherwise be compared with
      other inputs' reference); large ones as files of the pool's shared
      folder (`shared.SharedInputs`), mapped here, not copied.
    explain_passes: also attribute each site to the pass that rewrote it.
    inputs: --inputs, a module file case's arguments (a module whose
      parameters are all scalars makes its inputs in each process).
    batch_arg: --batch_arg, a module file case's batch parameter, or None.
    xla_flags: the whole XLA_FLAGS the worker runs under, as the pool
      starts it (`WorkerPool.worker_flags`: the user's words, then the
      experiment's): they, not the worker's environment, say which
      autotune results file its compiles load (review finding 20).
    made: also make what XLA made's executions of the config here
      (`CompiledConfig.made`; a sweep with numerics, of a user case:
      its records are made in a worker too, on one BLAS thread, as
      here; `engine._Sweep._compiled`), after its compile
      and run, with one `MadeChecker` per case, inputs and worker process
      (its executions cached within its byte budget, as the main
      process's); not where the prediction's judged rows are found later
      (`MadeChecker.judged_later`: the case's process makes them then, on
      those rows alone).
    all_rows: --all_rows (the checker's `judged_later` is then False).
  """

  config: Config
  case_source: str
  full_inputs: tuple | None
  explain_passes: bool = False
  inputs: str | None = None
  batch_arg: str | None = None
  xla_flags: str = ""
  made: bool = False
  all_rows: bool = False

  def run(self, memo: dict) -> CompiledConfig:
    key = ("case", self.case_source, self.inputs, self.batch_arg)
    if key not in memo:  # once per worker process
      memo[key] = get_case(self.case_source, self.inputs, self.batch_arg)
    full, checker = resolved(self.full_inputs), None
    if self.made:  # once per worker process, case and inputs
      made_key = ("made checker", *key[1:], self.all_rows)
      kept = memo.get(made_key)
      if kept is None or not SweptCase.same_inputs(kept[0], full):
        kept = (
          full,
          CaseNumerics.worker_checker(memo[key], full, self.all_rows),
        )
        memo[made_key] = kept
      checker = kept[1]
    return compile_and_run_case(
      memo[key],
      full,
      self.config,
      self.explain_passes,
      memo.setdefault(KEPT, {}),
      self.xla_flags,
      checker,
    )


@dataclasses.dataclass(frozen=True)
class LoadTargetRequest(Request):
  """Loads a compile-only target's config into XLA, in a worker.

  `run` returns the fields dropped so the installed proto could read it.

  Raises (from `run`):
    TargetError: XLA rejects the config.
  """

  target: Target

  def run(self, memo: dict) -> tuple[str, ...]:
    del memo
    loaded = load_topology(self.target.name, self.target.config_text)
    return loaded.dropped_fields


# The worker memo's key of what a worker keeps of its compiles (`keep`),
# for a later request of the same config to use without compiling again
# (the batch-invariance rows and kernels, `hloprobe.invariance`).
KEPT = "compiled executables"
_KEEP_AT_MOST = 64
# Beside a run's executable, under (config, KEPT), (the full inputs, its
# output leaves) where the leaves hold at most `_KEEP_OUTPUTS_BYTES` (at
# most `_KEEP_AT_MOST` runs' outputs, counted apart from the
# executables): the batch-invariance rows of the config
# (`invariance.runs.RowsRequest`) read row 0 there instead of running the
# config again on the same inputs (issue 37: one run of gpt2_12 per CPU
# config); on other inputs (`SweptCase.same_inputs`: a later sweep on
# this worker whose record of the config came from the cache) they run
# it. Larger outputs are not kept: run again.
_KEEP_OUTPUTS_BYTES = 8 << 20


def compile_and_run_case(
  case: Case,
  full: tuple | None,
  config: Config,
  explain_passes: bool,
  keep: dict | None = None,
  xla_flags: str | None = None,
  checker=None,
) -> CompiledConfig:
  """One config's work: lower, compile, parse, map sites and, for a target
  that runs (`cpu`, `gpu`), run it.

  Before each stage it notes the stage (`Request.note_stage`), so a worker
  that dies in it names it.

  Args:
    case: the config's case record.
    full: the case's full-size inputs (None for a sized case).
    config: the config; the result carries it as it is.
    explain_passes: also attribute each site to the pass that rewrote it.
    keep: kept here under `config` (at most `_KEEP_AT_MOST`, the oldest
      dropped), for a later request of this worker (`KEPT`): where the
      target runs, the executable (`jax.stages.Compiled`), and its run's
      (inputs, output leaves) under (config, `KEPT`) where small; on a
      compile-only target, (optimized HLO text, every PTX file's text).
      None: nothing kept.
    xla_flags: the whole XLA_FLAGS this process's XLA runs under, as the
      caller knows them (`CompileRequest.xla_flags`): an autotune
      experiment's results file named there says who chose each gemm
      fusion (`compile_case`'s `xla_flags`); None: no results file read
      (`measure.run_config`, a config done outside a sweep).
    checker: a `MadeChecker` without references (`CompileRequest.made`,
      `CaseNumerics.worker_checker`):
      after the compile and any run, what XLA made's executions of the
      config are made here too (`CompiledConfig.made`); None: not made.

  Returns:
    The config's `CompiledConfig`; a stage's failure is its `Failure`,
    not raised.
  """
  watch = Stopwatch()
  target, n = config.target, config.n
  stage = "compile"
  try:
    Request.note_stage(stage)
    args = case.inputs_for(full, n)
    start = time.perf_counter()
    # The worker's XLA_FLAGS, as the request names them (an
    # --autotune_results experiment's): who chose each fusion is kept.
    cc = compile_case(
      case,
      args,
      config.precision.jax_name,
      target,
      dump_passes=explain_passes,
      xla_flags=xla_flags,
    )
    watch.add("lower", cc.lower_s)
    watch.add("compile", time.perf_counter() - start - cc.lower_s)
    stage = "analyse"
    Request.note_stage(stage)
    compilation = _analysed(cc, target, watch)
    if explain_passes:
      with watch.stage("passes"):
        compilation = _with_passes(compilation, cc.pass_dumps)
    result = ConfigResult(config, compilation)
    if target.compile_only:
      if keep is not None:  # every kernel's PTX, not only the evidence
        _keep(keep, config, (cc.optimized_hlo, tuple(cc.ptx)))
      made = _made_here(checker, n, compilation, watch)
      return CompiledConfig(result, timings=watch.seconds(), made=made)
    stage = "run"
    Request.note_stage(stage)
    with watch.stage("run"):
      outs, run_s = cc.run(args)
    if keep is not None:
      _keep(keep, config, cc.compiled)
      if sum(x.nbytes for x in outs) <= _KEEP_OUTPUTS_BYTES:
        _keep(keep, (config, KEPT), (_kept_inputs(keep, full), outs))
    made = _made_here(checker, n, compilation, watch)
    return CompiledConfig(result, outs, run_s, watch.seconds(), made)
  except Exception as e:  # one config's failure must not lose the others
    finding, missing = None, _before_xla(e)
    if stage == "compile" and not isinstance(e, HloprobeError) and not missing:
      with watch.stage("compile"):
        finding = _rejection_finding(case, full, config)
    # A program jax cannot trace, or cannot lower for the target, failed
    # before XLA: at stage "lower", where no candidate fix is tried.
    failure = Failure(
      "lower" if missing else stage, missing or first_line(e), finding
    )
    return CompiledConfig(
      ConfigResult(config, failure=failure), timings=watch.seconds()
    )


def _before_xla(error: BaseException) -> str | None:
  """What failed before XLA, in words: the error the case's function raised
  while jax traced it (`TraceError`'s cause, "NotImplementedError: vmap is
  only supported for the pure_callback primitive when ..."), or a lowering
  jax could not make (`missing_lowering`); None for any other error."""
  if isinstance(error, TraceError):  # its cause's line
    return first_line(error)
  return missing_lowering(error)


def _made_here(checker, n: int, c: Compilation, watch):
  """What XLA made's executions of the compiled config gave, made here,
  in the worker that compiled it (`MadeChecker.runs`:
  `CompiledConfig.made`, which `measure._made_runs` judges), or None
  where `checker` is None or they are not made here (a partitioned
  module, anything raised outside the runs): `measure._made_runs` makes
  them then, and names their failure as ever; nor where they wait for the
  prediction's judged rows (`MadeChecker.judged_later`, a large program's
  larger sizes: the case's process makes them on those rows alone).
  Timed as "predict", the stage they were part of in the main process."""
  if checker is None:
    return None
  Request.note_stage("made")
  try:
    with watch.stage("predict"), jax.default_device(jax.devices("cpu")[0]):
      if checker.judged_later(n):
        return None
      runs = checker.runs(n, c.optimized_hlo, c.fates)
      return None if runs is None else runs()
  except Exception:  # made again in the main process, which names it
    return None


def _kept_inputs(keep: dict, full):
  """`full`, or the very inputs the latest kept run holds where they are
  the same values (`SweptCase.same_inputs`): a worker whose requests carry
  the inputs pickled (a Ray pool's, or a local one's with no room in its
  shared folder, or inputs with no large leaf) unpickles a copy of them
  for every config, and each kept run held its own (gpt2_12's 340 MB of
  weights once per kept config)."""
  for key in reversed(keep):
    if _outputs_key(key):
      held = keep[key][0]
      return held if SweptCase.same_inputs(held, full) else full
  return full


def _keep(keep: dict, key, what) -> None:
  """Keeps `what` under `key`, a config (the oldest config dropped past
  `_KEEP_AT_MOST`) or (config, `KEPT`), a run's outputs: counted apart,
  so that they take no executable's place (the oldest dropped past
  `_KEEP_AT_MOST` too)."""
  keep.pop(key, None)
  keep[key] = what
  kind = _outputs_key(key)
  same = [k for k in keep if _outputs_key(k) == kind]
  for k in same[: max(0, len(same) - _KEEP_AT_MOST)]:
    del keep[k]


def _outputs_key(key) -> bool:
  """Whether `key` of a worker's kept compiles is a run's outputs'."""
  return isinstance(key, tuple) and key[1:] == (KEPT,)


def _rejection_finding(case: Case, full, config: Config):
  """The sites and pass of a compile XLA rejected (`explain_rejection`),
  from one more compile with every pass dumped; None when that compile
  succeeds or fails in another way (the failure keeps XLA's error)."""
  try:
    args = case.inputs_for(full, config.n)
    rejection = Rejection.of_compile(
      case, args, config.precision.jax_name, config.target
    )
    return None if rejection is None else explain_rejection(rejection)
  except Exception:  # the finding is extra; the failure stands without it
    return None


def _analysed(cc, target: Target, watch) -> Compilation:
  """The compiled config's texts and its dot sites' fates; under loaded
  autotune results (`cc.autotune`), each gemm fusion site says who chose
  it."""
  with watch.stage("parse"):
    sites = parse_stablehlo_dots(cc.stablehlo)
    module = parse_hlo_module(cc.optimized_hlo)
    files = [(text, parse_ptx(text)) for text in cc.ptx]
    ptx_kernels = [k for _, kernels in files for k in kernels]
  with watch.stage("sites"):
    fates = map_dot_sites(sites, module)
    chosen, notes = None, tuple(cc.compile_notes)
    per_site, unread = _autotuned_sites(cc.pass_dumps, sites, cc.autotune)
    if per_site is None:  # the fusions' keys could not be read
      chosen = cc.autotune.selection
      notes += (f"autotune keys not read, sites not matched: {unread}",)
    fates = resolve(
      fates,
      module,
      ptx_kernels,
      target,
      cc.compute_capability,
      chosen,
      per_site,
    )
  return Compilation(
    stablehlo=cc.stablehlo,
    optimized_hlo=cc.optimized_hlo,
    fates=tuple(fates),
    ptx=evidence_ptx(fates, files),
    ptxas=str(cc.ptxas) if cc.ptxas else None,
    dropped_config_fields=cc.dropped_config_fields,
    compile_notes=notes,
    lower_s=cc.lower_s,
    compile_s=cc.compile_s,
  )


def _autotuned_sites(
  pass_dumps, sites, loaded
) -> tuple[dict[int, str] | None, str | None]:
  """(site index -> who chose its gemm fusion under loaded autotune
  results (`loaded`: `CompiledCase.autotune`, its `fusion_selections`),
  None); ({}, None) without results; (None, why) where the keys cannot be
  read (no config-assigner dump, a fusion XLA cannot print or whose
  operand's shape is not read): the why goes to the compile's notes, so a
  user replaying a file sees it (review finding 17).

  The fusion a site is keyed by is found as the optimized HLO's are
  (`map_dot_sites`), in the module as it enters the config assigner: a
  fusion the assigner gives cuBLAS leaves the optimized HLO as a custom
  call of another name (`FissionBackend::ApplyConfig`,
  xla/backends/gpu/autotuner/fission.cc, openxla/xla 0e1ce768: the fusion
  is inlined as a call and GemmRewriter makes a new `__cublas$...` custom
  call of it; seen in the a100's optimized HLO under jaxlib 0.12.0.1 with
  tests/compile/autotune_replay_test.py's results file). A site in no gemm fusion
  there (a multiply+reduce) is not the assigner's: XLA's heuristic, as
  without results.
  """
  if loaded is None:
    return {}, None
  try:
    before, words = loaded.fusion_selections(pass_dumps)
    mapped = map_dot_sites(sites, parse_hlo_module(before))
  except (HloprobeError, ValueError) as e:
    return None, first_line(e)
  chosen = {}
  for f in mapped:
    # The gemm fusion on the site's carrier path (outermost first): a
    # site in a while body's fusion has the while before it.
    fusion = next((c for c in f.carriers if c in words), None)
    if fusion is not None:
      chosen[f.site.index] = words[fusion]
  return chosen, None


def evidence_ptx(fates, files) -> dict[str, str]:
  """The PTX of every kernel a site's effective algorithm was read from.

  Args:
    fates: the sites' `SiteFate`s.
    files: (text, its `parse_ptx` kernels) of each PTX file XLA dumped.

  Returns:
    kernel name -> the text of the PTX file defining it, in site order;
    {} on the CPU and where no algorithm came from the PTX.
  """
  by_kernel = {k.name: text for text, kernels in files for k in kernels}
  found = {}
  for f in fates:
    if f.algorithm_source == "ptx" and f.ptx_kernel in by_kernel:
      found.setdefault(f.ptx_kernel, by_kernel[f.ptx_kernel])
  return found


def _with_passes(c: Compilation, dumps) -> Compilation:
  """Attaches pass attribution; a failure is recorded, not raised."""
  try:
    found = attribute_passes(dumps, [f.site for f in c.fates])
  except Exception as e:  # attribution is extra; the config stays ok
    return dataclasses.replace(c, passes_error=first_line(e))
  return dataclasses.replace(c, passes=found)


def failed(r: ConfigResult, error: str, stage: str) -> ConfigResult:
  """A failed record of `r`'s config (nothing else of `r` kept)."""
  return ConfigResult(r.config, failure=Failure(stage, error))
