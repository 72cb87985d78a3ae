"""Pass attribution from real XLA pass dumps (CPU here; GPU in targets tests)."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe import passes, sweep
from hloprobe.errors import HloprobeError
from hloprobe.hlo_parse import parse_hlo_module
from hloprobe.stablehlo_parse import parse_stablehlo_dots


def _attribution(n: int, xla_flags: str = ""):
  r = sweep.run_single_config("seed_mlp", "cpu", "float32", n)
  sites = parse_stablehlo_dots(r.stablehlo)
  name = parse_hlo_module(r.optimized_hlo).name
  return passes.explain_passes("seed_mlp", "cpu", "float32", n, sites, name, xla_flags)


class CpuPassesTest(absltest.TestCase):

  def test_batch_1_last_site_strength_reduced_by_algsimp(self):
    found = _attribution(1)
    # On the CPU, AlgebraicSimplifier (algsimp) does dot strength reduction.
    self.assertEqual(set(found), {3})
    self.assertEqual((found[3].pass_name, found[3].pipeline, found[3].fate),
                     ("algsimp", "simplification", "multiply+reduce"))

  def test_batch_2_dots_go_to_the_dot_library(self):
    found = _attribution(2)
    self.assertEqual(set(found), {0, 1, 2})
    self.assertEqual({a.pass_name for a in found.values()}, {"dot-library-rewriter"})
    self.assertEqual({a.fate for a in found.values()}, {"dot in __ynn_fusion"})

  def test_empty_dump_dir(self):
    tmp = self.create_tempdir().full_path
    with self.assertRaisesRegex(HloprobeError, "no pass dumps for module 'm'"):
      passes.attribute_passes(tmp, "m", [])


if __name__ == "__main__":
  absltest.main()
