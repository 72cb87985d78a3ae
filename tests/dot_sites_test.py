"""What the seed's dot sites become on the CPU (real XLA compiles)."""

from __future__ import annotations

from absl.testing import absltest, parameterized

from hloprobe import cases, dot_sites, lowering, targets
from hloprobe.dot_sites import Fate
from hloprobe.hlo_parse import parse_hlo_module
from hloprobe.stablehlo_parse import parse_stablehlo_dots


def _fates(n: int, precision: str = "float32", target: str = "cpu"):
  case = cases.get_case("seed_mlp")
  args = case.inputs_for(case.make_inputs(), n)
  compiled = lowering.compile_case(
    case, args, precision, targets.get_target(target)
  )
  sites = parse_stablehlo_dots(compiled.stablehlo)
  return dot_sites.map_dot_sites(
    sites, parse_hlo_module(compiled.optimized_hlo)
  )


class CpuSeedFatesTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("bfloat16", "bfloat16"),
    ("tensorfloat32", "tensorfloat32"),
    ("float32", "float32"),
  )
  def test_batch_1_last_site_is_strength_reduced(self, precision):
    fates = _fates(1, precision)
    self.assertEqual(
      [f.fate for f in fates], [Fate.DOT] * 3 + [Fate.MULTIPLY_REDUCE]
    )
    self.assertEqual(
      dot_sites.fate_summary(fates), "dot x3, multiply+reduce x1"
    )

  def test_batch_2_last_site_stays_a_dot(self):
    fates = _fates(2)
    self.assertEqual([f.fate for f in fates], [Fate.DOT] * 4)
    # Each site has its own carrier, and the precision config survives.
    self.assertLen({f.carriers for f in fates}, 4)
    self.assertEqual({f.precision_config for f in fates}, {"highest,highest"})

  def test_carriers_name_real_instructions(self):
    fates = _fates(2, "tensorfloat32")
    self.assertEqual(fates[3].emitter, "top level")
    self.assertTrue(fates[3].carriers[-1].startswith("dot"))
    self.assertEqual(fates[0].emitter, "__ynn_fusion")
    self.assertEqual(fates[0].precision_config, "high,high")


class FixtureFatesTest(absltest.TestCase):
  def test_unmatched_site_is_gone(self):
    module = parse_hlo_module(
      "HloModule m\n\nENTRY %main (p: f32[2]) -> f32[2] {\n"
      "  ROOT %p = f32[2]{0} parameter(0)\n}\n"
    )
    case = cases.get_case("seed_mlp")
    args = case.inputs_for(case.make_inputs(), 2)
    compiled = lowering.compile_case(
      case, args, "float32", targets.get_target("cpu")
    )
    sites = parse_stablehlo_dots(compiled.stablehlo)
    fates = dot_sites.map_dot_sites(sites, module)
    self.assertEqual({f.fate for f in fates}, {Fate.GONE})


if __name__ == "__main__":
  absltest.main()
