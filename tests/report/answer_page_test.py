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

from hloprobe import invariance
from hloprobe.pictures import html_table
from hloprobe.report import Answer


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


if __name__ == "__main__":
  absltest.main()
