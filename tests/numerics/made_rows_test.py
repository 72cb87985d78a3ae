"""What XLA made, run and judged on the prediction's judged rows alone
(issue 37: a large program's larger sizes, `MadeChecker.judged_later`).

The recorded seed modules (a100 at n = 9, both jaxlib releases): the
batch rows the prediction does not judge are NaN in the arguments, so the
executor multiplies the judged rows' lines alone (`execute.contraction`)
and the others come out NaN. The judged rows must be what the whole
batch's run gives them; the expected values are that run's rows (the
executor's whole run is checked against float64 and the emulation
elsewhere), compared to 1e-6 relative: the same float64 products summed
by OpenBLAS on fewer rows may round the f32 outputs one ulp apart, where
a row taken for another differs at the first digit.
"""

from __future__ import annotations

import dataclasses
import threading
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import recorded
from absl.testing import absltest, parameterized

from hloprobe.compile import CASES, Case
from hloprobe.numerics import accuracy, made, rows
from hloprobe.numerics.made import MadeChecker
from hloprobe.numerics.reference import References

_JUDGED = (0, 4, 8)
# The seed's multiply-adds a row ([2, 48, 48, 48, 1]).
_ROW = 2 * 48 + 48 * 48 * 2 + 48


def _seed(jaxlib: str):
  rec = recorded.load("seed_a100_n9_bfloat16", jaxlib)
  case = CASES["seed_mlp"]
  return rec, case, case.full_inputs()


@pytest.mark.compiles
class JudgedRowsRunTest(parameterized.TestCase):
  @parameterized.parameters(*recorded.RELEASES)
  def test_the_judged_rows_are_the_whole_runs(self, jaxlib):
    rec, case, full = _seed(jaxlib)
    fates = recorded.fates(rec)
    checker = MadeChecker(case, full, None)
    whole = checker.runs(9, rec.optimized_hlo, fates)()
    cut = checker.runs(9, rec.optimized_hlo, fates, _JUDGED)()
    others = [r for r in range(9) if r not in _JUDGED]
    for run_whole, run_cut in zip(whole, cut):  # widened, then made
      self.assertFalse(run_cut.not_executed)
      (got,), (want,) = run_cut.outputs, run_whole.outputs
      self.assertTrue(np.isfinite(want).all())
      np.testing.assert_allclose(got[list(_JUDGED)], want[list(_JUDGED)], 1e-6)
      self.assertTrue(np.isnan(got[others]).all())

  def test_on_the_rows_the_made_run_is_beside_the_widened_one(self):
    # Two threads (issue 37): the made run in its own, the widened one in
    # the caller's; a whole run keeps both in the caller's. Each run's
    # values are the ones test_the_judged_rows_are_the_whole_runs checks.
    rec, case, full = _seed(recorded.RELEASES[-1])
    fates = recorded.fates(rec)
    where = {}
    execute_module = made.execute.execute_module

    def noted(*args, widen, **kwargs):
      where.setdefault(widen, set()).add(threading.current_thread().name)
      return execute_module(*args, widen=widen, **kwargs)

    with mock.patch.object(made.execute, "execute_module", side_effect=noted):
      MadeChecker(case, full, None).runs(9, rec.optimized_hlo, fates)()
      self.assertEqual(where, {True: {"MainThread"}, False: {"MainThread"}})
      where.clear()
      MadeChecker(case, full, None).runs(9, rec.optimized_hlo, fates, _JUDGED)()
    self.assertEqual(where[True], {"MainThread"})
    self.assertNotIn("MainThread", where[False])

  def test_a_failure_on_the_rows_runs_whole(self):
    rec, case, full = _seed(recorded.RELEASES[-1])
    checker = MadeChecker(case, full, None)
    with mock.patch.object(MadeChecker, "_masked", side_effect=RuntimeError):
      runs = checker.runs(9, rec.optimized_hlo, recorded.fates(rec), _JUDGED)()
    for run in runs:
      (out,) = run.outputs
      self.assertTrue(np.isfinite(out).all())  # every row, made whole

  @parameterized.parameters(*recorded.RELEASES)
  def test_judged_on_the_floors_rows(self, jaxlib):
    rec, case, full = _seed(jaxlib)
    fates = recorded.fates(rec)
    refs = References(case, full, (9,))
    checker = MadeChecker(case, full, refs)
    ran = checker.runs(9, rec.optimized_hlo, fates, _JUDGED)()
    floors = np.full(len(_JUDGED), 1e-6)
    noise = accuracy.NoiseFloor(1e-6, 1e-6, 0.0, floors, _JUDGED)
    # A large program's n = 9 (3 rows judged whole): judged on the rows.
    with mock.patch.object(rows, "JUDGED_MULTIPLY_ADDS", 3 * _ROW):
      made = checker.judged(9, ran, fates, None, (), None, (noise,))
    whole = MadeChecker(case, full, refs).judged(
      9, ran, fates, None, (), None, (noise,)
    )
    self.assertIsNone(whole.judged)  # a small program's: every row
    self.assertEqual(made.judged, _JUDGED)
    self.assertTrue(made.complete)
    (worst,) = made.rows
    self.assertEqual(worst.judged, _JUDGED)
    self.assertIn(worst.row, _JUDGED)
    # The errors, from the made run and the float64 reference by hand.
    (out,), (ref,) = ran[1].outputs, refs.at(9)
    errors = np.abs(out[list(_JUDGED)].astype(np.float64) - ref[list(_JUDGED)])
    self.assertEqual(made.stats.max_abs, np.max(errors))
    self.assertEqual(
      worst.abs_err,
      np.max(errors.reshape(len(_JUDGED), -1), 1)[_JUDGED.index(worst.row)],
    )
    self.assertTrue(np.isfinite(made.deviation_abs))


