"""Dot algorithms in the executor (`contraction`, `rounding`) against
exact integer arithmetic on the f32 bit patterns and numpy float64."""

from __future__ import annotations

import tracemalloc

import ml_dtypes
import numpy as np
from absl.testing import absltest, parameterized

from hloprobe.errors import ExecutionError
from hloprobe.execute import contraction, rounding

_MATMUL = contraction.DotDims((), (), (1,), (0,))


def _tf32_by_integers(x: np.float32, ties_away: bool) -> float:
  """x rounded to 11 significant bits with Python integers: the f32
  significand as an integer, the 13 dropped bits compared with half."""
  bits = int(np.float32(x).view(np.uint32))
  sign, rest = bits >> 31, bits & 0x7FFFFFFF
  kept, dropped = rest >> 13, rest & 0x1FFF
  if dropped > 0x1000 or (dropped == 0x1000 and (ties_away or kept & 1)):
    kept += 1
  out = np.uint32((sign << 31) | (kept << 13)).view(np.float32)
  return float(out)


class RoundingTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("tie", 1 + 2**-11),
    ("negative_tie", -(1 + 2**-11)),
    ("odd_tie", 1 + 3 * 2**-11),
    ("above_tie", 1 + 2**-11 + 2**-20),
    ("small", 3.0e-39),
    ("large", 3.3e38),
  )
  def test_tf32_modes(self, value):
    x = np.array([value], np.float32)
    for mode, away in (("rna", True), ("rne", False)):
      self.assertEqual(
        float(rounding.round_to_tf32(x, mode)[0]),
        _tf32_by_integers(x[0], away),
        mode,
      )

  def test_tf32_keeps_inf_and_nan(self):
    x = np.array([np.inf, -np.inf, np.nan], np.float32)
    out = rounding.round_to_tf32(x, "rna")
    self.assertEqual(out[0], np.inf)
    self.assertEqual(out[1], -np.inf)
    self.assertTrue(np.isnan(out[2]))

  def test_bf16_split_parts_are_bf16_and_sum_back(self):
    x = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    parts = rounding.split_bf16(x, 3)
    for part in parts:
      np.testing.assert_array_equal(
        part, part.astype(ml_dtypes.bfloat16).astype(np.float32)
      )
    total = sum(p.astype(np.float64) for p in parts)
    np.testing.assert_array_equal(total, x.astype(np.float64))


