"""explain's answer as the HTML page draws it (`report.answer_page`, made
HTML by `pictures.html_table`), without XLA: the
batch-invariance answer comes after what to do, one line per cause, as
`explain` prints it (walking issue 39 as a user: report.html left it out,
though the console opens with it where nothing is at fault).

The records are built here: an answer with no finding and two groups of
one cause (bfloat16 and float32 on an a100: n = 2 differs from n = 1 by
sites 0-1's fate, a Triton gemm there, a multiply+reduce at n = 1, and
one other kernel); the expected words are written from those fields.
"""

from __future__ import annotations

import html

import verify_findings
from absl.testing import absltest

from hloprobe import invariance, verify
from hloprobe.pictures import html_table
from hloprobe.report import Answer
from hloprobe.verify.candidates import TrialReason


def _group(precision: str) -> invariance.Invariance:
  return verify_findings.split_group("m", precision)


class InvarianceInTheAnswerTest(absltest.TestCase):
  def test_one_line_per_cause_after_what_to_do(self):
    answer = Answer((), invariance=(_group("bfloat16"), _group("float32")))
    page = html.unescape(html_table([], answer))
    self.assertIn('id="invariance"', page)
    self.assertLess(page.index("Do:"), page.index('id="invariance"'))
    self.assertEqual(page.count("<li>m on a100 under"), 1)
    self.assertIn(
      "<li>m on a100 under bfloat16 and float32: not batch-invariant (by "
      "kernel identity): every row: same per-row arithmetic for n = 1, n = 2 "
      "differs; at n = 2: sites 0-1 Triton gemm (multiply+reduce at n = 1); "
      "1 other kernel differs (--verbose)</li>",
      page,
    )

  def test_none_when_not_asked(self):
    self.assertNotIn('id="invariance"', html_table([], Answer(())))


class FixesTest(absltest.TestCase):
  def test_the_fixes_after_one_that_passed_say_why_untried(self):
    # explain stops at the first fix that passes (issue 37): the page
    # names the rest with why they were not tried, as the console does.
    x3 = "BF16_BF16_F32_X3"
    tried = verify.Candidate("float32", "--precisions=float32", "cost a")
    after = verify.Candidate(x3, f"--precisions={x3}", "cost b")
    trial = verify.FixTrial(
      tried,
      True,
      TrialReason(True, ("accurate",), 4),
      "hloprobe verify --fix=float32",
    )
    why = "a fix before them passed; --all_fixes tries every one"
    answer = Answer(
      (verify_findings.finding(6029.4),),
      (trial,),
      ((after, f"hloprobe verify --fix={x3}"),),
      not_tried=why,
    )
    page = html.unescape(html_table([], answer))
    self.assertIn(
      f"<li>not tried ({why}): --precisions={x3} (cost b): hloprobe verify --fix={x3}"
      "</li>",
      page,
    )

  def test_untried_with_none_tried_says_not_tried(self):
    # --notry_fixes: the reason is the table's ("not tried (...)").
    c = verify.Candidate("float32", "--precisions=float32", "cost a")
    answer = Answer(
      (verify_findings.finding(6029.4),),
      untried=((c, "hloprobe verify --fix=float32"),),
      not_tried="--notry_fixes",
    )
    page = html.unescape(html_table([], answer))
    self.assertIn(
      "<li>not tried: --precisions=float32 (cost a): hloprobe verify --fix=float32</li>",
      page,
    )


if __name__ == "__main__":
  absltest.main()
