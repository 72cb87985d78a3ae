"""A case's numerics steps made once: each failure recorded with its cause,
never raised (`CaseNumerics.of`)."""

from __future__ import annotations

import dataclasses

from absl.testing import absltest

from hloprobe.compile import cases
from hloprobe.errors import CaseError
from hloprobe.numerics import CaseNumerics


def _broken(error: BaseException):
  def fn(*args):
    raise error

  return fn


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


if __name__ == "__main__":
  absltest.main()
