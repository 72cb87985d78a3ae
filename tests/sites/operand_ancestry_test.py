"""sites/operand_ancestry.py: the carriers of every dot site, their kernels
and the entry parameters each operand depends on, on the recorded
a100 compile of the seed at n = 2 (jaxlib 0.12.0.1,
tests/testdata/compiles/seed_a100_n2_bfloat16). Expected values are that
module read by hand: the entry takes x f32[2,2] (parameter 0), W0
f32[48,2] (1), W1, W2 f32[48,48] (2, 3) and W3 f32[1,48] (4); layer 0's
dot.4 in gemm_fusion_dot contracts K = 2 into 2 x 48 outputs, layer 1's
dot.5 K = 48, and the last layer (48 -> 1) is multiply.4 in the reduce
fusion: 2 x 48 products for 2 outputs. The sites are the recorded
StableHLO's (site 0: K = 2, site 3: K = 48, one output per row)."""

from __future__ import annotations

from absl.testing import absltest
from recorded import load

from hloprobe.ir import parse_hlo_module
from hloprobe.sites import operand_ancestry

_SEED = load("seed_a100_n2_bfloat16", "0.12.0.1")


class SeedCarriersTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    module = parse_hlo_module(_SEED.optimized_hlo)
    cls.carriers = {
      c.instruction.name: c for c in operand_ancestry.find_carriers(module)
    }

  def test_carriers_their_kernels_and_ancestry(self):
    dot4, dot5 = self.carriers["dot.4"], self.carriers["dot.5"]
    self.assertEqual(dot4.kernel.name, "gemm_fusion_dot")
    self.assertEqual(dot4.path, ("gemm_fusion_dot", "dot.4"))
    self.assertEqual(dot4.operand_ancestry, (frozenset({0}), frozenset({1})))
    self.assertEqual(dot5.operand_ancestry[1], frozenset({2}))  # W1
    self.assertIn(4, self.carriers["multiply.4"].operand_ancestry[0])  # W3


if __name__ == "__main__":
  absltest.main()
