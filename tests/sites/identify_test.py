"""Which instruction computes which dot site (issue 11, input 1).

Real compiles for an A100 without a GPU. Expected algorithms come from the
rule checked on jaxlib 0.10.2 PTX (a Triton gemm at DEFAULT runs
`mma ... tf32`, at HIGHEST `fma.rn.f32`), and each site's precision from
the program text, never from hloprobe.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import program_cases
import pytest
import recorded
import testutil
from absl.testing import absltest, parameterized

from hloprobe import engine
from hloprobe.compile import cases, compat, targets
from hloprobe.engine.measure import run_config
from hloprobe.report.verdict_words import prediction_words

# Compiles with XLA (`make test-fast` skips it).
pytestmark = pytest.mark.compiles


def _helper_dots(a, b):
  """The two dots of input 1 written in one helper called twice."""
  dot = lambda p: jnp.matmul(a, b, precision=p)
  return dot(None), dot("highest")


def _config(case, target="a100", precision="default", n=2):
  r = run_config(
    case, case.make_inputs(), None, targets.get_target(target), precision, n
  )
  assert r.ok, r.failure
  return r


class SharedOperandsTest(parameterized.TestCase):
  """A helper called twice (an ad-hoc program, compiled here); the
  recorded two-dots programs: recorded_fates_test.SharedOperandsTest."""

  def test_helper_called_twice_told_apart_by_caller(self):
    # Both sites share the innermost frame (the helper's line); the
    # calling line tells them apart.
    case = cases.Case(
      "t_helper", "helper", _helper_dots, program_cases.two_dots().make_inputs
    )
    r = _config(case)
    self.assertEqual(
      [f.effective_algorithm for f in r.compilation.fates],
      ["TF32_TF32_F32", "F32_F32_F32"],
    )


@pytest.mark.cpu_numerics
class VerdictTest(absltest.TestCase):
  def test_verdict_names_site_0(self):
    # The recorded compile (tests/testdata/compiles), predicted here.
    p = recorded.prediction(
      program_cases.two_dots(), recorded.load("two_dots_a100_n2_default")
    )
    self.assertEqual(
      prediction_words(p), "explained by TF32_TF32_F32 at sites [0]"
    )


def _numpy_merged_row0_abs(case) -> float:
  """|row 0 - float64| of (x @ w1) * (x @ w2) with TF32 operands, numpy.

  Both dots' operands rounded to TF32 (`testutil.tf32_rna`, as the A100
  kernel's `cvt.rna.tf32.f32`), products and sums in float64: independent
  of hloprobe's emulation. The cross-side case's second dot is w2 @ x.T.
  """
  x, w1, w2 = (a.astype(np.float64) for a in case.make_inputs())
  t = lambda a: testutil.tf32_rna(a.astype(np.float32)).astype(np.float64)
  cross = w2.shape[0] != x.shape[1]
  f = lambda x, w1, w2: (x @ w1) * ((w2 @ x.T).T if cross else x @ w2)
  return float(np.max(np.abs(f(t(x), t(w1), t(w2))[0] - f(x, w1, w2)[0])))


@pytest.mark.cpu_numerics
class DotMergerVerdictTest(parameterized.TestCase):
  """Two sites in one merged Triton gemm are both TF32 (issue 21).

  Before the fix both were "gone", emulated at F32, and the verdict said
  "within f32 noise".
  """

  def _sweep(self, case):
    spec = engine.SweepSpec(
      (case,), (2,), ("bfloat16",), ("a100",), explain_passes=True
    )
    (r,) = engine.run_sweep(spec)
    self.assertTrue(r.ok, r.failure)
    return r

  def _assert_tf32_at_both(self, case, r):
    self.assertEqual(
      prediction_words(r.prediction),
      "explained by TF32_TF32_F32 at sites [0, 1]",
    )
    self.assertEqual(
      [f.effective_algorithm for f in r.compilation.fates],
      ["TF32_TF32_F32"] * 2,
    )
    # The emulation sums in f32, the model in float64: the f32 noise floor
    # (about 1e-5 here) against a TF32 error of about 1e-2.
    expected = _numpy_merged_row0_abs(case)
    self.assertGreater(expected, 100 * r.prediction.noise.row0_abs)
    self.assertAlmostEqual(
      r.prediction.stats.row0_abs, expected, delta=0.05 * expected
    )

  def test_same_side_merge(self):
    # Merged on jaxlib 0.10.2 and 0.12.0.1 alike (testdata/dot_merger).
    case = program_cases.merged_dots()
    r = self._sweep(case)
    self.assertEqual([f.merged_with for f in r.compilation.fates], [(1,), (0,)])
    self._assert_tf32_at_both(case, r)
    self.assertEqual(
      {i: a.pass_name for i, a in r.compilation.passes.items()},
      {0: "dot-merger", 1: "dot-merger"},
    )

  @pytest.mark.release_rules
  def test_cross_side_merge_depends_on_release(self):
    # dot_merger.cc's TryMergeLHSWithRHSOperand merges these on jaxlib
    # 0.12.0.1; 0.10.2 keeps two gemms. The verdict is the same.
    case = program_cases.merged_dots(cross=True)
    r = self._sweep(case)
    merged = compat.installed_jaxlib() != "0.10.2"
    self.assertEqual(
      [f.merged_with for f in r.compilation.fates],
      [(1,), (0,)] if merged else [None, None],
    )
    self._assert_tf32_at_both(case, r)


if __name__ == "__main__":
  absltest.main()