class ContractionTest(parameterized.TestCase):
  def setUp(self):
    super().setUp()
    g = np.random.default_rng(3)
    self.a = g.standard_normal((5, 64)).astype(np.float32)
    self.b = g.standard_normal((64, 7)).astype(np.float32)
    self.exact = self.a.astype(np.float64) @ self.b.astype(np.float64)

  def _error(self, algorithm):
    out = contraction.contract(self.a, self.b, _MATMUL, algorithm)
    return np.max(np.abs(out - self.exact))

  def test_f32_products_are_exact(self):
    # f32 x f32 products fit in float64; sums of 64 such are exact to
    # far below an f32 ulp.
    self.assertLess(self._error("F32_F32_F32"), 1e-12)

  @parameterized.named_parameters(
    ("bf16", "BF16_BF16_F32", "BF16_BF16_F32_X3"),
    ("bf16_x3", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6"),
    ("tf32", "TF32_TF32_F32", "TF32_TF32_F32_X3"),
  )
  def test_more_passes_are_more_accurate(self, fewer, more):
    self.assertLess(self._error(more) * 50, self._error(fewer))

  def test_x9_is_f32_accurate(self):
    # Nine bf16 passes cover the 24 bits of both operands: well within the
    # f32 sum's own rounding (64 terms).
    scale = np.abs(self.a) @ np.abs(self.b)
    self.assertLess(self._error("BF16_BF16_F32_X9"), 2**-24 * scale.max())

  def test_batch_dims_and_integer_dots(self):
    g = np.random.default_rng(4)
    a = g.integers(-100, 100, (3, 4, 5)).astype(np.int8)
    b = g.integers(-100, 100, (5, 3, 2)).astype(np.int8)
    dims = contraction.DotDims((0,), (1,), (2,), (0,))
    out = contraction.contract(a, b, dims, "F32_F32_F32")
    want = np.einsum("bmk,kbn->bmn", a.astype(np.int64), b.astype(np.int64))
    np.testing.assert_array_equal(out, want)

  def test_aliases_and_unknown_names(self):
    self.assertEqual(contraction.preset_name("TF32"), "TF32_TF32_F32")
    self.assertEqual(contraction.preset_name("F32_F32_F32"), "F32_F32_F32")
    with self.assertRaisesRegex(ExecutionError, "unknown dot algorithm"):
      contraction.preset_name("FP32")


def _bf16_parts(x: np.ndarray, count: int) -> list[np.ndarray]:
  """x (f32 values) as `count` bf16 remainders, by ml_dtypes' rounding."""
  parts, rest = [], x.astype(np.float32)
  for _ in range(count):
    part = rest.astype(ml_dtypes.bfloat16).astype(np.float32)
    parts.append(part)
    rest = rest - part
  return parts


# The pairs of parts each split multiplies (XLA's Triton emitter,
# `stablehlo_lower_to_triton.cc` EmitBF16x3Matmul / x6 / x9: the pairs
# whose indices sum to at most 1, 2 or 4).
_SPLIT_PAIRS = {
  "BF16_BF16_F32_X3": (2, 1),
  "BF16_BF16_F32_X6": (3, 2),
  "BF16_BF16_F32_X9": (3, 4),
}


class SplitProductsTest(parameterized.TestCase):
  """The split algorithms' pairs of parts multiplied as fewer products of
  sums of parts (issue 37: fewer float64 BLAS calls) give the pairs' sum:
  exactly where float64 sums are exact, and to float64 rounding (the same
  f32 results) elsewhere."""

  @parameterized.parameters(*_SPLIT_PAIRS)
  def test_exact_against_integers(self, algorithm):
    # Values +-[1, 2) with full 24-bit significands: every part is an
    # integer multiple of 2^-23, each product one of 2^-46, and a sum of
    # 32 of them stays below 2^7, so float64 holds every partial sum
    # exactly and any order of summing gives the exact result.
    count, most = _SPLIT_PAIRS[algorithm]
    g = np.random.default_rng(11)
    m, k, n = 6, 32, 5

    def full(shape):
      x = (1 + g.integers(1, 2**23, shape) * 2.0**-23).astype(np.float32)
      return x * g.choice(np.float32([-1, 1]), shape)

    a, b = full((m, k)), full((k, n))
    lp = [(p * 2**23).astype(np.int64) for p in _bf16_parts(a, count)]
    rp = [(p * 2**23).astype(np.int64) for p in _bf16_parts(b, count)]
    exact = sum(
      lp[i] @ rp[j] for i in range(count) for j in range(count) if i + j <= most
    )
    self.assertLess(int(np.max(np.abs(exact))), 2**53)
    out = contraction.contract(a, b, _MATMUL, algorithm)
    np.testing.assert_array_equal(out, exact.astype(np.float64) * 2.0**-46)

  @parameterized.parameters(*_SPLIT_PAIRS, "TF32_TF32_F32_X3")
  def test_same_f32_results_as_pair_by_pair(self, algorithm):
    g = np.random.default_rng(12)
    a = g.standard_normal((3, 40, 300)).astype(np.float32)
    b = (g.standard_normal((3, 300, 50)) / 17).astype(np.float32)
    dims = contraction.DotDims((0,), (0,), (2,), (1,))
    if algorithm.startswith("TF32"):
      high = lambda x: rounding.round_to_tf32(x, "rna")
      lp = [high(a), high(a - high(a))]
      rp = [high(b), high(b - high(b))]
      pairs = ((0, 0), (0, 1), (1, 0))
    else:
      count, most = _SPLIT_PAIRS[algorithm]
      lp, rp = _bf16_parts(a, count), _bf16_parts(b, count)
      pairs = [
        (i, j) for i in range(count) for j in range(count) if i + j <= most
      ]
    by_pairs = sum(
      np.matmul(lp[i].astype(np.float64), rp[j].astype(np.float64))
      for i, j in pairs
    )
    out = contraction.contract(a, b, dims, algorithm)
    scale = np.matmul(np.abs(a).astype(np.float64), np.abs(b))
    self.assertLess(np.max(np.abs(out - by_pairs) / scale), 2**-48)
    np.testing.assert_array_equal(
      out.astype(np.float32), by_pairs.astype(np.float32)
    )

  @parameterized.parameters(*_SPLIT_PAIRS, "TF32_TF32_F32_X3")
  def test_non_finite_operands_as_pair_by_pair(self, algorithm):
    # An infinite operand's parts are inf and NaN (inf - inf): its row is
    # NaN, as each pair's products make it; the other rows are finite.
    a = np.ones((3, 4), np.float32)
    a[1, 2] = np.inf
    b = np.full((4, 2), 0.5, np.float32)
    with np.errstate(invalid="ignore"):  # inf - inf, in the split
      out = contraction.contract(a, b, _MATMUL, algorithm)
    self.assertTrue(np.all(np.isnan(out[1])))
    np.testing.assert_array_equal(out[[0, 2]], np.full((2, 2), 2.0))


class NanLinesTest(parameterized.TestCase):
  """A NaN in an operand's row (column) makes that row (column) of the
  product NaN (IEEE 754), so the executor multiplies the other lines
  alone: the rest must be what the whole product gives. Operands are
  small integers, so every sum is exact whatever its order, and the
  expected values are exact integer matmuls."""

  def _integers(self, shape, seed):
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(np.float32)

  @parameterized.parameters("F32_F32_F32", "TF32_TF32_F32", "BF16_BF16_F32_X3")
  def test_nan_rows_and_columns(self, algorithm):
    a, b = self._integers((6, 5), 1), self._integers((5, 4), 2)
    want = a.astype(np.int64) @ b.astype(np.int64)
    a[[1, 2, 4]] = np.nan
    a[5, 3] = np.nan  # one NaN makes the whole row NaN
    b[0, 2] = np.nan
    got = contraction.contract(a, b, _MATMUL, algorithm)
    nan = np.zeros(want.shape, bool)
    nan[[1, 2, 4, 5]] = True
    nan[:, 2] = True
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])

  def test_nan_times_zero_and_infinity_stay_nan(self):
    a = np.array([[np.nan, 0.0], [1.0, 2.0], [np.inf, 1.0]], np.float32)
    b = np.array([[0.0], [np.inf]], np.float32)
    with np.errstate(invalid="ignore"):  # inf * 0, as the executor runs
      got = contraction.contract(a, b, _MATMUL, "F32_F32_F32")
    # Row 0: NaN * 0 + 0 * inf; row 1: 1 * 0 + 2 * inf; row 2: inf * 0.
    self.assertTrue(np.isnan(got[0, 0]))
    self.assertEqual(got[1, 0], np.inf)
    self.assertTrue(np.isnan(got[2, 0]))

  def test_batched_nan_slabs(self):
    dims = contraction.DotDims((0,), (0,), (2,), (1,))
    a, b = self._integers((4, 3, 5), 3), self._integers((4, 5, 2), 4)
    want = np.matmul(a.astype(np.int64), b.astype(np.int64))
    a[[1, 3]] = np.nan  # batches 1 and 3 of the lhs
    b[2, :, 1] = np.nan  # one column of batch 2
    got = contraction.contract(a, b, dims, "F32_F32_F32")
    nan = np.zeros(want.shape, bool)
    nan[[1, 3]] = True
    nan[2, :, 1] = True
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])

  def test_all_nan(self):
    a = np.full((2, 3), np.nan, np.float32)
    got = contraction.contract(a, self._integers((3, 2), 5), _MATMUL, "F32")
    self.assertTrue(np.isnan(got).all())


