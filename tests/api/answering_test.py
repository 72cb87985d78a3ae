"""break26: `hloprobe.explain` from Python opens with the answer, as the
command line's `explain` does, and says why it tried no fix.

The whole path (a function swept on cpu and a100) is checked by
tests/api/calls_notebook_test.py's `test_the_answer_comes_first`; this file
checks the words without compiling.
"""

from __future__ import annotations

from absl.testing import absltest

from hloprobe import report, verify
from hloprobe.api import calls
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


if __name__ == "__main__":
  absltest.main()
