"""Every row judged (issue 24, item 6): each batch element of a leaf
against its own f32 noise floor, the worst one named.

Expected values are hand arithmetic on small numpy float64 arrays (the
rule of `numerics.rows`: m_r = e_r / (NOISE_FACTOR x f_r), NOISE_FACTOR =
2); nothing here starts XLA.
"""

from __future__ import annotations

import math

import numpy as np
from absl.testing import absltest

from hloprobe.numerics import NOISE_FACTOR, accuracy, floor_sum, rows
from hloprobe.report.verdict_words import row_words


def _stats(row_abs, leaf="", row0_abs=None):
  """ErrorStats with per-row errors `row_abs` (the rest unused here)."""
  row_abs = np.asarray(row_abs, np.float64)
  r0 = float(row_abs[0]) if row0_abs is None else row0_abs
  top = float(row_abs.max())
  return accuracy.ErrorStats(1.0, 1.0, r0, top, top, leaf=leaf, row_abs=row_abs)


def _floor(row_abs):
  row_abs = np.asarray(row_abs, np.float64)
  return accuracy.NoiseFloor(
    float(row_abs[0]), float(row_abs.max()), 0.0, row_abs=row_abs
  )


class NanRowTest(absltest.TestCase):
  def test_a_nan_row_is_beyond_and_the_worst(self):
    # Row 2's output is NaN, so is its error; rows 0, 1, 3 are 1e-7 over
    # floors of 1e-7 (m = 0.5, within). NaN is not within any band.
    w = rows.worst_row(_stats([1e-7, 1e-7, math.nan, 1e-7]), _floor([1e-7] * 4))
    self.assertEqual((w.row, w.beyond, w.within), (2, 1, False))
    self.assertTrue(math.isnan(w.multiple))


class PerRowNumbersTest(absltest.TestCase):
  def test_row_maxima_along_the_batch_axis(self):
    x = np.arange(12, dtype=np.float64).reshape(3, 2, 2) - 6
    # axis 0: rows [-6..-3], [-2..1], [2..5]: max |.| 6, 2, 5.
    np.testing.assert_array_equal(accuracy.row_maxima(x, 0), [6, 2, 5])
    # axis 1: x[:, 0] is -6,-5,-2,-1,2,3; x[:, 1] is -4,-3,0,1,4,5.
    np.testing.assert_array_equal(accuracy.row_maxima(x, 1), [6, 5])
    self.assertIsNone(accuracy.row_maxima(x, None))
    self.assertIsNone(accuracy.row_maxima(np.float64(3.0), 0))

  def test_error_stats_keep_each_rows_error(self):
    ref = np.ones((8, 4), np.float64)
    got = ref.astype(np.float32)
    got[5, 2] = np.float32(1.0 + 2.0**-10)  # exact in f32
    got[3, 0] = np.float32(1.0 - 2.0**-20)
    s = accuracy.ErrorStats.of(got, ref)
    want = np.zeros(8)
    want[5], want[3] = 2.0**-10, 2.0**-20
    np.testing.assert_array_equal(s.row_abs, want)
    self.assertEqual(s.row0_abs, 0.0)  # row 0's view unchanged
    self.assertEqual(s.max_abs, 2.0**-10)

  def test_batch_axis_1(self):
    ref = np.zeros((2, 3))
    got = np.array([[0.0, 0.5, 0.0], [0.25, 0.0, 0.0]], np.float32)
    s = accuracy.ErrorStats.of(got, ref, axis=1)
    np.testing.assert_array_equal(s.row_abs, [0.25, 0.5, 0.0])

  def test_noise_floor_per_row_is_the_max_over_orders(self):
    ref = np.zeros((3, 2))
    a = np.array([[1e-7, 0], [0, 3e-7], [0, 0]])
    b = np.array([[-2e-7, 0], [1e-7, 0], [0, 4e-7]])
    floor = floor_sum.noise_floor({"a": a, "b": b}, ref)
    np.testing.assert_allclose(floor.row_abs, [2e-7, 3e-7, 4e-7], rtol=0)
    self.assertEqual(floor.row0_abs, 2e-7)
    self.assertIsNone(floor_sum.noise_floor({"a": a}, ref, None).row_abs)


