"""ir/stablehlo_conv.py: a convolution's window read from the StableHLO
jax lowers (no XLA compile). Expected values are the arguments given to
`lax.conv_general_dilated` here, in the NHWC / HWIO / NHWC layout (N, H,
W, C = dims 0-3 of the input; H, W, I, O = 0-3 of the kernel), and K =
kernel input features times window elements (the module's rule)."""

from __future__ import annotations

import jax
import numpy as np
from absl.testing import absltest

from hloprobe.ir import parse_stablehlo_dots


def _conv(x, k):
  return jax.lax.conv_general_dilated(
    x,
    k,
    window_strides=(2, 1),
    padding=((1, 0), (0, 2)),
    rhs_dilation=(1, 2),
    dimension_numbers=("NHWC", "HWIO", "NHWC"),
    feature_group_count=2,
  )


class ConvWindowTest(absltest.TestCase):
  def test_window_from_the_lowering(self):
    x = np.ones((1, 8, 8, 4), np.float32)
    k = np.ones((3, 2, 2, 6), np.float32)  # 4 / 2 groups = 2 in-features
    text = jax.jit(_conv).lower(x, k).as_text()
    (site,) = parse_stablehlo_dots(text)
    w = site.window
    self.assertEqual(
      (w.input_batch, w.input_feature, w.input_spatial), (0, 3, (1, 2))
    )
    self.assertEqual(
      (w.kernel_input_feature, w.kernel_output_feature, w.kernel_spatial),
      (2, 3, (0, 1)),
    )
    self.assertEqual((w.output_batch, w.output_feature), (0, 3))
    self.assertEqual(w.strides, (2, 1))
    self.assertEqual(w.padding, ((1, 0), (0, 2)))
    self.assertEqual((w.lhs_dilation, w.rhs_dilation), ((1, 1), (1, 2)))
    self.assertEqual((w.feature_group_count, w.batch_group_count), (2, 1))
    self.assertEqual(site.contracting_size, 2 * 3 * 2)


if __name__ == "__main__":
  absltest.main()
