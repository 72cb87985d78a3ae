"""numerics/floor_sum.py: the noise floor of several orders' outputs,
taken one at a time, against the same numbers worked out with numpy on
all the outputs stacked (the definition the module's docstring gives:
row 0's largest |output - ref|, every value's, row 0's largest max - min
over the orders, and each row's largest)."""

from __future__ import annotations

import numpy as np
from absl.testing import absltest

from hloprobe.numerics import floor_sum


class FloorSumTest(absltest.TestCase):
  def test_one_at_a_time_equals_stacked(self):
    g = np.random.default_rng(0)
    ref = g.standard_normal((3, 4))
    outs = {
      f"order{i}": (ref + g.standard_normal((3, 4)) * 1e-6) for i in range(4)
    }
    got = floor_sum.noise_floor(outs, ref, axis=0)
    stacked = np.stack(list(outs.values()))
    diff = np.abs(stacked - ref)
    self.assertEqual(got.row0_abs, diff[:, 0].max())
    self.assertEqual(got.max_abs, diff.max())
    self.assertEqual(
      got.row0_spread_abs,
      (stacked[:, 0].max(axis=0) - stacked[:, 0].min(axis=0)).max(),
    )
    np.testing.assert_array_equal(got.row_abs, diff.max(axis=(0, 2)))

  def test_batch_axis_one(self):
    ref = np.zeros((2, 3))
    a, b = ref.copy(), ref.copy()
    a[1, 0], b[0, 2] = 0.5, -0.25  # row 0 along axis 1 is column 0
    got = floor_sum.noise_floor({"a": a, "b": b}, ref, axis=1)
    self.assertEqual(got.row0_abs, 0.5)
    self.assertEqual(got.row0_spread_abs, 0.5)
    np.testing.assert_array_equal(got.row_abs, [0.5, 0.0, 0.25])

  def test_nan_is_kept_not_dropped(self):
    ref = np.zeros(2)
    got = floor_sum.noise_floor({"a": np.array([np.nan, 0.0])}, ref)
    self.assertTrue(np.isnan(got.row0_abs))
    self.assertTrue(np.isnan(got.max_abs))


if __name__ == "__main__":
  absltest.main()
