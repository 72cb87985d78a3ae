"""sites/carrier_shapes.py: a carrier's K and outputs against a site's, on
the recorded a100 compile of the seed at n = 2 (jaxlib 0.12.0.1), read by
hand as tests/sites/operand_ancestry_test.py says: layer 0's dot.4
contracts K = 2 into 2 x 48 outputs, layer 1's dot.5 K = 48, and the last
layer (48 -> 1) is multiply.4 in the reduce fusion: 2 x 48 products for 2
outputs. The sites are the recorded StableHLO's (site 0: K = 2, site 3:
K = 48, one output per row)."""

from __future__ import annotations

from absl.testing import absltest
from recorded import load

from hloprobe.ir import parse_hlo_module, parse_stablehlo_dots
from hloprobe.sites import carrier_shapes, operand_ancestry

_SEED = load("seed_a100_n2_bfloat16", "0.12.0.1")


class SeedCarriersTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    module = parse_hlo_module(_SEED.optimized_hlo)
    cls.carriers = {
      c.instruction.name: c for c in operand_ancestry.find_carriers(module)
    }
    cls.sites = parse_stablehlo_dots(_SEED.stablehlo)

  def test_k_and_outputs(self):
    self.assertEqual(carrier_shapes.carrier_k(self.carriers["dot.4"]), 2)
    self.assertEqual(carrier_shapes.carrier_k(self.carriers["dot.5"]), 48)
    self.assertIsNone(carrier_shapes.carrier_k(self.carriers["multiply.4"]))
    self.assertEqual(carrier_shapes.result_elements(self.carriers["dot.4"]), 96)

  def test_shapes_fit_their_own_site_only(self):
    site0, _, _, site3 = self.sites
    fits = carrier_shapes.shape_fits
    self.assertTrue(fits(site0, self.carriers["dot.4"]))
    self.assertFalse(fits(site0, self.carriers["dot.5"]))  # K 48, not 2
    self.assertTrue(fits(site3, self.carriers["multiply.4"]))  # K products
    self.assertFalse(fits(site3, self.carriers["dot.4"]))
    self.assertFalse(
      carrier_shapes.is_convolution(self.carriers["dot.4"].instruction)
    )


if __name__ == "__main__":
  absltest.main()
