"""What XLA made, every row judged (issue 24 leftovers, item 6's rest).

The planted case of tests/allrows_planted_test.py: y = x @ w at HIGHEST,
and row 5 of the output takes the same product with the algorithm
BF16_BF16_F32, which the A100's optimized module keeps (a Triton gemm).
"What XLA made" executes that module in the numpy executor, each gemm at
its site's effective algorithm, so its row 5 carries bf16 operand
rounding and the other rows do not. Expected values from numpy float64
(`allrows_planted_test._numpy_row`: row r's |bf16-operand product -
exact| and the f32 summation bound gamma_K max_j sum_k |x_rk||w_kj|,
Higham eq. 3.5); row 0 (`Made.stats`) is the control's.
"""

from __future__ import annotations

import json

import pytest
from absl.testing import absltest
from allrows_planted_test import _N, _case, _numpy_row

from hloprobe import engine, report


@pytest.mark.compiles
class MadeRowsTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    spec = engine.SweepSpec(
      (_case(5), _case(99)), (_N,), ("float32",), ("a100",)
    )
    found = {r.config.case: r for r in engine.run_sweep(spec)}
    cls.planted, cls.control = found["t_row5"], found["t_row99"]

  def test_made_names_row_5(self):
    made = self.planted.made
    self.assertTrue(made.complete, made.not_executed)
    (w,) = made.rows
    err, bound = _numpy_row(5)
    self.assertEqual((w.row, w.rows, w.beyond), (5, _N, 1))
    self.assertLessEqual(abs(w.abs_err - err), 2 * bound)
    self.assertGreater(w.multiple, 1)
    (c,) = self.control.made.rows
    self.assertTrue(c.within)
    self.assertLessEqual(
      c.abs_err, 2 * max(_numpy_row(r)[1] for r in range(_N))
    )

  def test_row_0_stays_the_seeds_view(self):
    p, c = self.planted.made.stats, self.control.made.stats
    self.assertEqual(p.row0_abs, c.row0_abs)
    self.assertLessEqual(p.row0_abs, 2 * _numpy_row(0)[1])

  def test_results_json_and_explain_say_it(self):
    doc = report.results_json([self.planted, self.control], {})
    json.dumps(doc)  # no numpy left
    planted, control = (c["made"]["rows"][0] for c in doc["configs"])
    self.assertRegex(
      planted["words"],
      r"^row 5: 1\.2e-02, \d+x beyond f32 noise \(1 of 8 rows\)$",
    )
    self.assertEqual(control["words"], "every row within f32 noise")
    (e,) = report.explain_results([self.planted])
    self.assertEqual([x.worst.row for x in e.made_rows], [5])
    text = report.render_explanation([e], width=200)
    made = text.split("What XLA made (the optimized module executed):")[1]
    made = made.split("Fates by batch size:")[0]
    self.assertRegex(
      made, r"n = 8: every row judged: row 5: 1\.2e-02, \d+x beyond f32 noise"
    )
    (control,) = report.explain_results([self.control])
    self.assertEqual(control.made_rows, ())
    self.assertNotIn("every row judged", report.render_explanation([control]))


if __name__ == "__main__":
  absltest.main()
