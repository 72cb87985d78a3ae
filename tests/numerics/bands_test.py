"""The analytic error band of a dot site (`numerics.bands`)."""

from __future__ import annotations

import numpy as np
import pytest
from absl.testing import absltest

from hloprobe.numerics import bands, rounding

# Asserts CPU-computed floats: `make test-isa` reruns it under other ISAs.
pytestmark = pytest.mark.cpu_numerics


@pytest.mark.compiles
class SiteBandTest(absltest.TestCase):
  def test_tf32_band_dominates_f32(self):
    f32 = bands.site_band(0, "F32_F32_F32", 48, 5.0, 3.0)
    tf32 = bands.site_band(0, "TF32_TF32_F32", 48, 5.0, 3.0)
    # F32: gamma_48 * 5 = 48 * 2^-24 / (1 - 48 * 2^-24) * 5.
    self.assertAlmostEqual(
      f32.worst_abs, 48 * 2**-24 / (1 - 48 * 2**-24) * 5, places=12
    )
    self.assertAlmostEqual(
      tf32.worst_abs, (2 * 2**-11 + 2**-22) * 5 + f32.worst_abs, places=12
    )
    self.assertLess(tf32.expected_abs, tf32.worst_abs)
    self.assertLess(f32.expected_abs, tf32.expected_abs)

  def test_bound_holds_on_random_tf32_dot(self):
    """|TF32 dot - f64 dot| <= worst_abs on real data (rounding to 10 bits)."""
    g = np.random.default_rng(0)
    a, b = g.standard_normal((32, 256)), g.standard_normal((256, 16))
    tf32 = lambda x: np.asarray(
      rounding.round_to_tf32(np.float32(x)), np.float64
    )
    got = tf32(a) @ tf32(b)
    scale = np.abs(a) @ np.abs(b)
    band = bands.site_band(
      0, "TF32_TF32_F32", 256, scale.max(), np.sqrt((scale**2).mean())
    )
    self.assertLess(np.abs(got - a @ b).max(), band.worst_abs)


if __name__ == "__main__":
  absltest.main()
