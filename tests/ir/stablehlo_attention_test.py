"""ir/stablehlo_attention.py: a cuDNN attention call as one contraction
site, read from the recorded a100 StableHLO of `cudnn_attention` (jaxlib
0.12.0.1, tests/testdata/compiles/cudnn_attention_a100_n2_bfloat16). The
expected values are that text read by hand: one
`stablehlo.custom_call @__cudnn$fmhaSoftmax` of q, k, v
tensor<2x128x4x64xbf16> (BTNH), described by q k^T: batch dims B and N
(0, 2), contracting the head dim (3), K = 64."""

from __future__ import annotations

import os

import testutil
from absl.testing import absltest

from hloprobe.ir import parse_stablehlo_dots

_MLIR = os.path.join(
  testutil.ROOT,
  "tests/testdata/compiles/cudnn_attention_a100_n2_bfloat16",
  "jaxlib0.12.0.1/stablehlo.mlir",
)


class AttentionSiteTest(absltest.TestCase):
  def test_one_site_described_by_q_k_transposed(self):
    with open(_MLIR, encoding="utf-8") as f:
      (site,) = parse_stablehlo_dots(f.read())
    self.assertEqual(site.op, "__cudnn$fmhaSoftmax")
    self.assertEqual(str(site.lhs), "bf16[2,128,4,64]")
    self.assertEqual(str(site.rhs), "bf16[2,128,4,64]")
    self.assertEqual((site.lhs_batch, site.rhs_batch), ((0, 2), (0, 2)))
    self.assertEqual((site.lhs_contracting, site.rhs_contracting), ((3,), (3,)))
    self.assertEqual(site.contracting_size, 64)
    self.assertFalse(site.is_convolution)
    self.assertEqual(
      (site.lhs_ancestry, site.rhs_ancestry), (frozenset({0}), frozenset({1}))
    )


if __name__ == "__main__":
  absltest.main()
