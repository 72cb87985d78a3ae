"""The answer's parts without XLA: findings ranked by distance beyond
their band and the answer's lines (issue 26, "explain answers first");
the `verify` command of a fix and the candidates that apply are in
verify/candidates_test.py."""

from __future__ import annotations

import math

from absl.testing import absltest, parameterized
from verify_findings import finding

from hloprobe import records, verify
from hloprobe.api.answering import AFTER_PASS
from hloprobe.compile import get_target
from hloprobe.report import Answer
from hloprobe.report.explain_answer import answer_json, answer_lines
from hloprobe.report.verdict_words import times_words, what_words
from hloprobe.verify.candidates import TrialReason
from hloprobe.verify.findings import rank_findings


class RankTest(parameterized.TestCase):
  def test_a_bigger_error_first(self):
    small, big = finding(3.0, "t4"), finding(6000.0, "a100")
    self.assertEqual(rank_findings([small, big]), (big, small))

  def test_should_fail_twin_equal_ratios_keep_sweep_order(self):
    # Nothing but the ratio reorders: a stable sort.
    a, b = finding(5.0, "t4"), finding(5.0, "a100")
    self.assertEqual(rank_findings([a, b]), (a, b))

  def test_exact_band_first_no_distance_last(self):
    failed = finding(None, kind="failed", what="compile failed: x")
    overflow = finding(math.inf, kind="integer", what="overflow: ...")
    mid = finding(40.0)
    self.assertEqual(
      rank_findings([failed, mid, overflow]), (overflow, mid, failed)
    )

  def test_a_failed_config_is_a_finding_without_distance(self):
    config = records.Config("seed_mlp", get_target("a100"), 2, "bfloat16")
    failure = records.Failure("compile", "XlaRuntimeError: INTERNAL: boom")
    (f,) = verify.find_findings([records.ConfigResult(config, failure=failure)])
    self.assertEqual((f.kind, f.ratio, f.batch_sizes), ("failed", None, (2,)))
    self.assertIn("compile failed: XlaRuntimeError", what_words(f))

  def test_no_contraction_site_is_not_judged_saying_so(self):
    # An elementwise program (elementwise_only's relu((x - b) * s)) has no
    # dot_general or convolution: nothing is predicted, and the reason
    # says that rather than a missing float64 comparison.
    config = records.Config("elementwise_only", get_target("cpu"), 2, "float32")
    comp = records.Compilation("", "", fates=())
    (f,) = verify.find_findings([records.ConfigResult(config, comp)])
    self.assertEqual(f.kind, "not judged")
    self.assertEqual(
      what_words(f),
      "not judged: no contraction site, so no prediction to judge against",
    )

  @parameterized.named_parameters(
    ("thousands", 6029.4, "6029x"),
    ("small", 2.345, "2.3x"),
    ("exact_band", math.inf, "beyond an exact band"),
  )
  def test_times_words(self, ratio, words):
    self.assertEqual(times_words(ratio), words)


_X3 = "BF16_BF16_F32_X3"


def _trial(fix: str, passed: bool) -> verify.FixTrial:
  c = verify.Candidate(fix, f"--precisions={fix}", "some cost")
  why = TrialReason(passed, ("accurate",), 4)
  return verify.FixTrial(c, passed, why, f"hloprobe verify --fix={fix}")


class AnswerLinesTest(absltest.TestCase):
  def test_no_finding_says_so(self):
    self.assertEqual(
      answer_lines(Answer(())),
      ["Answer: no finding: every config within its band."],
    )

  def test_headline_then_the_first_fix_that_passes(self):
    # A finding without site records reads as `verify` found it; the
    # first fix that passed is its change, then its command (the lines
    # named at fault, the change in JAX terms: tests/report/findings_test).
    f = finding(6029.4, what="explained by TF32_TF32_F32 at sites [0, 1, 2]")
    lines = answer_lines(
      Answer((f,), (_trial("float32", True), _trial(_X3, False)))
    )
    self.assertEqual(
      lines[0],
      "Answer: seed_mlp on a100 (compile only), n = 2-4, 9, under bfloat16: "
      "row 0 |err| vs f64 6.03e-01 (predicted), 6029x the f32 noise floor "
      "1.0e-04: explained by TF32_TF32_F32 at sites [0, 1, 2]",
    )
    self.assertTrue(
      lines[1].startswith("Do: precision=jax.lax.Precision.HIGHEST "),
      lines[1],
    )
    self.assertEqual(lines[2], "Verify (PASS): hloprobe verify --fix=float32")
    change = (
      f"  fails: precision=jax.lax.DotAlgorithmPreset.{_X3} or "
      f'jax.default_matmul_precision("{_X3}") (some cost)'
    )
    self.assertIn(f"{change}: --fix={_X3}", lines)
    verbose = answer_lines(
      Answer((f,), (_trial("float32", True), _trial(_X3, False))), True
    )
    self.assertIn(
      f"{change}: accurate failed: hloprobe verify --fix={_X3}", verbose
    )

  def test_a_second_cause_is_listed_below(self):
    big, small = finding(6000.0), finding(3.0, "t4")
    lines = answer_lines(Answer((big, small), (_trial("float32", True),)))
    self.assertTrue(lines[0].startswith("Answer: seed_mlp on a100 "))
    self.assertTrue(lines[0].endswith("(and 1 more cause below)"), lines[0])
    self.assertTrue(lines[1].startswith("Do: precision="), lines[1])
    self.assertIn("Findings by cause, worst first:", lines)

  def test_the_fixes_after_one_that_passed_are_listed_untried(self):
    # explain stops at the first fix that passes (issue 37): the rest
    # are named with their --fix (the whole command under --verbose), and
    # the JSON says why they were not tried.
    f = finding(6029.4)
    after = verify.Candidate(_X3, f"--precisions={_X3}", "some cost")
    answer = Answer(
      (f,),
      (_trial("float32", True),),
      ((after, f"hloprobe verify --fix={_X3}"),),
      not_tried=AFTER_PASS,
    )
    lines = answer_lines(answer)
    at = lines.index(
      "Not tried (a fix before them passed; --all_fixes tries every one):"
    )
    change = (
      f"  precision=jax.lax.DotAlgorithmPreset.{_X3} or "
      f'jax.default_matmul_precision("{_X3}") (some cost)'
    )
    self.assertEqual(lines[at + 1], f"{change}: --fix={_X3}")
    self.assertIn(
      f"{change}: hloprobe verify --fix={_X3}", answer_lines(answer, True)
    )
    doc = answer_json(answer)
    self.assertEqual(
      [(x["fix"], x["tried"]) for x in doc["fixes"]],
      [("float32", True), (_X3, False)],
    )
    self.assertEqual(doc["not_tried"], AFTER_PASS)

  def test_none_passed_says_so(self):
    lines = answer_lines(Answer((finding(9.0),), (_trial(_X3, False),)))
    self.assertEqual(lines[1], "Do: none of the 1 fix tried passed (below)")

  def test_json_ratio_of_an_exact_band(self):
    f = finding(math.inf, kind="integer", what="overflow: ...")
    doc = answer_json(Answer((f,), not_tried="--notry_fixes"))
    self.assertEqual(doc["findings"][0]["ratio"], "inf")
    self.assertEqual(doc["not_tried"], "--notry_fixes")


if __name__ == "__main__":
  absltest.main()
