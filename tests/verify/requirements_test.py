"""verify/requirements.py: requirements judged on records with nothing to
judge never pass: recorded compile-only configs of the seed (a100,
bfloat16, n = 1, 2, 9; jaxlib 0.12.0.1; texts and fates, no execution nor
prediction) give "no row 0 to compare" and "no errors to judge", and one
batch size is too few for "consistent" (the requirement's definition:
row 0 compared across at least two sizes). Words as `verify` prints them."""

from __future__ import annotations

import recorded
import testutil
from absl.testing import absltest

from hloprobe import verify
from hloprobe.compile import get_target
from hloprobe.ir import as_precision
from hloprobe.records import Compilation, Config, ConfigResult
from hloprobe.report import requirement_lines
from hloprobe.verify.requirements import checks


def _results(*sizes: int):
  return [
    recorded.config_result(
      recorded.load(f"seed_a100_n{n}_bfloat16", "0.12.0.1")
    )
    for n in sizes
  ]


class NothingToJudgeTest(absltest.TestCase):
  def test_never_passes_and_says_why(self):
    consistent, accurate = verify.judge(
      _results(1, 2, 9), ["consistent", "accurate"]
    )
    self.assertFalse(consistent.passed)
    self.assertEqual(
      list(requirement_lines(consistent)),
      [
        "a100 seed_mlp n=2 bfloat16: no row 0 to compare",
        "a100 seed_mlp n=9 bfloat16: no row 0 to compare",
      ],
    )
    self.assertFalse(accurate.passed)
    self.assertEqual(
      [l.split(": ", 1)[1] for l in requirement_lines(accurate)],
      ["no errors to judge"] * 3,
    )

  def test_one_size_is_too_few_for_consistent(self):
    (consistent,) = verify.judge(_results(2), ["consistent"])
    self.assertFalse(consistent.passed)
    self.assertEqual(
      list(requirement_lines(consistent)),
      [
        "a100 seed_mlp bfloat16: consistent needs at least two batch sizes; got n=2"
      ],
    )


# One output, a sum over every row, f32[] at every n (hand-written, as XLA
# prints a compiled module's header).
_SUM_ONLY = testutil.SUM_OVER_ROWS_HLO


class InvariantSizedTest(absltest.TestCase):
  def _results(self):
    a100 = get_target("a100")
    return [
      ConfigResult(
        Config("m", a100, n, as_precision("float32")),
        Compilation("", _SUM_ONLY.format(n=n)),
      )
      for n in (1, 2, 8)
    ]

  def test_a_batch_case_with_no_row_fails_saying_so(self):
    req = checks(self._results(), None, None)["invariant"]()
    self.assertFalse(req.passed)
    self.assertIn("not a per-row output", " ".join(requirement_lines(req)))

  def test_a_sized_case_is_judged_by_its_kernels(self):
    found = checks(self._results(), None, None, invariant_sized={"m"})
    words = " ".join(requirement_lines(found["invariant"]()))
    self.assertNotIn("not a per-row output", words)


if __name__ == "__main__":
  absltest.main()
