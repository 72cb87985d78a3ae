"""A case's numerics steps made once: each failure recorded with its cause,
never raised (`CaseNumerics.of`); a size whose function does not trace
left out of the references. Expected values: numpy float64 of x @ w, and
the function's own error."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from absl.testing import absltest

from hloprobe import engine
from hloprobe.compile import cases
from hloprobe.errors import CaseError
from hloprobe.numerics import CaseNumerics


def _broken(error: BaseException):
  def fn(*args):
    raise error

  return fn


@pytest.mark.compiles  # seed_mlp's inputs are made by jit-compiled stages
class CaseNumericsTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.case = cases.get_case("seed_mlp")
    self.full = self.case.make_inputs()

  def test_a_failing_reference_leaves_the_numerics_na_with_its_cause(self):
    made = CaseNumerics.of(
      dataclasses.replace(self.case, fn=_broken(ValueError("boom"))),
      self.full,
      (2,),
    )
    self.assertEqual(made, CaseNumerics(None, None, None, made.why, None, None))
    self.assertEqual(made.why, "no float64 reference: ValueError: boom")

  def test_the_cases_own_error_is_its_lie_not_a_cause(self):
    lie = CaseError("case seed_mlp: rows are not independent")
    made = CaseNumerics.of(
      dataclasses.replace(self.case, fn=_broken(lie)), self.full, (2,)
    )
    self.assertIs(made.lie, lie)
    self.assertIsNone(made.references)
    self.assertIsNone(made.why)
    self.assertIsNone(made.checker)


def _over_4(x, w):
  """x @ w, raising while jax traces it at a batch over 4 rows (as a
  reshape that fits some sizes only would)."""
  if x.shape[0] > 4:
    raise ValueError(f"batch {x.shape[0]} over 4")
  return x @ w


@pytest.mark.compiles  # the references lower the case; a sweep compiles it
class UntracedSizeTest(absltest.TestCase):
  """A size at which the case's function does not trace is left out of
  its references; the others are judged (a reference made at the largest
  size alone had left every size "no float64 reference")."""

  def setUp(self):
    super().setUp()
    g = np.random.default_rng(3)
    self.full = (
      g.standard_normal((8, 16)).astype(np.float32),
      g.standard_normal((16, 4)).astype(np.float32),
    )
    self.case = cases.Case(
      "t_over_4",
      "fails to trace above 4 rows",
      _over_4,
      lambda: self.full,
      in_axes=(0, None),
      rows_independent=True,
    )

  def test_the_references_are_made_at_the_sizes_that_trace(self):
    made = CaseNumerics.of(self.case, self.full, (1, 2, 8))
    self.assertIsNone(made.why)
    self.assertEqual(made.references.largest, 2)
    x, w = (a.astype(np.float64) for a in self.full)
    (got,) = made.references.at(2)
    np.testing.assert_allclose(got, x[:2] @ w, rtol=1e-12)
    self.assertIsNotNone(made.predictor)

  def test_a_sweep_judges_the_sizes_that_trace(self):
    spec = engine.SweepSpec((self.case,), (1, 2, 8), ("float32",), ("cpu",))
    found = {r.config.n: r for r in engine.run_sweep(spec)}
    self.assertEqual(found[8].failure.stage, "lower")
    self.assertEqual(found[8].failure.error, "ValueError: batch 8 over 4")
    for n in (1, 2):
      self.assertIsNone(found[n].failure)
      self.assertIsNone(found[n].prediction_error)
      self.assertIsNotNone(found[n].prediction)


if __name__ == "__main__":
  absltest.main()
