"""A planted error in row 5 only is judged (issue 24, item 6).

The case: y = x @ w twice, once at HIGHEST and once with the algorithm
BF16_BF16_F32, and row 5 of the output takes the second. On the A100
(compile only) the optimized HLO keeps the preset at the row-5 dot (a
Triton gemm, BF16_BF16_F32: XLA's compiled math differs for row 5 only),
while the f32 noise floor puts every site at F32. The control case is the
same program with the plant at row 99, which n = 8 does not have.

Expected values come from numpy float64: row 5's error is that of
bf16-rounded operands, |x5' @ w' - x5 @ w|, up to the f32 summation's
gamma_K sum_k |x5k||wkj| (Higham, Accuracy and Stability of Numerical
Algorithms, 2nd ed., eq. 3.5), which also bounds row 5's f32 floor.

What XLA made, every row judged (issue 24 leftovers, item 6's rest).

The same planted case: y = x @ w at HIGHEST,
and row 5 of the output takes the same product with the algorithm
BF16_BF16_F32, which the A100's optimized module keeps (a Triton gemm).
"What XLA made" executes that module in the numpy executor, each gemm at
its site's effective algorithm, so its row 5 carries bf16 operand
rounding and the other rows do not. Expected values from numpy float64
(`_numpy_row`: row r's |bf16-operand product -
exact| and the f32 summation bound gamma_K max_j sum_k |x_rk||w_kj|,
Higham eq. 3.5); row 0 (`Made.stats`) is the control's.
"""

from __future__ import annotations

import json

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from absl.testing import absltest
from jax import lax

from hloprobe import engine, report, verify
from hloprobe.compile import cases
from hloprobe.numerics import NOISE_FACTOR
from hloprobe.report import explain_text
from hloprobe.report.verdict_words import prediction_words

_N, _K = 8, 64


def _inputs():
  g = np.random.default_rng(5)
  x = g.uniform(size=(_N, _K)).astype(np.float32)
  return x, g.uniform(size=(_K, 16)).astype(np.float32)


def _case(planted_row: int, pytree: bool = False) -> cases.Case:
  def fn(x, w):
    y = jnp.matmul(x, w, precision="highest")
    z = lax.dot(x, w, precision=lax.DotAlgorithmPreset.BF16_BF16_F32)
    rows = jnp.arange(x.shape[0])[:, None]
    out = jnp.where(rows == planted_row, z, y)
    return {"a": y, "b": out} if pytree else out

  name = f"t_row{planted_row}" + ("_tree" if pytree else "")
  return cases.Case(name, "a bf16 dot feeds one row", fn, _inputs)


def _numpy_row(r: int) -> tuple[float, float]:
  """Row r's |bf16-operand product - exact| (max over the row) and the
  f32 summation bound gamma_K max_j sum_k |x_rk||w_kj|, float64."""
  x, w = (a.astype(np.float64) for a in _inputs())
  bf = lambda a: a.astype(ml_dtypes.bfloat16).astype(np.float64)
  err = float(np.max(np.abs(bf(x[r]) @ bf(w) - x[r] @ w)))
  u = 2.0**-24
  gamma = _K * u / (1 - _K * u)
  return err, gamma * float(np.max(np.abs(x[r]) @ np.abs(w)))


