"""`make bench`'s invariance line (issue 38 item 6): its case sweeps
n = 1-64, and its words read explain's JSON answer (no compile: the line
itself is run by `make bench`, not by the tests)."""

from __future__ import annotations

import json

from absl.testing import absltest

from hloprobe.tools import bench_invariance


class BenchInvarianceTest(absltest.TestCase):
  def test_case_has_64_rows(self):
    case = bench_invariance.gpt2_block()
    x, params = case.make_inputs()
    self.assertEqual(x.shape, (64, 128, 768))
    self.assertEqual(case.in_axes, (0, None))
    self.assertEqual(max(bench_invariance._SIZES), 64)

  def test_answer_words(self):
    doc = {
      "answer": {
        "invariance": {
          "groups": [
            {
              "basis": "kernel identity",
              "invariant": False,
              "rows": [{"classes": [[2, 4, 8], [1], [16, 32, 64]]}],
            }
          ]
        }
      }
    }
    self.assertEqual(
      bench_invariance._answer_words(json.dumps(doc)),
      "invariant False, 3 classes (kernel identity)",
    )
    self.assertIn("not read", bench_invariance._answer_words("{cut"))
    self.assertIn("no invariance group", bench_invariance._answer_words("{}"))


if __name__ == "__main__":
  absltest.main()
