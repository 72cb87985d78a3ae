"""Wording that misled (issue 24, item 8), one test each.

Expected words follow the recorded optimized HLO (tests/testdata/compiles:
which sites XLA strength-reduced), XLA:CPU's passes (operand_upcaster,
YNNPACK; a live CPU compile, `compiles`), exact arithmetic for shares, and
the case's output structure for the headline leaf.
"""

from __future__ import annotations

import dataclasses

import recorded
import testutil
from absl.testing import absltest

from hloprobe.compile import get_target
from hloprobe.ir import as_precision
from hloprobe.numerics import Prediction, accuracy, site_notes
from hloprobe.numerics.verdicts import Verdict, VerdictKind
from hloprobe.records import Compilation, Config, ConfigResult
from hloprobe.report import explain, explain_records, explain_text
from hloprobe.report.verdict_words import verdict_words
from hloprobe.sites import Fate, effective


def _explanation(**fields):
  return testutil.explanation(**fields)


def _render(e) -> str:
  return explain_text.render_explanation([e], width=10_000)


_NOISE = Verdict(VerdictKind.WITHIN_NOISE)


class StrengthReducedPresetTest(absltest.TestCase):
  def test_note_names_dot_strength_reduction_not_the_target(self):
    # seed_mlp at n = 1 on the a100: XLA strength-reduced every site
    # (multiply+reduce in the recorded optimized HLO), f32 products.
    fates = recorded.fates(recorded.load("seed_a100_n1_float32"))
    self.assertTrue(all(f.fate == Fate.MULTIPLY_REDUCE for f in fates))
    declared = [
      dataclasses.replace(f, algorithm="BF16_BF16_F32") for f in fates
    ]
    chosen = tuple(f.effective_algorithm for f in declared)
    text = verdict_words(
      site_notes.annotate(_NOISE, declared, chosen, "float32")
    )
    self.assertIn(
      "site 0 ran F32_F32_F32 for declared BF16_BF16_F32: dot strength "
      "reduction made it a multiply+reduce, whose kernel computes "
      "F32_F32_F32, so this row says nothing about a gemm that honours the "
      "preset",
      text,
    )
    self.assertNotIn("the target ignores the preset", text)

  def test_cpu_dot_keeps_the_target_wording(self):
    fates = recorded.fates(recorded.load("seed_cpu_n1_float32"))
    dots = [
      dataclasses.replace(f, algorithm="BF16_BF16_F32")
      for f in fates
      if f.fate == Fate.DOT
    ]
    self.assertNotEmpty(dots)
    text = verdict_words(
      site_notes.annotate(_NOISE, dots, ("F32_F32_F32",) * len(dots), "float32")
    )
    self.assertIn("the target ignores the preset", text)


class PerSiteAlgorithmTest(absltest.TestCase):
  def test_label_names_each_configs_sites(self):
    fates = recorded.fates(recorded.load("seed_a100_n2_bfloat16"))
    mixed = [
      dataclasses.replace(f, precision_config="highest,highest")
      if f.site.index == 1
      else f
      for f in fates
    ]
    config = Config("seed_mlp", get_target("a100"), 2, as_precision("default"))
    result = ConfigResult(config, Compilation("", "", tuple(mixed)))
    others = ", ".join(str(f.site.index) for f in fates if f.site.index != 1)
    self.assertEqual(
      explain._precision_label("default", [result]),
      f"default (sites {others} DEFAULT; site 1 HIGHEST)",
    )

  def test_effective_lines_say_which_site_runs_tf32(self):
    uses = (
      explain_records.AlgorithmUse(
        "Triton gemm", "default", "TF32_TF32_F32", "ptx: tf32", (0,), (4,)
      ),
      explain_records.AlgorithmUse(
        "Triton gemm", "default", "F32_F32_F32", "ptx: f32", (1,), (4,)
      ),
    )
    text = _render(_explanation(algorithms=uses))
    self.assertIn("site 0: TF32_TF32_F32 [ptx: tf32]", text)
    self.assertIn("site 1: F32_F32_F32 [ptx: f32]", text)


class TopShareTest(absltest.TestCase):
  def test_share_never_rounds_to_all_or_nothing(self):
    # Three TF32 sites whose errors alone are 996, 3 and 1 (exact): 99.6%.
    total = 996 + 3 + 1
    self.assertEqual(explain_text._share_words(996 / total), ">99%")
    self.assertEqual(explain_text._share_words(1 / total), "<1%")
    self.assertEqual(explain_text._share_words(1.0), "100%")
    self.assertEqual(explain_text._share_words(0.5), "50%")
    row = explain_records.PredictedRowZero(
      "default",
      (4,),
      1e-3,
      1e-6,
      "explained by TF32_TF32_F32 at sites [0, 1, 2]",
      0,
      996 / total,
    )
    self.assertIn(
      "top site 0 (>99% of the row-0 error the non-F32 sites cause one at "
      "a time)",
      _render(_explanation(predicted=(row,))),
    )


class HeadlineLeafTest(absltest.TestCase):
  def test_fixed_by_structure_and_named(self):
    # Two batched float leaves: the first, whatever the numbers.
    self.assertEqual(accuracy.headline_leaf((0, 0), ("float32",) * 2), 0)
    rows = (
      explain_records.RowZero(
        "default", (1,), 0.25, 0.0, None, "float32", "['grad_out']"
      ),
      explain_records.RowZero(
        "default", (8,), 0.5, 1e-3, 3, "float32", "['grad_out']"
      ),
    )
    predicted = (
      explain_records.PredictedRowZero(
        "default",
        (1, 8),
        1e-3,
        1e-6,
        "unexplained",
        None,
        None,
        leaf="['grad_out']",
      ),
    )
    text = _render(
      _explanation(compile_only=False, row0=rows, predicted=predicted)
    )
    self.assertIn("n = 1: leaf ['grad_out'] 0.25 (|err| vs f64", text)
    self.assertIn("n = 8: leaf ['grad_out'] 0.5 (|err| vs f64", text)
    self.assertIn("n = 1, 8: leaf ['grad_out'] |err| vs f64", text)


class OtherLeavesTest(absltest.TestCase):
  def test_explain_names_an_overflowing_leaf_beside_the_headline(self):
    overflow = (
      "overflow: 16 of 16 elements of ['s8'] exceed s8 [-128, 127] and wrap"
    )
    p = Prediction(
      (),
      None,
      None,
      0.0,
      (),
      None,
      (),
      None,
      ("['s32']", "['s8']"),
      leaf="['s32']",
      verdicts=(
        Verdict(VerdictKind.EXACT, "int32", "['s32']"),
        Verdict(
          VerdictKind.OVERFLOW, "int8", "['s8']", (), 16, 16, 16, "wraps"
        ),
      ),
    )
    self.assertEqual(explain._verdict_words(p), f"exact; ['s8']: {overflow}")


class CpuSixteenBitRuleTest(absltest.TestCase):
  def test_rule(self):
    self.assertEqual(effective.cpu_algorithm("bf16", "f32")[0], "BF16_BF16_F32")
    self.assertEqual(effective.cpu_algorithm("f16", "f32")[0], "F16_F16_F32")
    self.assertIsNone(effective.cpu_algorithm("bf16", "bf16")[0])
    # The rule missing is the 16-bit result's, not bf16 operands'.
    self.assertIn(
      "no rule for a bf16 x bf16 -> bf16 dot",
      effective.cpu_algorithm("bf16", "bf16")[1],
    )


if __name__ == "__main__":
  absltest.main()
