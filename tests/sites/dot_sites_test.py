"""Dot-site fates of recorded dot-merger compiles (no XLA); the other
recorded compiles' fates, of two releases, are in site_fate_test.py.

Found trying to break issue 24 as a user: two integer dots of one x, w.

`jnp.einsum("bk,kj->bj", x, w, preferred_element_type=jnp.int32)` and the
same einsum into int8, x s8[1,48], w s8[48,12], compiled by XLA:CPU
(jaxlib 0.12.0.1) at n = 1: the optimized module
(tests/testdata/break24/ints_cpu_n1.hlo, recorded with `sweep
--output_dir`) has `dot.2` s32[1,12] and `dot.3` s8[1,12], both without
metadata, on the same parameters. Both sites were "ambiguous" (their
effective algorithm "unknown", "emulated as F32"); the result element type
tells them apart, as the HLO text read by hand does.

Found trying to break issue 24 as a user: a merged dot split-K.

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

import os
import pathlib

from absl.testing import absltest, parameterized

from hloprobe.compile import targets
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.sites import dot_sites, effective
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
    self.assertEqual(fates[1].merge_words(), "merged by dot-merger with site 0")
    record = _resolved(stem)[0].record()
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


_DATA = pathlib.Path(__file__).parents[1] / "testdata" / "break24"


def _mapped(edit=lambda text: text):
  sites = parse_stablehlo_dots((_DATA / "ints_cpu_n1.mlir").read_text())
  hlo = edit((_DATA / "ints_cpu_n1.hlo").read_text())
  return dot_sites.map_dot_sites(sites, parse_hlo_module(hlo))


class IntegerDotsWithoutMetadataTest(absltest.TestCase):
  def test_each_site_is_the_dot_of_its_element_type(self):
    mapped = _mapped()
    self.assertEqual([m.site.result.dtype for m in mapped], ["s32", "s8"])
    self.assertEqual([m.fate for m in mapped], [Fate.DOT, Fate.DOT])
    self.assertEqual([m.carriers[-1] for m in mapped], ["dot.2", "dot.3"])

  def test_element_types_swapped_swap_the_carriers(self):
    # Should-fail half: the two dots' result types planted the other way
    # round (and the fusions reading them), so the carriers swap too.
    def plant(text):
      for old, new in (
        ("%dot.3 = s8[1,12]", "%dot.3 = sX[1,12]"),
        ("%dot.2 = s32[1,12]", "%dot.2 = s8[1,12]"),
        ("%dot.3 = sX[1,12]", "%dot.3 = s32[1,12]"),
        ("= s8[1,12]{1,0} fusion(%dot.3)", "= s32[1,12]{1,0} fusion(%dot.3)"),
        ("= s32[1,12]{1,0} fusion(%dot.2)", "= s8[1,12]{1,0} fusion(%dot.2)"),
      ):
        assert old in text, old
        text = text.replace(old, new)
      return text

    mapped = _mapped(plant)
    self.assertEqual([m.carriers[-1] for m in mapped], ["dot.3", "dot.2"])


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


_INT8 = (
  pathlib.Path(__file__).parents[1] / "intdots_testdata" / "int8_dots_a100_n4"
)


class UnknownEmitterTest(absltest.TestCase):
  """A dot in a fusion kind hloprobe has not seen is unknown, never a
  plain dot (review finding 6), on every jaxlib. Fixture: the a100's
  int8_dots at n = 4 (jaxlib 0.12.0.1), whose s8 -> s8 dot XLA wraps in a
  kLoop fusion (`%wrapped_dot`)."""

  def _mapped(self, edit=lambda text: text):
    sites = parse_stablehlo_dots((_INT8 / "stablehlo.txt").read_text())
    hlo = edit((_INT8 / "optimized_hlo.txt").read_text())
    return dot_sites.map_dot_sites(sites, parse_hlo_module(hlo))

  def _loop_site(self, mapped):
    (site,) = [m for m in mapped if m.carriers[0] == "wrapped_dot"]
    return site

  def test_the_loop_fusion_is_a_plain_dot(self):
    self.assertEqual(self._loop_site(self._mapped()).fate, Fate.DOT)

  def test_a_kind_not_seen_is_unknown_with_its_name(self):
    old = "%wrapped_dot = s8[4,16]{1,0} fusion(%x.1, %v.1), kind=kLoop"

    def plant(text):
      assert old in text
      return text.replace(old, old.replace("kLoop", "kScatter"))

    site = self._loop_site(self._mapped(plant))
    self.assertEqual(site.fate, Fate.UNKNOWN)
    self.assertIn("'kScatter' kernel", site.unknown_reason)


if __name__ == "__main__":
  absltest.main()
