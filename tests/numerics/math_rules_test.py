"""Issue 23: "XLA changed the math", from recorded optimized modules.

The scaled_dense case (0.1 * (a @ row + bias), vmapped) as jaxlib 0.10.2
and 0.12.0.1 compiled it for a compile-only a100 with Triton gemms off
(tests/testdata/compiles/scaled_dense_a100_n8_float32_no_triton_gemm,
record.py). Expected values come from numpy float64 (the program's
meaning, and what cuBLASLt's documented BIAS epilogue computes) and from
the recorded text itself, never from hloprobe's output. Planted edits are
the should-fail halves: a dropped bias is caught, not localised to a rule.
No test here compiles: the float64 reference is numpy's (`scaled_dense.NumpyReference`)
and the module runs in hloprobe's numpy executor.
"""

from __future__ import annotations

import numpy as np
import recorded
import scaled_dense
from absl.testing import absltest, parameterized

from hloprobe import execute
from hloprobe.compile import Case
from hloprobe.execute.records import GemmCall
from hloprobe.ir import parse_hlo_module
from hloprobe.numerics import Made, math_rules
from hloprobe.numerics.made import MadeChecker
from hloprobe.numerics.verdicts import Verdict, VerdictKind
from hloprobe.report.verdict_words import CHANGED, made_words, verdict_words


def _drop_bias(text: str) -> str:
  """The 0.12.0.1 module with the cuBLASLt call's bias removed."""
  out = text.replace(
    "custom-call(%b.1, %a.1, %bias.1)", "custom-call(%b.1, %a.1)"
  ).replace('"epilogue":"BIAS"', '"epilogue":"DEFAULT"')
  assert out != text
  return out


class RecordedModuleTest(absltest.TestCase):
  def test_fixture_is_what_the_issue_reports(self):
    old = recorded.load(scaled_dense.FIXTURE, "0.10.2").optimized_hlo
    new = recorded.load(scaled_dense.FIXTURE, "0.12.0.1").optimized_hlo
    self.assertIn('"alpha_real":0.10000000149011612', old)
    self.assertIn('"epilogue":"BIAS"', old)
    self.assertIn('"alpha_real":1,', new)

  def test_executed_0_10_2_module_computes_alpha_ab_plus_bias(self):
    case, full, _ = scaled_dense.checker()
    b, a, bias = (
      np.asarray(x, np.float64) for x in case.inputs_for(full, scaled_dense.N)
    )
    module = parse_hlo_module(
      recorded.load(scaled_dense.FIXTURE, "0.10.2").optimized_hlo
    )
    run = execute.execute_module(
      module, list(case.inputs_for(full, scaled_dense.N)), widen=True
    )
    # cuBLASLt: D = alpha (A @ B) + beta C, then the BIAS epilogue adds the
    # bias vector (cuBLAS documentation, CUBLASLT_EPILOGUE_BIAS).
    want = np.float64(np.float32(0.1)) * (b @ a.T) + bias
    np.testing.assert_allclose(run.outputs[0], want, rtol=1e-12, atol=1e-12)

  def test_0_10_2_verdict_names_the_call_its_fields_site_pass_and_rule(self):
    made, fates = scaled_dense.check("0.10.2")
    self.assertTrue(made.changed)
    self.assertTrue(made.localised)
    (change,) = made.changes
    self.assertEqual(change.target, "__cublas$lt$matmul")
    self.assertEqual(change.fields, "alpha_real 0.1, beta 0, epilogue BIAS")
    self.assertEqual(change.site, 0)
    self.assertIn(change.instruction, fates[0].carriers)
    self.assertEqual(change.pass_name, "cublas-gemm-rewriter")
    self.assertEqual(
      change.rule,
      "suspected miscompile: GemmRewriter folded alpha over a BIAS epilogue",
    )
    self.assertIn("openxla/xla#46110", change.source)
    self.assertTrue(
      made_words(made).startswith(f"{CHANGED}: __cublas$lt$matmul")
    )
    self.assertIn("alpha_real 0.1, beta 0, epilogue BIAS", made_words(made))

  def test_0_10_2_deviation_is_0_9_bias_far_beyond_the_f32_band(self):
    case, full, _ = scaled_dense.checker()
    b, a, bias = (
      np.asarray(x, np.float64) for x in case.inputs_for(full, scaled_dense.N)
    )
    made, _ = scaled_dense.check("0.10.2")
    # alpha AB + bias - 0.1 (AB + bias), alpha the f32 0.1: about 0.9 bias.
    ab = b @ a.T
    got = np.float64(np.float32(0.1)) * ab + bias
    want = float(np.max(np.abs(got - 0.1 * (ab + bias))))
    self.assertAlmostEqual(want, 0.9 * float(np.max(np.abs(bias))), delta=1e-3)
    self.assertAlmostEqual(made.deviation_abs, want, delta=1e-9 * want)
    self.assertLess(made.bound_abs, 1e-3)

  def test_0_12_0_1_module_is_not_flagged(self):
    made, _ = scaled_dense.check("0.12.0.1")
    self.assertFalse(made.changed)
    self.assertIsNone(made_words(made))
    self.assertTrue(made.complete)
    self.assertEqual(made.gemms, 1)
    self.assertLess(made.deviation_abs, made.bound_abs)

  def test_planted_dropped_bias_is_caught_not_localised(self):
    made, _ = scaled_dense.check("0.12.0.1", _drop_bias)
    self.assertTrue(made.changed)
    self.assertFalse(made.localised)
    self.assertTrue(made_words(made).startswith(f"{CHANGED} (not localised"))
    self.assertIn("__cublas$lt$matmul", made_words(made))

  def test_made_prediction_is_the_module_at_f32(self):
    case, full, _ = scaled_dense.checker()
    b, a, bias = (
      np.asarray(x, np.float64) for x in case.inputs_for(full, scaled_dense.N)
    )
    made, _ = scaled_dense.check("0.12.0.1")
    want = 0.1 * (b[0] @ a.T + bias)
    # Row 0 of the module at F32: within a few f32 roundings of float64.
    self.assertLess(made.stats.row0_abs, 1e-5 * float(np.max(np.abs(want))))


