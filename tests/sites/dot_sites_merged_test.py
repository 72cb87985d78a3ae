"""Found trying to break issue 24 as a user: a merged dot split-K.

An attention block (x bf16[n, 64, 128], q, k, v = x @ wq, x @ wk, x @ wv,
then `jax.nn.dot_product_attention(implementation='cudnn')`) compiled for
the h100 at n = 1 (jaxlib 0.12.0.1; tests/testdata/break24/attn_h100_n1,
recorded with `explain --output_dir`). Its optimized HLO, read by hand:
dot-merger made one dot of the three projections (`concatenate.1` of wq,
wk, wv along their free dimension) and split-K made that dot a batch of 4
(`reshape.19` bf16[4,32,384], `dot.6` f32[4,384,64] with
lhs_batch_dims={0}, then `reduce` over dimension 0) in the Triton gemm
fusion `gemm_fusion_dot.4`. Sites 0-2 were "unknown ... not split back to
it"; each is that Triton gemm, merged with the other two, split-K 4.
"""

from __future__ import annotations

import pathlib

from absl.testing import absltest

from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.sites import dot_sites
from hloprobe.sites.site_fate import Fate

_DATA = pathlib.Path(__file__).parents[1] / "testdata" / "break24"


class MergedSplitKTest(absltest.TestCase):
  def test_projections_are_the_merged_split_k_gemm(self):
    sites = parse_stablehlo_dots((_DATA / "attn_h100_n1.mlir").read_text())
    module = parse_hlo_module((_DATA / "attn_h100_n1.hlo").read_text())
    mapped = dot_sites.map_dot_sites(sites, module)
    self.assertEqual(
      [m.fate for m in mapped], [Fate.TRITON_GEMM] * 3 + [Fate.CUDNN_ATTENTION]
    )
    self.assertEqual(
      {m.carriers for m in mapped[:3]}, {("gemm_fusion_dot.4", "dot.6")}
    )
    self.assertEqual(
      [m.merged_with for m in mapped[:3]], [(1, 2), (0, 2), (0, 1)]
    )
    self.assertEqual([m.split_k for m in mapped], [4, 4, 4, None])


if __name__ == "__main__":
  absltest.main()
