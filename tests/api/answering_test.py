"""break26: `hloprobe.explain` from Python opens with the answer, as the
command line's `explain` does, and says why it tried no fix.

The whole path (a function swept on cpu and a100) is checked by
tests/api/calls_notebook_test.py's `test_the_answer_comes_first`; this file
checks the words without compiling.
"""

from __future__ import annotations

from absl.testing import absltest

from hloprobe import engine, records, report, verify
from hloprobe.api import answering, calls
from hloprobe.compile import get_target
from hloprobe.report import explain_answer
from hloprobe.verify.findings import Said


class NotTriedTest(absltest.TestCase):
  def test_no_finding_needs_no_fix(self):
    lines = explain_answer.answer_lines(
      report.Answer((), not_tried=calls.NOT_TRIED)
    )
    self.assertEqual(
      lines, ["Answer: no finding: every config within its band."]
    )

  def test_a_finding_says_how_to_try_the_fixes(self):
    finding = verify.Finding(
      experiment="baseline",
      case="f",
      target="a100",
      compile_only=True,
      batch_sizes=(2,),
      precisions=("bfloat16",),
      kind="row 0",
      what=Said(text="explained by TF32_TF32_F32 at sites [0]"),
      sites=(0,),
      error_abs=1e-2,
      floor_abs=1e-5,
      floor_dtype="float32",
      ratio=1e3,
      source="predicted",
    )
    lines = explain_answer.answer_lines(
      report.Answer((finding,), not_tried=calls.NOT_TRIED)
    )
    self.assertTrue(lines[0].startswith("Answer: f on a100 (compile only)"))
    # The command a user runs instead: `explain` with a case file, which
    # the README's "Your own program as a case" documents.
    self.assertEqual(
      lines[1],
      "Do: fixes not tried (hloprobe.explain tries none; `hloprobe explain "
      "--case=FILE.py:FACTORY` tries them and prints their verify commands)",
    )


class FailedBeforeXlaTest(absltest.TestCase):
  """Configs that failed before XLA (stage "lower": jax could not trace or
  lower the program) get no fix tried, and the answer says why, not that
  none passed; a compile XLA rejected (stage "compile") gets the
  candidates. No compile: the records are made here."""

  def _answer(self, stage: str):
    plan = engine.plan_sweep(
      engine.SweepSpec(("seed_mlp",), (2,), ("bfloat16",), ("a100",))
    )
    config = records.Config("seed_mlp", get_target("a100"), 2, "bfloat16")
    failure = records.Failure(stage, "NotImplementedError: vmap is only ...")
    results = [records.ConfigResult(config, failure=failure)]
    return answering.answer(plan, results, try_fixes=False)

  def test_no_fix_where_the_program_fails_before_xla(self):
    answer = self._answer("lower")
    self.assertEqual((answer.trials, answer.untried), ((), ()))
    self.assertEqual(
      explain_answer.answer_lines(answer)[1],
      "Do: fixes not tried (the configs at fault fail before XLA compiles "
      "them, at lower, which no precision or XLA flag changes)",
    )

  def test_fixes_listed_where_xla_rejected_the_compile(self):
    answer = self._answer("compile")
    self.assertIn("float32", [c.fix for c, _ in answer.untried])


if __name__ == "__main__":
  absltest.main()
