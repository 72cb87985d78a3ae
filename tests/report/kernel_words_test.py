"""The kernel model's findings in words (`report/kernel_words.py`).

The records are made by hand at observed row 0 = 1.0, where one f32 ulp is
2^-23; the expected lines are written out from their numbers."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.kernels.records import RowCountRule, RowCountWhy
from hloprobe.numerics.kernel_sites import Band, KernelRemainder, KernelSite
from hloprobe.report.kernel_words import (
  _BAND_WORDS,
  kernel_site_words,
  remainder_lines,
  row_count_why_words,
)

_ULP = 2.0**-23
_ORDERS = ("xla", "pairwise")


def _remainder(left_ulps: float, spread_ulps: float) -> KernelRemainder:
  return KernelRemainder(
    1.0 + left_ulps * _ULP,
    1.0,
    _ULP,
    (0, 1, 2),
    (3,),
    _ORDERS,
    spread_ulps * _ULP,
    _ULP,
    -_ULP,
  )


class RemainderLinesTest(absltest.TestCase):
  def test_a_remainder_the_order_and_functions_cover(self):
    self.assertEqual(
      remainder_lines(_remainder(2, 4)),
      [
        "kernel model row 0 1.00000024 vs observed 1: +2.38e-07 (+2.0 f32 "
        "ulps) left; sites [0, 1, 2] bit-exact model, sites [3] band",
        "band sites [3] over f32 orders xla, pairwise: row 0 spans 4.77e-07 "
        "(4.0 ulps)",
        "elementwise functions (exp, sin, ...: the GPU's libdevice in the "
        "gemm prologues vs XLA:CPU's), each one ulp off: row 0 moves "
        "+1.19e-07 / -1.19e-07 (+1.0 / -1.0 ulps)",
        "the remainder is within what the band sites' order and the "
        "elementwise functions' ulp move: consistent with bit-exact gemms",
      ],
    )

  def test_a_remainder_beyond_them_is_unexplained(self):
    r = _remainder(-8, 2)  # 8 ulps left; 2 + 1 ulps of movement
    self.assertFalse(r.covered)
    self.assertEqual(
      remainder_lines(r)[-1],
      "the remainder is beyond what the band sites' order and the "
      "elementwise functions' ulp move: unexplained",
    )
    self.assertIn("-9.54e-07 (-8.0 f32 ulps) left", remainder_lines(r)[0])


class KernelSiteWordsTest(absltest.TestCase):
  def test_every_band_has_words(self):
    self.assertEqual(set(_BAND_WORDS), {b.name for b in Band})

  def test_a_band_in_words(self):
    site = KernelSite("band", Band.SPLIT_K, "Triton gemm", split_k=4)
    self.assertEqual(
      kernel_site_words(site),
      "Triton gemm split-K 4: the reduce's f32 order not modelled",
    )


class RowCountWhyWordsTest(absltest.TestCase):
  """`row_count_why_words` on records made by hand; the expected words
  name the XLA rule of each (xla/backends/gpu/codegen/emitters/
  reduction.cc RowReductionFusion / MultiRowReductionFusion::TryCreate)."""

  def test_every_rule_has_words(self):
    for rule in RowCountRule:
      self.assertTrue(row_count_why_words(RowCountWhy(rule, name="x")))

  def test_the_data_is_said(self):
    rule = "xla/backends/gpu/codegen/emitters/reduction.cc"
    self.assertEqual(
      row_count_why_words(RowCountWhy(RowCountRule.ROW, length=512)),
      f"RowReductionFusion ({rule}): threads, vector size and tile from "
      "the reduced length 512 and the input width alone; the row count "
      "only sets rows per block",
    )
    self.assertIn(
      "< 108 cores, so the row count decides it",
      row_count_why_words(RowCountWhy(RowCountRule.MULTI_ROW, cores=108)),
    )
    self.assertTrue(
      row_count_why_words(RowCountWhy(RowCountRule.MULTI_ROW)).endswith(
        "halves the vector size while ceil(rows / threads_kept) < the "
        "GPU's cores"
      )
    )
    self.assertTrue(
      row_count_why_words(
        RowCountWhy(RowCountRule.LIBRARY, name="cuBLASLt")
      ).startswith("cuBLASLt picks its kernel at run time")
    )
    self.assertEqual(
      row_count_why_words(RowCountWhy(RowCountRule.NO_RULE, name="sort")),
      "sort: no rule read",
    )

  def test_strength_reduction_comes_first(self):
    why = RowCountWhy(RowCountRule.ROW, length=8, strength_reduced=True)
    words = row_count_why_words(why)
    self.assertTrue(words.startswith("dot strength reduction (Algebraic"))
    self.assertTrue(words.endswith("; the row count only sets rows per block"))


class CitationTest(absltest.TestCase):
  """Review finding 10: the compile-only config rule cites each release's
  pass; the autotuner -> config_assigner rename is XLA c3378654
  (2026-08-21, /work/shared/XLA_NOTES.md 1c), after jaxlib 0.10.2."""

  def test_rule_names_each_releases_pass(self):
    rule = row_count_why_words(RowCountWhy(RowCountRule.TRITON_GEMM))
    self.assertIn(
      "config_assigner_pass.cc GetConfigAssignerOptions on jaxlib 0.12.0.1",
      rule,
    )
    self.assertIn(
      "autotuner_pass.cc AutotunerPass::CreateDeviceless on 0.10.2", rule
    )
    self.assertIn("c3378654", rule)
    self.assertNotIn("jaxlib 0.10.2 and 0.12.0.1", rule)


if __name__ == "__main__":
  absltest.main()
