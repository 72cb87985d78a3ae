"""The float64 reference: every float widened, per batch size, checked slicing."""

from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from absl.testing import absltest
from jax import lax

from hloprobe import engine
from hloprobe.compile import cases
from hloprobe.numerics import accuracy, reference
from hloprobe.report.verdict_words import prediction_words

# Compiles with XLA (`make test-fast` skips it).
pytestmark = [pytest.mark.cpu_numerics, pytest.mark.compiles]

_RNG = np.random.default_rng(7)
_X16 = _RNG.standard_normal((4, 512)).astype(np.float16)
_W16 = _RNG.standard_normal((512, 8)).astype(np.float16)
_XC = _RNG.uniform(size=(4, 64)).astype(np.float32)
_WC = _RNG.standard_normal((64, 8)).astype(np.float32)


def _f16_dot(x, w):
  return lax.dot_general(
    x, w, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float16
  )


def _centred(x, w):
  return (x - x.mean(0)) @ w


def _sweep(case, sizes=(1, 2)):
  spec = engine.SweepSpec((case,), sizes, ("float32",), ("cpu",))
  return {r.config.n: r for r in engine.run_sweep(spec)}


class WidenedTest(absltest.TestCase):
  def test_pinned_f16_dot_is_computed_in_f64(self):
    case = cases.Case("f16dot", "", _f16_dot, lambda: (_X16, _W16))
    (ref,) = reference.float64_reference(case, (_X16, _W16))
    np.testing.assert_array_equal(
      ref, _X16.astype(np.float64) @ _W16.astype(np.float64)
    )

  def test_astype_and_constants_are_widened(self):
    fn = lambda x: (x.astype(jnp.bfloat16) * jnp.bfloat16(1 / 3)).astype(
      jnp.float32
    )
    x = np.float32([1.0, 2.0, 3.0])
    (ref,) = reference.float64_reference(cases.Case("c", "", fn, None), (x,))
    # 1/3 was a bf16 literal: widening keeps its bf16 value, exactly.
    third = float(np.asarray(1 / 3, ml_dtypes.bfloat16))
    np.testing.assert_array_equal(ref, x.astype(np.float64) * third)

  def test_round_reference_rounds_to_the_output_dtype(self):
    case = cases.Case(
      "r", "", _f16_dot, lambda: (_X16, _W16), round_reference=True
    )
    (ref,) = reference.float64_reference(case, (_X16, _W16))
    exact = _X16.astype(np.float64) @ _W16.astype(np.float64)
    np.testing.assert_array_equal(ref, exact.astype(np.float16))

  def test_f16_dot_verdict_is_not_exact(self):
    case = cases.Case(
      "f16dot", "", _f16_dot, lambda: (_X16, _W16), rows_independent=True
    )
    r = _sweep(case)[2]
    self.assertTrue(r.ok, r.failure)
    self.assertGreater(r.execution.stats.row0_abs, 0)
    self.assertNotEqual(prediction_words(r.prediction), "exact")
    # (with a note: XLA:CPU has no rule hloprobe knows for f16 dots)
    self.assertStartsWith(
      prediction_words(r.prediction), "within f16 output rounding"
    )


class PerBatchSizeTest(absltest.TestCase):
  def test_batch_dependent_program_gets_its_own_reference(self):
    r = _sweep(cases.Case("centred", "", _centred, lambda: (_XC, _WC)))[2]
    x = _XC[:2].astype(np.float64)
    want = (x - x.mean(0)) @ _WC.astype(np.float64)
    self.assertAlmostEqual(r.execution.stats.row0_ref, want[0, 0], 12)
    # A CPU f32 run of 2 x 64 values: about f32 rounding, not 56 %.
    self.assertLess(r.execution.stats.max_rel, 1e-5)
    self.assertEqual(prediction_words(r.prediction), "within f32 noise")

  def test_a_case_that_lies_about_independent_rows_fails(self):
    lying = cases.Case(
      "liar", "", _centred, lambda: (_XC, _WC), rows_independent=True
    )
    results = _sweep(lying, (1, 4))
    for r in results.values():
      self.assertFalse(r.ok)
      self.assertEqual(r.failure.stage, "reference")
      self.assertIn("case 'liar' declares rows_independent", r.failure.error)


class HeadlineTest(absltest.TestCase):
  def test_a_batched_float_leaf_headlines_over_an_unbatched_loss(self):
    # (loss over the batch, per-row output): the rule's first tier is the
    # batched float leaves (`accuracy.headline_leaf`), so leaf 1.
    case = cases.Case(
      "loss_and_rows",
      "",
      lambda x, w: ((x @ w).sum(), x @ w),
      lambda: (_XC, _WC),
      in_axes=(0, None),
      output_axis=(None, 0),
    )
    refs = reference.References(case, case.full_inputs(), (2,))
    self.assertEqual(refs.headline, 1)


