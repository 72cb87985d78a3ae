"""Issue 39 item 10: `golden check` caps each file's diff as the pytest
plugin does (`CheckResult.capped`: 60 lines, the rest counted), and names
the command that shows the whole."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.golden.diff import DIFF_LINES, CheckResult, FileChange


class CappedTest(absltest.TestCase):
  def test_a_long_diff_is_cut_and_counted(self):
    diff = "\n".join(f"+line {i}" for i in range(100))
    result = CheckResult(
      "golden", 1, changed=(FileChange("cpu/x.hlo", diff),), candidate_dir="c"
    )
    text = result.capped().render()
    self.assertEqual(DIFF_LINES, 60)
    self.assertIn("+line 59", text)
    self.assertNotIn("+line 60", text)
    self.assertIn("... (40 more diff lines)", text)
    self.assertIn("diff -ru golden c", text)
    self.assertIn("+line 99", result.render())  # uncapped: every line

  def test_a_short_diff_is_whole(self):
    result = CheckResult("golden", 1, changed=(FileChange("x", "+a\n-b"),))
    self.assertEqual(result.capped(), result)


if __name__ == "__main__":
  absltest.main()
