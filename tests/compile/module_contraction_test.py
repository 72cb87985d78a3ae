"""compile/module_contraction.py: an HLO dot or convolution as the
`jax.lax` call a module case runs. The instructions are written here as
XLA prints them; the expected convolution dimension numbers are jax's own
for the same layout (`lax.conv_dimension_numbers` of NHWC / HWIO / NHWC,
which XLA prints `dim_labels=b01f_01io->b01f`)."""

from __future__ import annotations

import numpy as np
from absl.testing import absltest
from jax import lax

from hloprobe.compile import module_contraction
from hloprobe.ir import parse_hlo_module

_HLO = """HloModule m

ENTRY %main (x: f32[1,8,8,4], k: f32[3,3,4,16], a: bf16[2,3,5], b: bf16[2,5,7]) -> (f32[1,4,8,16], f32[2,3,7]) {
  %x = f32[1,8,8,4]{3,2,1,0} parameter(0)
  %k = f32[3,3,4,16]{3,2,1,0} parameter(1)
  %a = bf16[2,3,5]{2,1,0} parameter(2)
  %b = bf16[2,5,7]{2,1,0} parameter(3)
  %c = f32[1,4,8,16]{3,2,1,0} convolution(%x, %k), window={size=3x3 stride=2x1 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %d = f32[2,3,7]{2,1,0} dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT %t = (f32[1,4,8,16]{3,2,1,0}, f32[2,3,7]{2,1,0}) tuple(%c, %d)
}
"""


class ContractionCallTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.by_name = {i.name: i for i in parse_hlo_module(_HLO).entry.instructions}

  def test_dot_general_at_no_precision_with_its_result_type(self):
    fn, args, kw = module_contraction.contraction_call(
      self.by_name["d"], ["a", "b"]
    )
    self.assertIs(fn, lax.dot_general)
    self.assertEqual(args, ("a", "b", (((2,), (1,)), ((0,), (0,)))))
    self.assertEqual(
      kw, {"precision": None, "preferred_element_type": np.float32}
    )

  def test_convolution_window_and_layout(self):
    fn, args, kw = module_contraction.contraction_call(
      self.by_name["c"], ["x", "k"]
    )
    self.assertIs(fn, lax.conv_general_dilated)
    self.assertEqual(args, ("x", "k"))
    want = lax.conv_dimension_numbers(
      (1, 8, 8, 4), (3, 3, 4, 16), ("NHWC", "HWIO", "NHWC")
    )
    self.assertEqual(kw["dimension_numbers"], want)
    self.assertEqual(kw["window_strides"], (2, 1))
    self.assertEqual(kw["padding"], [(1, 1), (1, 1)])
    self.assertEqual((kw["feature_group_count"], kw["precision"]), (1, None))
    self.assertIn("dot", module_contraction.CONTRACTIONS)


if __name__ == "__main__":
  absltest.main()
