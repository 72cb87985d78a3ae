"""made: a NaN or infinity the program's own float64 answer has too is no
change of the math (found by a hostile input, issue 27: a case returning
`(x @ x.T) * nan` was "XLA changed the math (not localised)")."""

from __future__ import annotations

import numpy as np
from absl.testing import absltest

from hloprobe.numerics import made


class DeviationTest(absltest.TestCase):
  def test_nan_and_inf_where_the_reference_has_them_are_no_deviation(self):
    got = np.array([[np.nan, np.inf, 1.0], [-np.inf, 2.0, 3.0]])
    want = np.array([[np.nan, np.inf, 1.0], [-np.inf, 2.0, 3.0]])
    _, dev, bound = made._deviation((got,), (want,), ("",), ())
    self.assertEqual(dev, 0.0)
    self.assertGreater(bound, 0.0)  # from the finite values: 3.0

  def test_a_nan_or_inf_the_reference_lacks_is_an_infinite_deviation(self):
    want = np.array([1.0, 2.0])
    for bad in (np.nan, np.inf):
      _, dev, _ = made._deviation((np.array([1.0, bad]),), (want,), ("",), ())
      self.assertEqual(dev, np.inf, bad)
    _, dev, _ = made._deviation(
      (np.array([np.inf]),), (np.array([-np.inf]),), ("",), ()
    )
    self.assertEqual(dev, np.inf)


if __name__ == "__main__":
  absltest.main()
