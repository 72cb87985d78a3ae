"""The records `explain.explain_results` returns, one `TargetExplanation` per
(experiment, case, target), and the parts it is made of. Use them through
`report.explain`, which re-exports them.

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import dataclasses

from hloprobe.compile import ReportedError
from hloprobe.numerics import WorstRow

__all__ = [
  "AGREES",
  "AlgorithmUse",
  "Alternative",
  "FateSpan",
  "FateTransition",
  "MadeMath",
  "PredictedRowZero",
  "RowBeyond",
  "RowZero",
  "TargetExplanation",
]


# What explain says of configs whose optimized module, executed by the
# numpy executor, does what the program asks (`MadeMath.verdict`).
AGREES = "does what the program asks"


@dataclasses.dataclass(frozen=True, slots=True)
class FateSpan:
  """Consecutive swept batch sizes whose dot sites have the same fates.

  Attributes:
    batch_sizes: the batch sizes, in sweep order.
    groups: (site indices, fate words, "pass (pipeline)" or a note), one per
      run of sites sharing fate and pass; a failed config is one group with
      no sites.
  """

  batch_sizes: tuple[int, ...]
  groups: tuple[tuple[tuple[int, ...], str, str], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class AlgorithmUse:
  """The effective algorithm one fate runs under one precision.

  Attributes:
    fate: fate words, e.g. "Triton gemm".
    precision: the swept precision name, e.g. "bfloat16".
    algorithm: DotAlgorithmPreset name, or None when not settled.
    evidence: "ptx: ..." or "rule: ..." (counts and kernel names dropped).
    sites: the sites with that fate there, over all batch sizes.
    batch_sizes: where this fate runs this algorithm under this precision.
  """

  fate: str
  precision: str
  algorithm: str | None
  evidence: str
  sites: tuple[int, ...]
  batch_sizes: tuple[int, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class FateTransition:
  """Sites whose fate or algorithm changes with batch size, one precision.

  Not a golden difference (that is `golden.diff.GoldenSiteChange`): the
  steps of one sweep's sites over its batch sizes.

  Attributes:
    precision: the swept precision name.
    sites: site indices that change the same way.
    steps: (batch sizes, fate words, algorithm) in sweep order.
    arithmetic: True when the algorithm changes, False when only the fate
      (kernel, summation order) does.
    tf32_optional: True when a step's TF32 is allowed, not required
      (`SiteFate.tf32_optional`: a cuBLAS call may keep f32), so the
      arithmetic may not change after all.
  """

  precision: str
  sites: tuple[int, ...]
  steps: tuple[tuple[tuple[int, ...], str, str | None], ...]
  arithmetic: bool
  tf32_optional: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class RowZero:
  """Observed row 0 over consecutive batch sizes with equal values (row
  0, its |err| and its ULPs from n = 1 all equal).

  Attributes:
    precision: the swept precision name.
    batch_sizes: the batch sizes.
    row0: row 0's first value (output dtype, as float).
    row0_abs: |row0 - float64 reference|, output units; None if unknown.
    ulp_vs_n1: distance from n = 1's row 0 in ULPs of `output_dtype`;
      None when n = 1 was not run.
    output_dtype: e.g. "float32".
    leaf: the output leaf row 0 is of (the config's headline leaf), e.g.
      "['new_w']"; "" for a single array.
  """

  precision: str
  batch_sizes: tuple[int, ...]
  row0: float
  row0_abs: float | None
  ulp_vs_n1: int | None
  output_dtype: str | None
  leaf: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class PredictedRowZero:
  """Row 0 as the effective algorithms compute it (`predict`), over
  consecutive batch sizes with the same verdict and top site.

  Attributes:
    precision: the swept precision name.
    batch_sizes: the batch sizes.
    row0_abs: largest predicted |row 0 - float64| among them, output units;
      None where they have no prediction.
    noise_abs: the f32 noise floor of row 0 there (largest), output units;
      None likewise.
    verdict: the verdict words of the first of them, then the other
      output leaves' verdicts that are not "exact" or "within ...", each
      after its leaf's name; or "not predicted: <why>" (the config's
      `prediction_error`).
    top_site: the site with the largest share of the error, or None.
    top_share: that site's share, in [0, 1], or None.
    row0_abs_min, noise_abs_min: the smallest of them (equal to the
      largest when one value covers every batch size); None when unknown.
    leaf: the output leaf the numbers are of (the prediction's headline
      leaf), "" for a single array.
    output_dtype: that leaf's dtype, e.g. "int32"; None when unknown.
  """

  precision: str
  batch_sizes: tuple[int, ...]
  row0_abs: float | None
  noise_abs: float | None
  verdict: str
  top_site: int | None
  top_share: float | None
  row0_abs_min: float | None = None
  noise_abs_min: float | None = None
  leaf: str = ""
  output_dtype: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Alternative:
  """Triton gemm sites a library call would run with another algorithm.

  Attributes:
    precision: the swept precision name.
    precision_config: the sites' operand precision, e.g. "high,high".
    sites: site indices.
    batch_sizes: where they are Triton gemms.
    triton_algorithm: what the Triton kernels run (from their PTX).
    libraries: the library calls whose rule differs, e.g. ("cuBLAS",).
    library_algorithm: what `effective.blas_algorithm` gives for them.
    rule: the rule's evidence line.
    elsewhere: the algorithms the same sites run at the other swept batch
      sizes (empty when every batch size swept is a Triton gemm).
  """

  precision: str
  precision_config: str
  sites: tuple[int, ...]
  batch_sizes: tuple[int, ...]
  triton_algorithm: str | None
  libraries: tuple[str, ...]
  library_algorithm: str
  rule: str
  elsewhere: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class MadeMath:
  """What XLA made: configs whose executed module changed the math, could
  not be executed, or does what the program asks (`numerics.made`),
  grouped by precision and verdict.

  Attributes:
    precision: the precision.
    batch_sizes: the batch sizes with this verdict.
    verdict: `verdict_words.made_words`, e.g. "XLA changed the math: __cublas$lt$matmul
      cublas-lt-matmul.1 (alpha_real 0.1, beta 0, epilogue BIAS) from site
      0, made by cublas-gemm-rewriter: suspected miscompile: ...", or
      `AGREES` with row 0's error beside the program's prediction.
    changed: True for a change of the math, False otherwise.
    deviation_abs: the largest |widened module - float64| of them.
    bound_abs: the F32 band it left (the smallest of them).
    agrees: the module does what the program asks (`verdict` is `AGREES`'
      words).
  """

  precision: str
  batch_sizes: tuple[int, ...]
  verdict: str
  changed: bool
  deviation_abs: float | None
  bound_abs: float | None
  agrees: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class RowBeyond:
  """A config whose worst row is worse than row 0 beyond its band
  (`numerics.WorstRow.stands_out`), one per output leaf that has one.

  Attributes:
    precision: the swept precision name.
    n: the batch size.
    worst: the leaf's worst row (`numerics.WorstRow`, judged as in
      `Prediction.rows`).

  In `explain --format=json` as "rows" (a list of these, the worst row an
  object), added in schema version 1 without a bump: readers ignore it.
  """

  precision: str
  n: int
  worst: WorstRow


@dataclasses.dataclass(frozen=True, slots=True)
class TargetExplanation:
  """Everything `render_explanation` says about one case on one target.

  Attributes:
    case, target, experiment: the configs explained.
    compile_only: no device ran them (no row 0, no autotuning).
    precisions: precision name -> label, e.g. "tensorfloat32 (HIGH)".
    spans: precision -> its `FateSpan`s in sweep order.
    algorithms, changes, row0, predicted, alternatives: see the record
      types.
    selection: who chose the fates (`SiteFate.selection`), or None (CPU).
    site_selections: under loaded autotune results, who chose each gemm
      fusion site, e.g. "site 1 (bfloat16; n = 4096): no autotune entry
      for this fusion; default config used (a100.textproto: XLA
      heuristic)" (`LoadedResults.fusion_selections`); () otherwise. Added to
      `explain --format=json` in schema version 1 without a bump.
    kernel_rows: (precision, n, row 0, |row 0 - f64|) by the kernel model
      where a config has bit-exact sites (`explain_kernel.kernel_rows`);
      added like `site_selections`.
    reported: the case's public report when it concerns this target's
      compute capability, else None.
    notes: failed configs and pass-attribution errors, one line each.
    made: what XLA made (`MadeMath`): a change of the math, what could
      not be executed, and the configs whose module does what the program
      asks; `render_explanation` leads with it.
    rows: the configs whose worst row stands out (`RowBeyond`).
    judged: which rows were judged where not every row was, or not
      each against its own floor (`explain_rows.judged_lines`: "n = 100,
      1000: 49 of 100 rows: row 0, ..."); () where every config judged
      every row against its own. Added to `explain --format=json` in
      schema version 1 without a bump.
    made_rows: the same of what XLA made (`Made.rows`).
    kernel_models: per GPU target, (precision, kind, why, sites, batch
      sizes): kind "bit-exact model" or "band"
      (`explain_kernel.kernel_models`); () on the CPU.
  """

  case: str
  target: str
  experiment: str
  compile_only: bool
  precisions: dict[str, str]
  spans: dict[str, tuple[FateSpan, ...]]
  algorithms: tuple[AlgorithmUse, ...]
  changes: tuple[FateTransition, ...]
  row0: tuple[RowZero, ...]
  predicted: tuple[PredictedRowZero, ...]
  alternatives: tuple[Alternative, ...]
  selection: str | None
  reported: ReportedError | None
  notes: tuple[str, ...]
  made: tuple[MadeMath, ...] = ()
  rows: tuple[RowBeyond, ...] = ()
  made_rows: tuple[RowBeyond, ...] = ()
  kernel_models: tuple[
    tuple[str, str, str, tuple[int, ...], tuple[int, ...]], ...
  ] = ()
  site_selections: tuple[str, ...] = ()
  kernel_rows: tuple[tuple[str, int, float, float], ...] = ()
  judged: tuple[str, ...] = ()