@pytest.mark.compiles
class PlantedRowTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    spec = engine.SweepSpec(
      (_case(5), _case(99), _case(5, pytree=True)),
      (_N,),
      ("float32",),
      ("a100",),
    )
    found = {r.config.case: r for r in engine.run_sweep(spec)}
    cls.planted, cls.control = found["t_row5"], found["t_row99"]
    cls.tree = found["t_row5_tree"]

  def test_row_5_is_named_with_its_distance_beyond_the_band(self):
    w = self.planted.prediction.rows[0]
    err, bound = _numpy_row(5)
    self.assertEqual((w.row, w.rows, w.beyond), (5, _N, 1))
    self.assertLessEqual(abs(w.abs_err - err), 2 * bound)
    self.assertLessEqual(w.floor_abs, bound)
    self.assertEqual(w.multiple, w.abs_err / (NOISE_FACTOR * w.floor_abs))
    self.assertGreater(w.multiple, (err - 2 * bound) / (NOISE_FACTOR * bound))
    self.assertRegex(
      report.results_json([self.planted], {})["configs"][0]["prediction"][
        "rows"
      ][0]["words"],
      r"^row 5: 1\.2e-02, \d+x beyond f32 noise \(1 of 8 rows\)$",
    )

  def test_row_0_view_is_unchanged(self):
    p, c = self.planted.prediction, self.control.prediction
    self.assertEqual(prediction_words(p), prediction_words(c))
    self.assertTrue(
      prediction_words(p).startswith("within f32 noise"), prediction_words(p)
    )
    self.assertEqual(p.stats.row0_abs, c.stats.row0_abs)
    self.assertLessEqual(p.stats.row0_abs, 2 * _numpy_row(0)[1])
    self.assertTrue(c.rows[0].within)

  def test_table_and_explain_name_row_5(self):
    table = report.render([self.planted, self.control], "markdown", {})
    self.assertRegex(
      table,
      r"\| within f32 noise; row 5: 1\.2e-02, \d+x beyond f32 noise "
      r"\(1 of 8 rows\) +\|",
    )
    self.assertEqual(table.count("row 5:"), 1)
    (e,) = report.explain_results([self.planted])
    text = explain_text.render_explanation([e], width=200)
    self.assertIn("Rows beyond row 0 (every row judged):", text)
    self.assertIn("n = 8: row 5: 1.2e-02, ", text)
    (control,) = report.explain_results([self.control])
    self.assertNotIn("Rows beyond", explain_text.render_explanation([control]))
    doc = explain_text.explanation_json([e])
    self.assertEqual(doc["explanations"][0]["rows"][0]["worst"]["row"], 5)
    json.dumps(report.results_json([self.planted], {}))  # no numpy left

  def test_verify_accurate_fails_naming_row_5(self):
    (req,) = verify.judge([self.planted], ["accurate"])
    self.assertFalse(req.passed)
    line = "\n".join(report.requirement_lines(req))
    self.assertIn("every row judged: row 5: 1.2e-02, ", line)
    (ok,) = verify.judge([self.control], ["accurate"])
    self.assertTrue(ok.passed, report.requirement_lines(ok))
    self.assertNotIn("every row judged", report.requirement_lines(ok)[0])
    # With XLA's bounds instead, max |err| bounds every row.
    (bounded,) = verify.judge([self.planted], ["accurate"], 1e-1)
    self.assertTrue(bounded.passed)
    self.assertIsNone(bounded.evidence[0].worst_row)

  def test_every_leaf_is_judged(self):
    # The headline is ['a'] (the first batched float leaf, fixed per case);
    # the plant is in ['b'].
    p = self.tree.prediction
    self.assertEqual(p.leaf, "['a']")
    self.assertTrue(
      prediction_words(p).startswith("within f32 noise"), prediction_words(p)
    )
    a, b = p.rows
    self.assertTrue(a.within)
    self.assertEqual((b.leaf, b.row, b.beyond), ("['b']", 5, 1))
    self.assertEqual(b.abs_err, self.planted.prediction.rows[0].abs_err)
    (req,) = verify.judge([self.tree], ["accurate"])
    self.assertFalse(req.passed)
    self.assertRegex(
      report.requirement_lines(req)[0],
      r"not accurate: \['b'\] row 5: 1\.2e-02, \d+x beyond f32 noise",
    )
    table = report.render([self.tree], "markdown", {})
    self.assertIn("['b'] row 5: 1.2e-02, ", table)

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
    text = explain_text.render_explanation([e], width=200)
    made = text.split("What XLA made (the optimized module executed):")[1]
    made = made.split("Fates by batch size:")[0]
    self.assertRegex(
      made, r"n = 8: every row judged: row 5: 1\.2e-02, \d+x beyond f32 noise"
    )
    (control,) = report.explain_results([self.control])
    self.assertEqual(control.made_rows, ())
    self.assertNotIn(
      "every row judged", explain_text.render_explanation([control])
    )


if __name__ == "__main__":
  absltest.main()
