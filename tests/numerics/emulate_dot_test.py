"""Tests of hloprobe.numerics.emulate_dot: algorithms' errors have their known sizes."""

from __future__ import annotations

import functools
import math

import jax
import ml_dtypes
import numpy as np
import pytest
from absl.testing import absltest, parameterized
from jax import lax

from hloprobe.errors import EmulationError, InvalidArgumentError
from hloprobe.numerics import emulate_dot
from hloprobe.numerics.emulate_dot import (
  EMULATED_ALGORITHMS,
  SUMMATION_ORDERS,
  emulated_dot_general,
)

# Asserts CPU-computed floats: `make test-isa` reruns it under other ISAs.
pytestmark = [pytest.mark.cpu_numerics, pytest.mark.compiles]

_MATMUL = (((1,), (0,)), ((), ()))
# rms of the relative error of rounding to nearest with p explicit mantissa
# bits is 2^-p * sqrt(E[1/m^2] / 12) for significands m log-uniform on
# [1, 2) (E[1/m^2] = 3 / (8 ln 2)); a product of two rounded operands has
# sqrt(2) times that, and so has a sum of such products of random signs.
_RMS_PER_OPERAND = math.sqrt(3 / (8 * math.log(2)) / 12)


@functools.cache
def _emulate(algorithm, order="xla", rounding="rna", dn=_MATMUL):
  return jax.jit(
    lambda a, b: emulated_dot_general(
      a, b, dn, algorithm, order=order, tf32_rounding=rounding
    )
  )


def _random_matmul(seed=0, m=64, k=512, n=64):
  g = np.random.default_rng(seed)
  a = g.standard_normal((m, k)).astype(np.float32)
  b = g.standard_normal((k, n)).astype(np.float32)
  return a, b, a.astype(np.float64) @ b.astype(np.float64)


def _rms_rel(got, ref) -> float:
  err = np.asarray(got, np.float64) - ref
  return float(np.sqrt(np.mean(err**2) / np.mean(ref**2)))


def _max_rel(got, ref) -> float:
  """max |got - ref| / max |ref|: the normwise relative error."""
  return float(
    np.max(np.abs(np.asarray(got, np.float64) - ref)) / np.max(np.abs(ref))
  )