class MemoryTest(parameterized.TestCase):
  """The executor never builds a broadcast (M, K, N) product (issue 37):
  numpy's allocations (tracemalloc sees them) stay a few times the
  float64 operands and output."""

  @parameterized.parameters(
    "F32_F32_F32",
    "BF16_BF16_F32",
    "BF16_BF16_F32_X6",
    "BF16_BF16_F32_X9",
    "TF32_TF32_F32_X3",
  )
  def test_peak_is_a_multiple_of_the_operands(self, algorithm):
    m, k, n = 64, 4096, 64  # an (M, K, N) float64 product: 128 MiB
    g = np.random.default_rng(5)
    a = g.standard_normal((m, k)).astype(np.float32)
    b = g.standard_normal((k, n)).astype(np.float32)
    operands = (m * k + k * n + m * n) * 8  # float64: 4.03 MiB
    tracemalloc.start()
    try:
      contraction.contract(a, b, _MATMUL, algorithm)
      _, peak = tracemalloc.get_traced_memory()
    finally:
      tracemalloc.stop()
    # The splits hold their parts (up to 3 of each operand) besides: at
    # most 32 MiB, a quarter of one (M, K, N) product.
    self.assertLess(peak, 8 * operands)


if __name__ == "__main__":
  absltest.main()