_WITHIN = Verdict(VerdictKind.WITHIN_NOISE)


class VerdictWordsTest(parameterized.TestCase):
  def test_incomplete_execution_is_named(self):
    made = Made(
      None, None, None, not_executed=("__cudnn$fmha (custom-call.3)",)
    )
    self.assertEqual(
      made_words(made),
      "prediction incomplete: not executed: __cudnn$fmha (custom-call.3)",
    )
    self.assertEqual(
      verdict_words(made.config_judgement(_WITHIN)),
      "within f32 noise; prediction incomplete: not executed: __cudnn$fmha "
      "(custom-call.3)",
    )

  def test_agreeing_module_keeps_the_prediction_verdict(self):
    made = Made(None, 0.0, 1.0)
    self.assertEqual(
      verdict_words(made.config_judgement(_WITHIN)), "within f32 noise"
    )

  @parameterized.named_parameters(
    ("alpha_over_bias", 0.1, "BIAS", True),
    ("alpha_over_bias_relu", 0.5, "BIAS_RELU", True),
    ("alpha_one_bias", 1, "BIAS", False),
    ("alpha_no_epilogue", 0.1, "DEFAULT", False),
  )
  def test_rule_table(self, alpha, epilogue, matches):
    gemm = GemmCall(
      "g",
      "__cublas$lt$matmul",
      "main",
      "F32_F32_F32",
      alpha,
      0.0,
      epilogue,
      "BIAS" in epilogue,
    )
    self.assertEqual(math_rules.matching_rule(gemm) is not None, matches)


class UnusedArgumentTest(absltest.TestCase):
  """jit drops an unused argument: parameter i is kept argument i."""

  _HLO = """HloModule m, entry_computation_layout={(f32[2,3]{1,0}, f32[3,4]{1,0})->f32[2,4]{1,0}}

ENTRY %main (x: f32[2,3], w: f32[3,4]) -> f32[2,4] {
  %x = f32[2,3]{1,0} parameter(0)
  %w = f32[3,4]{1,0} parameter(1)
  ROOT %dot = f32[2,4]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

  def _case(self):
    g = np.random.default_rng(1)
    x = g.standard_normal((2, 3)).astype(np.float32)
    unused = g.standard_normal((2, 5)).astype(np.float32)
    w = g.standard_normal((3, 4)).astype(np.float32)
    case = Case(
      "unused_arg",
      "x @ w with an unused argument between",
      lambda x, unused, w: x @ w,
      lambda: (x, unused, w),
      in_axes=(0, 0, None),
    )
    return case, (x, unused, w)

  def test_kept_arguments_map_to_parameters(self):
    case, (x, _, w) = self._case()
    full = case.full_inputs()
    ref = scaled_dense.NumpyReference(lambda x, unused, w: x @ w, case, full)
    made = MadeChecker(case, full, ref).check(2, self._HLO)
    self.assertTrue(made.complete, made.not_executed)
    self.assertFalse(made.changed)
    want = x.astype(np.float64)[0] @ w.astype(np.float64)
    self.assertLess(made.stats.row0_abs, 1e-5 * float(np.max(np.abs(want))))

  def test_a_module_taking_every_argument_does_not_fit(self):
    case, _ = self._case()
    full = case.full_inputs()
    text = self._HLO.replace(
      "%w = f32[3,4]{1,0} parameter(1)",
      "%w = f32[3,4]{1,0} parameter(1)\n  %u = f32[2,5]{1,0} parameter(2)",
    )
    ref = scaled_dense.NumpyReference(lambda x, unused, w: x @ w, case, full)
    made = MadeChecker(case, full, ref).check(2, text)
    self.assertFalse(made.complete)
    self.assertIn(
      "prediction incomplete: not executed: module (", made_words(made)
    )
    self.assertIn("the module has 3, the case keeps 2 of 3", made_words(made))


if __name__ == "__main__":
  absltest.main()