class KnownMagnitudeTest(parameterized.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.a, cls.b, cls.ref = _random_matmul()
    cls.rms = {
      alg: _rms_rel(_emulate(alg)(cls.a, cls.b), cls.ref)
      for alg in EMULATED_ALGORITHMS
      if alg != "F64_F64_F64"
    }

  @parameterized.named_parameters(
    ("tf32", "TF32_TF32_F32", 10),
    ("bf16", "BF16_BF16_F32", 7),
    ("f16", "F16_F16_F32", 10),
  )
  def test_single_pass_error_is_operand_rounding(self, algorithm, bits):
    # Measured: TF32 2.93e-4, BF16 2.28e-3 (predicted 2.93e-4, 2.35e-3).
    predicted = math.sqrt(2) * _RMS_PER_OPERAND * 2.0**-bits
    self.assertBetween(self.rms[algorithm], 0.9 * predicted, 1.1 * predicted)

  def test_bf16_x3_error_is_second_order(self):
    # The dropped lo*lo term and the bits below the lo parts are each of
    # size (2^-7 * 0.21)^2 per operand: predicted about 4.8e-6, measured
    # 4.4e-6, 500 times below one BF16 pass.
    self.assertBetween(self.rms["BF16_BF16_F32_X3"], 2e-6, 1e-5)
    self.assertLess(
      self.rms["BF16_BF16_F32_X3"], self.rms["BF16_BF16_F32"] / 200
    )

  @parameterized.parameters(
    "BF16_BF16_F32_X6", "BF16_BF16_F32_X9", "TF32_TF32_F32_X3"
  )
  def test_fine_splits_reach_f32(self, algorithm):
    # Measured: X6 and X9 1.6e-7, TF32_X3 4.1e-7, F32 4.2e-7.
    self.assertLess(self.rms[algorithm], 2 * self.rms["F32_F32_F32"])

  def test_ordering_of_algorithms(self):
    r = self.rms
    self.assertLess(r["F32_F32_F32"], r["BF16_BF16_F32_X3"])
    self.assertLess(r["BF16_BF16_F32_X3"], r["TF32_TF32_F32"])
    self.assertLess(r["TF32_TF32_F32"], r["BF16_BF16_F32"])
    self.assertLessEqual(r["BF16_BF16_F32_X9"], 1.1 * r["BF16_BF16_F32_X6"])

  @parameterized.named_parameters(
    ("f32", "F32_F32_F32", 2.0**-24),
    ("tf32", "TF32_TF32_F32", 2.0**-11),
    ("bf16", "BF16_BF16_F32", 2.0**-8),
    # The splits: u of the sum of the parts (numerics.OPERAND_UNIT).
    ("bf16_x3", "BF16_BF16_F32_X3", 2.0**-16),
    ("bf16_x6", "BF16_BF16_F32_X6", 2.0**-24),
    ("bf16_x9", "BF16_BF16_F32_X9", 2.0**-24),
    ("tf32_x3", "TF32_TF32_F32_X3", 2.0**-22),
  )
  def test_componentwise_worst_case_bound(self, algorithm, u):
    # |C - AB| <= (2u + u^2 + gamma_K) |A||B| (Higham, Accuracy and
    # Stability of Numerical Algorithms, 2nd ed., section 3.5), with u the
    # operands' unit roundoff (f32: the product rounding) and
    # gamma_K = K 2^-24 / (1 - K 2^-24) for the f32 sums.
    k = self.a.shape[1]
    gamma = k * 2.0**-24 / (1 - k * 2.0**-24)
    abs_ab = np.abs(self.a.astype(np.float64)) @ np.abs(self.b)
    err = np.abs(np.asarray(_emulate(algorithm)(self.a, self.b)) - self.ref)
    self.assertLessEqual(float(np.max(err / abs_ab)), 2 * u + u * u + gamma)


class TensorflowIssue127577Test(absltest.TestCase):
  """The (256x1024)@(1024x512) large-magnitude matmul of tensorflow PR 127577."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    g = np.random.default_rng(127577)
    cls.a = (g.standard_normal((256, 1024)) * 300.0).astype(np.float32)
    cls.b = (g.standard_normal((1024, 512)) * 100.0).astype(np.float32)
    cls.ref = cls.a.astype(np.float64) @ cls.b.astype(np.float64)

  def test_tf32_matches_reported_figures(self):
    # Reported 2.95e-4 on the GPU and 2.89e-4 simulated (tensorflow PR
    # 127577); emulated here 2.856e-4 (rna and rne alike).
    for rounding in ("rna", "rne"):
      got = _max_rel(
        _emulate("TF32_TF32_F32", rounding=rounding)(self.a, self.b), self.ref
      )
      self.assertBetween(got, 2.78e-4, 2.95e-4)

  def test_f32_stays_at_f32_level(self):
    # Reported 4.4e-7 (TF), 7.4e-7 in the README; measured 7.4e-7 (AVX-512)
    # and 1.4e-6 (AVX2): the f32 sum order is the CPU's. What holds on every
    # CPU: the componentwise bound gamma_K |A||B| (Higham, section 3.5) and
    # an error far below TF32's (2.9e-4, operand rounding, order-free).
    k = self.a.shape[1]
    gamma = k * 2.0**-24 / (1 - k * 2.0**-24)
    got = np.asarray(_emulate("F32_F32_F32")(self.a, self.b), np.float64)
    abs_ab = np.abs(self.a.astype(np.float64)) @ np.abs(self.b)
    self.assertLessEqual(float(np.max(np.abs(got - self.ref) / abs_ab)), gamma)
    tf32 = _max_rel(_emulate("TF32_TF32_F32")(self.a, self.b), self.ref)
    self.assertLess(_max_rel(got, self.ref), tf32 / 50)


# (lhs shape, rhs shape, dimension numbers), including batch dims, two
# contracting dims, a vector operand and a K that is no power of two.
_LAYOUTS = {
  "matmul": ((3, 7), (7, 5), _MATMUL),
  "batched": ((2, 3, 7), (2, 7, 5), (((2,), (1,)), ((0,), (0,)))),
  "transposed": ((7, 3), (5, 7), (((0,), (1,)), ((), ()))),
  "two_contracting_batch_inside": (
    (3, 2, 4, 5),
    (4, 5, 2, 6),
    (((2, 3), (0, 1)), ((1,), (2,))),
  ),
  "vector": ((7,), (7, 5), (((0,), (0,)), ((), ()))),
  "k100": ((3, 100), (100, 4), _MATMUL),
}


class SummationOrderTest(parameterized.TestCase):
  @parameterized.named_parameters(
    (f"{name}_{order}", name, order)
    for name in _LAYOUTS
    for order in SUMMATION_ORDERS
  )
  def test_exact_sums_agree_with_xla(self, layout, order):
    # Small integers: every product and partial sum is exact in f32, so
    # every order must give XLA's result, in XLA's output layout.
    lhs_shape, rhs_shape, dn = _LAYOUTS[layout]
    g = np.random.default_rng(1)
    a = g.integers(-4, 5, lhs_shape).astype(np.float32)
    b = g.integers(-4, 5, rhs_shape).astype(np.float32)
    want = lax.dot_general(a, b, dn, precision=lax.Precision.HIGHEST)
    got = _emulate("TF32_TF32_F32", order, dn=dn)(a, b)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))

  def test_orders_sum_in_their_own_order(self):
    # ISA-independent: K = 1024 exact products, 1 then 1023 x 2^-24
    # (2^-12 x 2^-12). Every sum is exact or an exact tie (1 + 2^-24 rounds
    # to 1, ties to even), so no FMA or vector width changes a bit. By hand:
    # sequential adds each 2^-24 to 1 and keeps 1; blocks of 32 lose the 31
    # in block 0 and add the other 31 exact block sums 2^-19; the tree loses
    # only the one 2^-24 paired with 1 at its first level.
    k, tiny = 1024, 2.0**-12
    a = np.full((1, k), tiny, np.float32)
    a[0, 0] = 1.0
    b = a.T.copy()
    want = {
      "sequential": 1.0,
      "blocked": 1.0 + 31 * 2.0**-19,
      "pairwise": 1.0 + 1022 * 2.0**-24,
    }
    exact = 1.0 + 1023 * 2.0**-24
    for order, value in want.items():
      got = float(_emulate("F32_F32_F32", order)(a, b)[0, 0])
      self.assertEqual(got, value, order)
    # The CPU's own order ("xla") is the ISA's: only its error bound, the
    # componentwise gamma_K |A||B| (Higham, section 3.1), is the same.
    got = float(_emulate("F32_F32_F32")(a, b)[0, 0])
    gamma = k * 2.0**-24 / (1 - k * 2.0**-24)
    self.assertLessEqual(abs(got - exact), gamma * exact)

  def test_every_order_within_the_f32_bound(self):
    a, b, ref = _random_matmul(seed=2, m=32, k=1024, n=32)
    gamma = 1024 * 2.0**-24 / (1 - 1024 * 2.0**-24)
    abs_ab = np.abs(a.astype(np.float64)) @ np.abs(b)
    for o in SUMMATION_ORDERS:
      err = np.abs(np.asarray(_emulate("F32_F32_F32", o)(a, b)) - ref)
      self.assertLessEqual(float(np.max(err / abs_ab)), gamma, o)


class EdgeCaseTest(parameterized.TestCase):
  @parameterized.parameters(
    "BF16_BF16_F32_X3",
    "BF16_BF16_F32_X6",
    "BF16_BF16_F32_X9",
    "TF32_TF32_F32_X3",
    "F32_F32_F32",
    "TF32_TF32_F32",
  )
  def test_infinite_operand_gives_inf_not_nan(self, algorithm):
    # inf - high part is nan in the low parts; XLA zeroes the non-finite
    # partial sum before adding high x high (`ZeroNaNs`).
    a = np.array([[np.inf, 1.0]], np.float32)
    b = np.ones((2, 1), np.float32)
    self.assertEqual(float(_emulate(algorithm)(a, b)[0, 0]), np.inf)
    a = np.array([[np.nan, 1.0]], np.float32)
    self.assertTrue(np.isnan(_emulate(algorithm)(a, b)[0, 0]))

  def test_f64_with_x64(self):
    a, b, ref = _random_matmul(seed=3, m=8, k=64, n=8)
    with jax.enable_x64(True):
      got = emulated_dot_general(a, b, _MATMUL, "F64_F64_F64")
      self.assertEqual(got.dtype, np.float64)
      np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-13)

  def test_f64_without_x64_is_an_error(self):
    a, b, _ = _random_matmul(seed=3, m=2, k=4, n=2)
    with self.assertRaisesRegex(EmulationError, "enable_x64"):
      emulated_dot_general(a, b, _MATMUL, "F64_F64_F64")

  def test_bad_names_are_errors(self):
    a = np.ones((2, 2), np.float32)
    with self.assertRaisesRegex(
      InvalidArgumentError, "'ANY_F8_ANY_F8_F32'.*F32_F32_F32"
    ):
      emulated_dot_general(a, a, _MATMUL, "ANY_F8_ANY_F8_F32")
    with self.assertRaisesRegex(InvalidArgumentError, "'kahan'"):
      emulated_dot_general(a, a, _MATMUL, "F32_F32_F32", order="kahan")
    with self.assertRaisesRegex(EmulationError, "int32"):
      emulated_dot_general(a.astype(np.int32), a, _MATMUL, "F32_F32_F32")


class TruncatedTf32Test(absltest.TestCase):
  """TF32_TRUNCATED_F32: a TF32 mma with no cvt.rna.tf32.f32 ignores each
  operand's low 13 bits (MMA-Sim's tf32 operand read). Hand-worked: a =
  1 + 2^-11 + 2^-12 is exact in f32; truncated to TF32's 10 mantissa bits
  it is 1, rounded to nearest (RNA) 1 + 2^-10. With b = 1 and K = 4 the
  sums are exact in f32: 4 truncated, 4 + 2^-8 rounded."""

  def test_hand_worked(self):
    a = np.full((1, 4), 1 + 2.0**-11 + 2.0**-12, np.float32)
    b = np.ones((4, 1), np.float32)
    for mode in ("rna", "rne"):  # the name decides, not the mode
      got = _emulate("TF32_TRUNCATED_F32", rounding=mode)(a, b)
      self.assertEqual(float(got[0, 0]), 4.0)
    self.assertEqual(float(_emulate("TF32_TF32_F32")(a, b)[0, 0]), 4 + 2.0**-8)

  def test_negative_operands_truncate_toward_zero(self):
    a = np.full((1, 4), -(1 + 2.0**-11 + 2.0**-12), np.float32)
    b = np.ones((4, 1), np.float32)
    got = _emulate("TF32_TRUNCATED_F32")(a, b)
    self.assertEqual(float(got[0, 0]), -4.0)

  def test_band_unit_is_a_whole_tf32_unit(self):
    from hloprobe.numerics.bands import OPERAND_UNIT

    # 10 explicit mantissa bits: truncation errs by < 2^-10 relative,
    # rounding to nearest by <= 2^-11 (see rounding_test's frexp check).
    self.assertEqual(OPERAND_UNIT["TF32_TRUNCATED_F32"], 2.0**-10)
    self.assertIn("TF32_TRUNCATED_F32", emulate_dot.SWITCHABLE)


class SplitProductsTest(parameterized.TestCase):
  """Which partial products each split adds (hand rule from XLA's
  `EmitBF16x3Matmul` / `x6` / `x9` in stablehlo_lower_to_triton.cc and
  Triton's TF32x3): X3 hi*hi, hi*lo, lo*hi; X6 the parts whose indices sum
  to at most 2; X9 all nine. The count is also what JAX lowers as
  `num_primitive_operations` (X9 and TF32_X3 do not lower for the CPU)."""

  @parameterized.named_parameters(
    ("bf16_x3", "BF16_BF16_F32_X3", 2, 1, True),
    ("bf16_x6", "BF16_BF16_F32_X6", 3, 2, True),
    ("bf16_x9", "BF16_BF16_F32_X9", 3, 4, False),
    ("tf32_x3", "TF32_TF32_F32_X3", 2, 1, False),
  )
  def test_products(self, algorithm, parts, max_index_sum, lowers_on_cpu):
    want = {
      (i, j)
      for i in range(parts)
      for j in range(parts)
      if i + j <= max_index_sum
    }
    got = emulate_dot._SPLITS[algorithm]
    self.assertEqual(set(got), want)
    self.assertLen(got, len(want))
    self.assertEqual(got[-1], (0, 0))  # high x high last (`ZeroNaNs`)
    if not lowers_on_cpu:
      return
    a = np.ones((2, 2), np.float32)
    preset = getattr(lax.DotAlgorithmPreset, algorithm)
    text = (
      jax.jit(lambda x, y: lax.dot(x, y, precision=preset))
      .lower(a, a)
      .as_text()
    )
    self.assertIn(f"num_primitive_operations = {len(want)},", text)


def _sequential_16(a, b, kind, round_products, round_sums):
  """numpy: acc = S(acc + P(a_k b_k)) for k in order, in f32 (ml_dtypes)."""
  to16 = lambda x: np.asarray(x, np.float32).astype(kind).astype(np.float32)
  keep = lambda x: np.asarray(x, np.float32)
  product, total = (
    (to16 if round_products else keep),
    (to16 if round_sums else keep),
  )
  acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
  for k in range(a.shape[1]):
    acc = total(acc + product(np.outer(a[:, k], b[k])))
  return acc


class SixteenBitTest(parameterized.TestCase):
  """16-bit products and sums (issue 11, input 3) against numpy + ml_dtypes,
  summed in the same sequential order: bit for bit."""

  @parameterized.named_parameters(
    ("bf16_products_f32", "BF16_PRODUCTS_F32", ml_dtypes.bfloat16, True, False),
    (
      "bf16_products_bf16",
      "BF16_PRODUCTS_BF16",
      ml_dtypes.bfloat16,
      True,
      True,
    ),
    ("bf16_bf16_bf16", "BF16_BF16_BF16", ml_dtypes.bfloat16, False, True),
    ("f16_products_f32", "F16_PRODUCTS_F32", np.float16, True, False),
    ("f16_products_f16", "F16_PRODUCTS_F16", np.float16, True, True),
    ("f16_f16_f16", "F16_F16_F16", np.float16, False, True),
  )
  def test_sequential_matches_numpy(self, algorithm, kind, products, sums):
    g = np.random.default_rng(16)
    a = g.standard_normal((3, 40)).astype(kind).astype(np.float32)
    b = g.standard_normal((40, 5)).astype(kind).astype(np.float32)
    got = np.asarray(_emulate(algorithm, "sequential")(a, b))
    np.testing.assert_array_equal(
      got, _sequential_16(a, b, kind, products, sums)
    )
    self.assertIn(algorithm, EMULATED_ALGORITHMS)

  def test_rounded_products_differ_from_exact_ones(self):
    # bf16 x bf16 products need 16 significand bits: rounding them to 8
    # moves sums that exact products (BF16_BF16_F32) do not.
    g = np.random.default_rng(3)
    a = (
      g.standard_normal((1, 256)).astype(ml_dtypes.bfloat16).astype(np.float32)
    )
    b = (
      g.standard_normal((256, 64)).astype(ml_dtypes.bfloat16).astype(np.float32)
    )
    rounded = np.asarray(_emulate("BF16_PRODUCTS_F32")(a, b), np.float64)
    exact = np.asarray(_emulate("BF16_BF16_F32")(a, b), np.float64)
    products = a.astype(np.float64)[0][:, None] * b
    want = products.astype(ml_dtypes.bfloat16).astype(np.float64).sum(0)
    np.testing.assert_allclose(rounded[0], want, rtol=0, atol=1e-4)
    np.testing.assert_allclose(exact[0], products.sum(0), rtol=0, atol=1e-4)
    self.assertGreater(np.abs(rounded - exact).max(), 1e-2)


if __name__ == "__main__":
  absltest.main()