class WorstRowTest(absltest.TestCase):
  def test_worst_is_the_largest_multiple_of_its_own_floor(self):
    # Row 2 has the largest error but a large floor: m = 4e-3 / (2 x 1e-3)
    # = 2. Row 5: m = 1e-3 / (2 x 1e-6) = 500. Row 0: 1e-6 / 2e-6 = 0.5.
    errors = [1e-6, 1e-6, 4e-3, 1e-6, 1e-6, 1e-3, 1e-6, 1e-6]
    floors = [1e-6, 1e-6, 1e-3, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6]
    w = rows.worst_row(_stats(errors), _floor(floors))
    self.assertEqual((w.row, w.rows, w.beyond), (5, 8, 2))
    self.assertAlmostEqual(w.multiple, 500.0)
    self.assertEqual((w.abs_err, w.floor_abs), (1e-3, 1e-6))
    self.assertEqual(w.row0_multiple, 0.5)
    self.assertEqual(
      row_words(w), "row 5: 1.0e-03, 500x beyond f32 noise (2 of 8 rows)"
    )
    self.assertTrue(rows.stands_out(w))

  def test_every_row_within(self):
    w = rows.worst_row(_stats([1e-6, 2e-6]), _floor([1e-6, 1e-6]))
    # m = 0.5 and 1.0: 1.0 is within (the rule is <=).
    self.assertEqual((w.row, w.multiple, w.beyond), (1, 1.0, 0))
    self.assertTrue(w.within)
    self.assertEqual(row_words(w), "every row within f32 noise")
    self.assertFalse(rows.stands_out(w))

  def test_zero_floor_and_narrow_outputs(self):
    w = rows.worst_row(_stats([0.0, 0.5]), _floor([0.0, 0.0]), "bfloat16")
    self.assertEqual((w.row, w.multiple), (1, math.inf))
    self.assertEqual(
      row_words(w),
      "row 1: 5.0e-01, where bf16 output rounding is 0 (1 of 2 rows)",
    )
    exact = rows.worst_row(_stats([0.0, 0.0]), _floor([0.0, 0.0]))
    self.assertEqual((exact.multiple, exact.beyond), (0.0, 0))

  def test_a_named_leaf_leads(self):
    w = rows.worst_row(
      _stats([0.0, 1.0, 0.0], "['y']"), _floor([1.0, 0.1, 0.1])
    )
    self.assertEqual(
      row_words(w),
      "['y'] row 1: 1.0e+00, 5x beyond f32 noise (1 of 3 rows)",
    )

  def test_a_rows_floor_is_at_least_the_median(self):
    # The all-F32 CPU conv net's rows (break24): row 3's own floor 2.3e-7
    # is the luckiest of its orders; the median of the floors, 5e-7,
    # allows 1.0e-6, so its 6.0e-7 is within: m = 6e-7 / 1e-6 = 0.6.
    errors = [4e-7, 3e-7, 5e-7, 6e-7, 2e-7, 4e-7, 3e-7, 5e-7]
    floors = [5e-7, 5e-7, 6e-7, 2.3e-7, 5e-7, 4e-7, 5e-7, 6e-7]
    w = rows.worst_row(_stats(errors), _floor(floors))
    self.assertTrue(w.within)
    self.assertEqual((w.row, w.floor_abs), (3, 5e-7))
    self.assertAlmostEqual(w.multiple, 0.6)
    # A row far beyond the pooled floor is still named.
    errors[5] = 1e-4
    w = rows.worst_row(_stats(errors), _floor(floors))
    self.assertEqual((w.row, w.beyond), (5, 1))
    self.assertAlmostEqual(w.multiple, 1e-4 / (2 * 5e-7))

  def test_floor_without_rows_uses_its_largest(self):
    noise = accuracy.NoiseFloor(1e-6, 1e-5, 0.0)  # floor_check's kind
    w = rows.worst_row(_stats([1e-6, 1e-4]), noise)
    self.assertEqual((w.row, w.floor_abs), (1, 1e-5))
    self.assertAlmostEqual(w.multiple, 1e-4 / (NOISE_FACTOR * 1e-5))

  def test_not_judged_by_rows(self):
    noise = _floor([1.0, 1.0])
    self.assertIsNone(rows.worst_row(_stats([0.0, 3.0]), noise, "int32"))
    unbatched = accuracy.ErrorStats(1.0, 1.0, 0.0, 0.0, 0.0, axis=None)
    self.assertIsNone(rows.worst_row(unbatched, noise))
    self.assertIsNone(rows.worst_row(_stats([0.0, 1.0, 2.0]), noise))


class StandsOutTest(absltest.TestCase):
  def test_same_size_as_an_inaccurate_row_0_does_not(self):
    # Row 0 beyond its floor (m_0 = 0.61 / 2e-5), row 6 at 0.73 < 2 x 0.61.
    w = rows.worst_row(
      _stats([0.61, 0.5, 0.5, 0.5, 0.5, 0.5, 0.73, 0.5]), _floor([1e-5] * 8)
    )
    self.assertEqual(w.row, 6)
    self.assertFalse(w.within)
    self.assertFalse(rows.stands_out(w))

  def test_much_worse_than_an_inaccurate_row_0_does(self):
    w = rows.worst_row(_stats([0.1, 0.0, 0.3]), _floor([1e-5] * 3))
    self.assertTrue(rows.stands_out(w))  # 0.3 > 2 x 0.1

  def test_row_0_worst_does_not(self):
    w = rows.worst_row(_stats([0.3, 0.0, 0.1]), _floor([1e-5] * 3))
    self.assertEqual(w.row, 0)
    self.assertFalse(rows.stands_out(w))
    self.assertFalse(rows.stands_out(None))


if __name__ == "__main__":
  absltest.main()
