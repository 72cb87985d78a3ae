"""Numbers: errors, ULPs, noise floor and verdicts, and prediction.

The stage's interface is the names below (`__all__`): error statistics
against float64 (`ErrorStats.of`, the noise rule `NoiseFloor.admits`), the float64 reference
(`reference.References`), the prediction (`Prediction`), and a case's
numerics steps made once (`CaseNumerics`: references, predictor,
made-checker, kernel rows). Import them from here; the
modules behind them are private in intent:

  accuracy         error statistics, ULPs, noise floor, verdicts
  floor_sum        the noise floor over orders taken one at a time
  kept             caches of whole arrays within a byte budget
  integers         integer leaves: exact comparison, overflow, verdict
  rows             every row judged: the worst batch element of a leaf
  row_proof        rows proven independent from a case's jaxpr
  bands            the analytic error band of a site
  rounding         float formats by rounding
  emulate_dot      one dot_general under an algorithm
  emulate_fp8      cuBLASLt's FP8 gemm with its scales
  jaxpr_sites      a case's jaxpr dots, numbered as StableHLO numbers them
  evaluator        the jaxpr interpreter with sites at their algorithms
  emulate          a case's jaxpr with its dots emulated
  emulate_attention  cuDNN attention's forward; its kernel variants
  attention_band   an attention site's measured band, from its operands
  executed         the program lowered and run by the numpy executor
  reference        the float64 reference (the executor's; XLA:CPU's where
                   it cannot)
  floor_check      the measured noise floor checked against the executor
  emulation_cache  emulations shared between configs
  site_notes       what a verdict notes about particular sites
  note_records     those notes, and the prediction's own, as records
  verdicts         verdicts as records (`Verdict`), and their words
  candidates       site assignments: chosen, shares, candidates
  predict          GPU error predicted from emulation
  math_rules       known rewrites that change the math; gemm call words
  made             what XLA made: the optimized module executed
  module_made      an optimized module file executed as it stands
  kernel_model     a Triton gemm's tensor-core arithmetic, bit for bit
                   (MMA-Sim's mma semantics, the kernel's K walk)
  kernel_sites     which sites are a "bit-exact model" or a "band"; the
                   kernel model's evaluation and what it leaves
  case_numerics    a case's references, predictor, made-checker and
                   kernel rows, made once (`CaseNumerics`)
"""

from __future__ import annotations

from hloprobe.numerics.accuracy import NOISE_FACTOR as NOISE_FACTOR
from hloprobe.numerics.accuracy import ErrorStats as ErrorStats
from hloprobe.numerics.accuracy import NoiseFloor as NoiseFloor
from hloprobe.numerics.accuracy import ulp_distance as ulp_distance
from hloprobe.numerics.case_numerics import CaseNumerics as CaseNumerics
from hloprobe.numerics.kernel_sites import (
  kernel_model_run as kernel_model_run,
)
from hloprobe.numerics.kernel_sites import site_model as site_model
from hloprobe.numerics.made import Made as Made
from hloprobe.numerics.module_made import (
  module_made_notes as module_made_notes,
)
from hloprobe.numerics.predict import Prediction as Prediction
from hloprobe.numerics.rows import WorstRow as WorstRow
from hloprobe.numerics.ulps import float_dtype as float_dtype
from hloprobe.numerics.verdicts import Verdict as Verdict
from hloprobe.numerics.verdicts import VerdictKind as VerdictKind

__all__ = [
  "CaseNumerics",
  "ErrorStats",
  "Made",
  "NOISE_FACTOR",
  "NoiseFloor",
  "Prediction",
  "Verdict",
  "VerdictKind",
  "WorstRow",
  "float_dtype",
  "kernel_model_run",
  "module_made_notes",
  "site_model",
  "ulp_distance",
]
