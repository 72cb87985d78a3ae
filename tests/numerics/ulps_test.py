"""numerics/ulps.py: distances in representable values, against numpy's
own `nextafter` and the formats' documented spacings (f32: 2**-23 at 1,
bf16: 2**-7 at 1), not against hloprobe."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from absl.testing import absltest

from hloprobe.numerics import ulps


class UlpDistanceTest(absltest.TestCase):
  def test_neighbours_are_one_apart_across_zero_and_signs(self):
    one = np.float32(1)
    up = np.nextafter(one, np.float32(2))
    self.assertEqual(ulps.ulp_distance(one, up, np.float32), 1)
    tiny = np.nextafter(np.float32(0), np.float32(1))
    # -tiny, -0/+0, +tiny: two steps, and the zeros none.
    self.assertEqual(ulps.ulp_distance(-tiny, tiny, np.float32), 2)
    self.assertEqual(ulps.ulp_distance(-0.0, 0.0, np.float32), 0)

  def test_rounds_to_the_dtype_first(self):
    # 1 + 2**-7 is bf16's next value after 1; 1 + 2**-9 rounds to 1.
    self.assertEqual(ulps.ulp_distance(1.0, 1 + 2**-7, ml_dtypes.bfloat16), 1)
    self.assertEqual(ulps.ulp_distance(1.0, 1 + 2**-9, ml_dtypes.bfloat16), 0)

  def test_the_largest_over_an_array_in_chunks(self):
    a = np.ones(ulps._CHUNK + 3, np.float32)
    b = a.copy()
    b[-1] = np.float32(1 + 3 * 2**-23)  # in the second chunk only
    self.assertEqual(ulps.ulp_distance(a, b, np.float32), 3)
    self.assertEqual(ulps.ulp_distance(a[:0], b[:0], np.float32), 0)

  def test_complex_counts_each_part(self):
    a = np.complex64(1 + 1j)
    b = np.complex64(1 + np.nextafter(np.float32(1), np.float32(2)) * 1j)
    self.assertEqual(ulps.ulp_distance(a, b, np.complex64), 1)

  def test_not_a_float_type_is_refused(self):
    with self.assertRaises(KeyError):
      ulps.ulp_distance(1, 2, np.int32)


class OutputUlpTest(absltest.TestCase):
  def test_spacing_at_the_largest_magnitude(self):
    self.assertEqual(
      ulps.output_ulp(np.float32([0.5, -1.5]), np.float32), 2.0**-23
    )
    self.assertEqual(
      ulps.output_ulp(np.float32([3.0]), ml_dtypes.bfloat16), 2.0**-6
    )

  def test_below_normals_the_subnormal_step_and_ints_none(self):
    self.assertEqual(
      ulps.output_ulp(np.zeros(2, np.float32), np.float32),
      float(np.finfo(np.float32).smallest_subnormal),
    )
    self.assertEqual(ulps.output_ulp(np.int32([5]), np.int32), 0.0)


if __name__ == "__main__":
  absltest.main()
