"""What one sweep config produced, one frozen record per stage.

A `ConfigResult` holds the `Config` (what was swept), then what each stage
that got that far made: `Compilation` (lowering to StableHLO, XLA's
compile to optimized HLO, the dot sites' fates and, with
--explain_passes, the passes that rewrote them), `Execution` (running the
compiled executable and comparing its outputs with float64), the
`predict.Prediction` (or why there is none), and the `Failure` of the
stage that stopped it. A stage's record is None when the stage was not
reached: a failed compile has no `Compilation`, a compile-only target no
`Execution`.

`Compilation` and `Execution` hold only plain values (text, tuples,
numpy arrays, other frozen records; no jax objects), so a worker process
can return them whole and the record cache can pickle them.
`RECORD_VERSION` names this layout in the cache key (`CaseKey.config_key`):
entries pickled with another layout miss.
"""

from __future__ import annotations

import dataclasses

from hloprobe.compile import BASELINE, Target
from hloprobe.ir import Precision
from hloprobe.numerics import (
  ErrorStats,
  Made,
  Prediction,
  Verdict,
)
from hloprobe.sites import CompileFinding, PassAttribution, SiteFate

__all__ = [
  "RECORD_VERSION",
  "Compilation",
  "Config",
  "ConfigResult",
  "Execution",
  "Failure",
]

# Bumped when any record below changes shape; part of the cache key.
# 1: one flat ConfigResult; 2: these records; 3: SiteFate; 4:
# ConfigResult.made; 5: Failure.finding, ErrorStats' integer counts; 6:
# Prediction.reference and Prediction.floor_check; 7: StableHloDot.op and
# .window (convolution sites; an attention site's op is its call target); 8:
# MappedSite.collective; 9: Prediction.rows, ErrorStats.row_abs and
# NoiseFloor.row_abs (every row judged); 10: Compilation.ptx, and source
# paths stored relative (runtime/relocate.py); 11: ErrorStats.row0_size,
# row0_values cut to accuracy.ROW0_KEPT values; 12: Prediction.verdicts
# (each leaf's verdict as a `Verdict` record); 13: Verdict.far_rows; 14:
# NoiseFloor.rows and
# WorstRow.judged (the rows judged, issue 37); 15: SiteFate.ptx_kernel,
# .mma_opcodes and .ptx_tf32_rounding (the PTX read as fields),
# Prediction.leaves instead of its verdict words (.verdict,
# .leaf_verdicts), Verdict.far_rows a `FarRows` record; 16: the site notes
# on a verdict as records (`numerics.site_notes`: BelowRequest, SiteNote,
# ...; `made.NotExecuted`), not words; Prediction.notes (records) for its
# note words, Prediction.best_candidate (algorithm, sites) groups; 17:
# KernelRowZero.models (each site's `KernelSite`, its `Band` a record) for
# its kinds and why words; 18: KernelRowZero.budget and .error (records)
# for its note words, SiteFate.conflict, .collective and .fp8_rewrite
# records (`PrecisionConflict`, `Collective`, `Fp8Rewrite`) and
# PassAttribution.fate a `Fate` (with emitter, merged, split_k) for their
# words; 19: KernelRecord.row_count_why a `RowCountWhy` (the rule and its
# data), KernelUnread.why that record, not words; 20: SiteShare.without_abs
# None where not computed (a large program's shares, issue 37) and the
# `note_records.SharesAlone` note naming it; 21: a large program's shares
# by groups of sites (`SharesAlone.groups`); 22: WorstRow.whole and
# NoiseFloor.whole (a large program judges fewer rows whole, issue 37);
# 23: Made.judged (what XLA made run and judged on the judged rows alone),
# Failure.stage "lower" for a program jax cannot lower for the target; 24:
# and for one whose function raised while jax traced it (`TraceError`); 25:
# NoiseFloor.row0_floor and WorstRow.row0_floor (a large program's floor
# emulated at row 0 alone, issue 37).
RECORD_VERSION = 25


@dataclasses.dataclass(frozen=True)
class Config:
  """One sweep config: what is compiled, for what, and how.

  The plain-value record a config's results carry (pickled to the record
  cache, sent to and back from a worker, written to results.json); made
  once per config by `sweep.plan.SweepPlan.configs`, beside the `Case` and
  `Experiment` records it names (`sweep.plan.PlannedConfig`).

  Attributes:
    case: the case's name, as results and goldens print it.
    target: the `Target` record compiled for (its name keys rows and
      output folders; its compute capability and compile-only flag are
      what `explain` reads).
    n: the batch size (rows of the batched argument).
    precision: the matmul precision, e.g. `Precision.bfloat16` (a `str`
      enum: prints and goes to JSON as its name, "bfloat16").
    experiment: the XLA_FLAGS experiment's name, "baseline" for none.
  """

  case: str
  target: Target
  n: int
  precision: Precision
  experiment: str = BASELINE.name

  def label(self) -> str:
    """E.g. "a100 seed_mlp n=3 bfloat16" (the experiment, if any, after)."""
    text = f"{self.target.name} {self.case} n={self.n} {self.precision}"
    if self.experiment == BASELINE.name:
      return text
    return f"{text} ({self.experiment})"


