"""Dot-site fates of recorded dot-merger compiles (no XLA); the other
recorded compiles' fates, of two releases, are in site_fate_test.py."""

from __future__ import annotations

import os

from absl.testing import absltest, parameterized

from hloprobe.compile import targets
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.sites import dot_sites, effective, site_fate
from hloprobe.sites.site_fate import Fate

_MERGER = os.path.join(os.path.dirname(__file__), "testdata", "dot_merger")


def _fixture(stem: str, edit=lambda hlo: hlo):
  """(sites, optimized module) of a recorded compile
  (testdata/dot_merger/record.py)."""
  path = os.path.join(_MERGER, stem)
  with open(f"{path}.stablehlo.mlir") as f:
    sites = parse_stablehlo_dots(f.read())
  with open(f"{path}.hlo") as f:
    return sites, parse_hlo_module(edit(f.read()))


def _fixture_fates(stem: str, edit=lambda hlo: hlo):
  """The mapped sites of a recorded compile (`_fixture`)."""
  return dot_sites.map_dot_sites(*_fixture(stem, edit))


def _resolved(stem: str, edit=lambda hlo: hlo):
  """The resolved sites of a recorded A100 compile (`_fixture`)."""
  sites, module = _fixture(stem, edit)
  fates = dot_sites.map_dot_sites(sites, module)
  return effective.resolve(fates, module, [], targets.get_target("a100"))


class DotMergerFixtureTest(parameterized.TestCase):
  """Sites XLA's dot-merger made one dot of (issue 21): never "gone".

  Expected values read by hand from the recorded optimized HLO (A100,
  n = 2, bfloat16): the same-side pair is one `dot(concatenate(w1, w2), x)`
  in fusion `gemm_fusion_dot` (`__triton_nested_gemm_fusion`) on both
  releases, whose metadata is site 0's (program_cases.py:70:10); the
  cross-side pair is one dot over `concatenate(w1^T, w2)` in
  `gemm_fusion_dot.1` on jaxlib 0.12.0.1, two gemm fusions on 0.10.2.
  """

  @parameterized.named_parameters(
    ("same_side_0_12", "t_merged-jaxlib0.12.0.1", ("gemm_fusion_dot", "dot.2")),
    ("same_side_0_10", "t_merged-jaxlib0.10.2", ("gemm_fusion_dot", "dot.2")),
    (
      "cross_side_0_12",
      "t_merged_cross-jaxlib0.12.0.1",
      ("gemm_fusion_dot.1", "dot.3"),
    ),
  )
  def test_merged_sites_share_one_gemm(self, stem, carriers):
    fates = _fixture_fates(stem)
    self.assertEqual([f.fate for f in fates], [Fate.TRITON_GEMM] * 2)
    self.assertEqual([f.carriers for f in fates], [carriers] * 2)
    self.assertEqual([f.merged_with for f in fates], [(1,), (0,)])
    self.assertEqual(
      [f.mapping for f in fates], ["source location", "data flow"]
    )
    self.assertEqual(
      [f.backend_config_kind for f in fates],
      ["__triton_nested_gemm_fusion"] * 2,
    )
    self.assertEqual(
      site_fate.merge_words(fates[1]), "merged by dot-merger with site 0"
    )
    record = site_fate.site_record(_resolved(stem)[0])
    self.assertEqual(record["merged_with"], [1])

  def test_cross_side_not_merged_on_0_10(self):
    fates = _fixture_fates("t_merged_cross-jaxlib0.10.2")
    self.assertEqual([f.fate for f in fates], [Fate.TRITON_GEMM] * 2)
    self.assertEqual(
      [f.carriers for f in fates],
      [("gemm_fusion_dot_general.2", "dot.3"), ("gemm_fusion_dot", "dot.4")],
    )
    self.assertEqual([f.merged_with for f in fates], [None, None])

  def test_unsplittable_merge_is_unknown_not_gone(self):
    # Planted: a third part in the concatenate, so no part's share of it is
    # a site's share of the dot's outputs (2 x 128 for parts of 256 x 64).
    plant = lambda hlo: hlo.replace(
      "f32[256,128]{1,0} concatenate(%param_1.1, %param_2)",
      "f32[256,192]{1,0} concatenate(%param_1.1, %param_2, %param_2)",
    )
    fates = _fixture_fates("t_merged-jaxlib0.12.0.1", plant)
    self.assertNotIn(Fate.GONE, [f.fate for f in fates])
    self.assertEqual([f.fate for f in fates], [Fate.UNKNOWN] * 2)
    self.assertEqual(fates[0].candidates, (("gemm_fusion_dot", "dot.2"),))
    self.assertIn("none of whose parts fits", fates[0].unknown_reason)
    # `effective.resolve` gives the mapping's reason as the evidence.
    resolved = _resolved("t_merged-jaxlib0.12.0.1", plant)
    self.assertEqual(resolved[0].algorithm_evidence, fates[0].unknown_reason)

  def test_without_the_concatenate_the_sites_are_gone(self):
    # The tester's check: with the concatenate's parts hidden (a plain
    # parameter), nothing reads the sites' operands and they are gone.
    plant = lambda hlo: hlo.replace(
      "concatenate(%param_1.1, %param_2), dimensions={1}",
      "add(%param_1.1, %param_2)",
    ).replace("f32[256,128]{1,0} add", "f32[256,64]{1,0} add")
    fates = _fixture_fates("t_merged-jaxlib0.12.0.1", plant)
    self.assertEqual([f.fate for f in fates], [Fate.GONE] * 2)


if __name__ == "__main__":
  absltest.main()