def _batch_max_case():
  """A softmax shifted by the whole batch's max, then a dot: each row is
  independent in exact arithmetic (the shift cancels), so the case
  declares it and its float64 check passes, but the other rows' values
  (and NaN) reach every row."""
  g = np.random.default_rng(7)
  x = g.standard_normal((16, 8)).astype(np.float32)
  w = g.standard_normal((8, 4)).astype(np.float32)

  def fn(xs, w):
    e = jnp.exp(xs - jnp.max(xs))
    return (e / jnp.sum(e, axis=1, keepdims=True)) @ w

  return Case(
    "batch_max",
    "a softmax shifted by the batch's max",
    fn,
    lambda: (x, w),
    in_axes=(0, None),
    rows_independent=True,
  )


def _while_case():
  """Newton's square root per row until it converges (vmap's loop runs
  while any row's condition holds: a NaN row's never ends)."""
  x = np.linspace(1.0, 9.0, 8, dtype=np.float32).reshape(8, 1) * np.ones(
    (1, 4), np.float32
  )
  w = np.eye(4, dtype=np.float32)

  def one(row, w):
    def cond(c):
      y, step = c
      return jnp.max(jnp.abs(step)) > 1e-6

    def body(c):
      y, _ = c
      new = 0.5 * (y + row / y)
      return new, new - y

    y, _ = jax.lax.while_loop(cond, body, (row, jnp.ones_like(row)))
    return y @ w

  return Case(
    "newton",
    "a converging while loop a row",
    jax.vmap(one, in_axes=(0, None)),
    lambda: (x, w),
    in_axes=(0, None),
    rows_independent=True,
  )


@pytest.mark.compiles
class WholeRunTest(absltest.TestCase):
  """Where the other rows' NaN would reach a judged row or never end, the
  runs are made whole: the judged rows are the whole run's, every row
  finite."""

  def _runs(self, case, n, judged):
    full = case.full_inputs()
    args = case.inputs_for(full, n)
    text = jax.jit(case.fn).lower(*args).compile().as_text()
    checker = MadeChecker(case, full, None)
    return checker, checker.runs(n, text, (), judged)(), text

  def test_a_reduction_across_the_batch(self):
    checker, runs, _ = self._runs(_batch_max_case(), 16, (0, 3))
    for run in runs:  # made again whole: no NaN at all
      (out,) = run.outputs
      self.assertTrue(np.isfinite(out).all())
    # Nor is it a large program's row judging: row_proof finds the mix.
    with mock.patch.object(rows, "JUDGED_MULTIPLY_ADDS", 1):
      self.assertFalse(
        MadeChecker(
          checker.case, checker.case.full_inputs(), None
        ).judged_later(16)
      )

  def test_a_while_loop(self):
    _, runs, text = self._runs(_while_case(), 8, (0, 3))
    self.assertIn(" while(", text)
    for run in runs:
      self.assertFalse(run.not_executed)
      (out,) = run.outputs
      want = np.sqrt(np.linspace(1.0, 9.0, 8))[:, None] * np.ones((1, 4))
      np.testing.assert_allclose(out, want, rtol=1e-5)


@pytest.mark.compiles  # the seed's inputs (jax.random) and its traces
class JudgedLaterTest(absltest.TestCase):
  """The compile worker's checker waits for the judged rows where the
  predictor judges fewer rows than the batch (`Predictor._measure_rows`'s
  rule: `rows.rows_whole` of the multiply-adds a row)."""

  def test_above_the_rows_judged_whole(self):
    case = CASES["seed_mlp"]
    full = case.full_inputs()
    # A budget of 3 rows' multiply-adds makes 3 rows whole, and above
    # them judges row 0, 1 sample row and 2 worst ones: on its own rows
    # from twice those, 8 rows.
    with mock.patch.object(rows, "JUDGED_MULTIPLY_ADDS", 3 * _ROW):
      checker = MadeChecker(case, full, None)
      self.assertEqual(
        [checker.judged_later(n) for n in (1, 2, 3, 4, 7, 8, 9)],
        [False, False, False, False, False, True, True],
      )
      self.assertFalse(
        MadeChecker(case, full, None, all_rows=True).judged_later(9)
      )
      self.assertFalse(MadeChecker(case, None, None).judged_later(9))

  def test_not_for_a_case_that_does_not_declare_its_rows(self):
    case = CASES["seed_mlp"]
    full = case.full_inputs()
    undeclared = dataclasses.replace(case, rows_independent=False)
    with mock.patch.object(rows, "JUDGED_MULTIPLY_ADDS", 1):
      self.assertTrue(MadeChecker(case, full, None).judged_later(9))
      self.assertFalse(MadeChecker(undeclared, full, None).judged_later(9))


if __name__ == "__main__":
  absltest.main()