class DtypeTest(absltest.TestCase):
  def test_ulps_of_every_float_dtype(self):
    for dtype in (
      ml_dtypes.bfloat16,
      np.float16,
      np.float32,
      np.float64,
      ml_dtypes.float8_e4m3fn,
      ml_dtypes.float8_e5m2,
    ):
      eps = float(ml_dtypes.finfo(dtype).eps)
      self.assertEqual(accuracy.ulp_distance(1.0, 1.0 + eps, dtype), 1, dtype)
      self.assertEqual(
        accuracy.ulp_distance(-1.0, 1.0, dtype),
        2 * int(np.asarray(1.0, dtype).view(f"u{np.dtype(dtype).itemsize}")),
        dtype,
      )
      self.assertEqual(accuracy.output_ulp([1.5], dtype), eps)

  def test_bf16_output_gets_ulps_and_a_band(self):
    g = np.random.default_rng(0)
    x = g.standard_normal((2, 1024)).astype(ml_dtypes.bfloat16)
    w = g.standard_normal((1024, 256)).astype(ml_dtypes.bfloat16)
    case = cases.Case(
      "bf16mm", "", lambda a, b: a @ b, lambda: (x, w), rows_independent=True
    )
    got = _sweep(case)
    r = got[2]
    self.assertIsNotNone(r.execution.ulp_vs_n1)
    self.assertIsNotNone(r.execution.stats.row0_ulp)
    row0 = np.asarray(x[0], np.float64) @ np.asarray(w, np.float64)
    # The band holds at least one bf16 step at row 0's largest value.
    step = 2.0 ** (np.floor(np.log2(np.max(np.abs(row0)))) - 7)
    self.assertGreaterEqual(r.prediction.tolerance_abs, step)
    self.assertEqual(r.prediction.output_dtype, "bfloat16")
    self.assertStartsWith(
      prediction_words(r.prediction), "within bf16 output rounding"
    )


class LeafNamesTest(absltest.TestCase):
  def test_output_leaves_named_by_their_paths(self):
    self.assertEqual(
      reference.leaf_names({"loss": 1, "y": (2, 3)}),
      ("['loss']", "['y'][0]", "['y'][1]"),
    )
    self.assertEqual(reference.leaf_names(np.ones(2)), ("",))


if __name__ == "__main__":
  absltest.main()


class ChunkTest(absltest.TestCase):
  """A rows_independent case above `CHUNK_BYTES` of batched arguments runs
  its float64 reference in row chunks (issue 37): numpy float64 of the
  same program gives the values, and the whole run the same bits."""

  def setUp(self):
    super().setUp()
    self._bytes = reference.CHUNK_BYTES
    self.addCleanup(setattr, reference, "CHUNK_BYTES", self._bytes)
    g = np.random.default_rng(11)
    self.x = g.standard_normal((9, 64)).astype(np.float32)
    self.w = (g.standard_normal((64, 8)) / 8).astype(np.float32)
    self.case = cases.Case(
      "chunked",
      "",
      lambda x, w: jnp.tanh(x @ w),
      lambda: (self.x, self.w),
      in_axes=(0, None),
      rows_independent=True,
    )

  def _refs(self, chunk_bytes):
    reference.CHUNK_BYTES = chunk_bytes
    return reference.References(self.case, self.case.full_inputs(), (1, 9))

  def test_chunks_of_nearly_equal_rows_give_the_whole_runs_values(self):
    whole = self._refs(1 << 30)
    self.assertEqual(whole._chunk_rows(9), 9)
    # 256 bytes a row (64 f32): 4 rows a chunk, so 3 chunks of 3 rows.
    chunked = self._refs(4 * 256)
    self.assertEqual(chunked._chunk_rows(9), 4)
    (got,) = chunked.at(9)
    want = np.tanh(self.x.astype(np.float64) @ self.w.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    # Not bit for bit in float64 on every CPU: OpenBLAS may sum a gemm of
    # 3 rows with another kernel than one of 9 (an AMD EPYC, AVX2, numpy
    # 2.5.5's OpenBLAS 0.3.34: 10 of 72 values 1-5 ULP apart, 2026-12-06;
    # bit for bit on the Intel machines before). The f32 run, its exact
    # float64 sums rounded once to f32, is.
    np.testing.assert_array_max_ulp(got, whole.at(9)[0], maxulp=16)
    np.testing.assert_array_equal(
      chunked.executed_f32(9).outputs[0], whole.executed_f32(9).outputs[0]
    )
    self.assertEqual(chunked.source(9), reference.EXECUTOR_SOURCE)
    self.assertEqual(len(chunked._programs[9]), 3)