@dataclasses.dataclass(frozen=True)
class Compilation:
  """What lowering and compiling one config produced, and its dot sites.

  Attributes:
    stablehlo: the lowered module's StableHLO text.
    optimized_hlo: the optimized HLO text after XLA's passes.
    fates: what each StableHLO dot site became (`dot_sites.SiteFate`, with
      its effective algorithm), in site order.
    passes: site index -> the pass that rewrote it (with --explain_passes;
      a site absent here stayed a plain dot); None when not asked or when
      attribution failed.
    passes_error: why pass attribution failed, or None.
    ptxas: the ptxas that built the GPU kernels, as "PATH (CUDA 12.9.86,
      via ...)"; None on CPU.
    dropped_config_fields: target-config fields dropped so the installed
      proto could load the config, e.g. ("GpuDeviceInfoProto.mem_clock_ghz",).
    compile_notes: what hloprobe changed to get a compile-only target's
      compile through (e.g. "compiled again with
      xla_gpu_enable_triton_gemm=false: ..."), or what of it could not be
      read ("autotune keys not read, ..."), one sentence each.
    lower_s, compile_s: wall seconds of lowering and of XLA's compile.
    ptx: kernel name -> the PTX file's text, for every kernel a site's
      effective algorithm was read from (the evidence of each "ptx"
      claim; `--output_dir` writes them); {} on the CPU.
  """

  stablehlo: str
  optimized_hlo: str
  fates: tuple[SiteFate, ...] = ()
  passes: dict[int, PassAttribution] | None = None
  passes_error: str | None = None
  ptxas: str | None = None
  dropped_config_fields: tuple[str, ...] = ()
  compile_notes: tuple[str, ...] = ()
  lower_s: float | None = None
  compile_s: float | None = None
  ptx: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Execution:
  """What running one compiled config measured.

  Attributes:
    run_s: wall seconds of the run (outputs ready on the host).
    leaf_stats: errors against float64 of every output leaf, in
      `jax.tree_util.tree_leaves` order; () when the case has no float64
      reference.
    headline: index into `leaf_stats` of the leaf the row is about
      (`accuracy.headline_leaf`: a batched leaf where there is one; the
      prediction's `leaf` where there is a prediction, else among several
      batched leaves the one with the largest max_rel); None without
      `leaf_stats`.
    ulp_vs_n1: row 0 (batch element 0) here against row 0 at batch 1, max
      over its values and the batched leaves, in ULPs of each leaf's dtype
      (None when n = 1 is not swept, it did not run, or no leaf is
      batched).
  """

  run_s: float
  leaf_stats: tuple[ErrorStats, ...] = ()
  headline: int | None = None
  ulp_vs_n1: int | None = None

  @property
  def stats(self) -> ErrorStats | None:
    """The headline leaf's errors, or None without a reference."""
    return None if self.headline is None else self.leaf_stats[self.headline]

  @property
  def output_dtype(self) -> str | None:
    """The headline leaf's dtype, e.g. "bfloat16"; None without one."""
    s = self.stats
    if s is None or s.row0_values is None:
      return None
    return str(s.row0_values.dtype)


@dataclasses.dataclass(frozen=True)
class Failure:
  """The stage that stopped a config, and why.

  Attributes:
    stage: "lower" (jax could not trace the program, `errors.TraceError`,
      or lower it for the target, `compile.missing_lowering`), "compile",
      "analyse", "run", "reference", "worker", ...
    error: the error's first line, e.g. "XlaRuntimeError: INTERNAL: ...".
    finding: for a compile XLA rejected, the dot sites and the pass or
      rule that rejected it (`sites.explain_rejection`); None otherwise or
      when it could not be found.
  """

  stage: str
  error: str
  finding: CompileFinding | None = None


@dataclasses.dataclass(frozen=True)
class ConfigResult:
  """Everything one config produced, by stage.

  Attributes:
    config: the config.
    compilation: what compiling made; None when it failed or was not
      reached.
    execution: what running measured; None for a compile-only target or
      when running failed or was not reached.
    prediction: the emulated numerics at the sites' effective algorithms,
      with noise floor, attribution and verdict (see `predict`); None
      when there is none.
    prediction_error: why there is no prediction, or None.
    made: what XLA made: the optimized module executed on the config's
      inputs (`numerics.made`); None where not checked (no float64
      reference, no compilation).
    failure: the stage that failed, or None when every stage reached
      succeeded.
    timings: stage name -> exclusive wall seconds spent on this config
      (`timing.STAGES`; a case's inputs and reference are charged to its
      first config).
  """

  config: Config
  compilation: Compilation | None = None
  execution: Execution | None = None
  prediction: Prediction | None = None
  prediction_error: str | None = None
  made: Made | None = None
  failure: Failure | None = None
  timings: dict[str, float] = dataclasses.field(default_factory=dict)

  @property
  def ok(self) -> bool:
    """True when no stage failed."""
    return self.failure is None

  @property
  def judgement(self) -> Verdict | None:
    """The config's verdict (`numerics.Made.config_judgement`; its words
    made in `hloprobe.report`): MATH_CHANGED
    where the executed module changed the math, else the headline leaf's
    (an incomplete execution a note on it, or INCOMPLETE alone); None
    without either."""
    p = self.prediction.judgement if self.prediction is not None else None
    return p if self.made is None else self.made.config_judgement(p)
