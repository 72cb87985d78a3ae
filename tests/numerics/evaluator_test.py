"""numerics/evaluator.py's sharding arithmetic (`lax.slice_in_dim`
compiles a jitted slice: that test is marked `compiles`). Expected: a
`PartitionSpec` splits each dimension over the product of its mesh axes'
sizes (jax's sharding rule), and a dot split over K into `count` device
slices, added in device order, is the float64 dot of the whole (exact
here: small integers)."""

from __future__ import annotations

import numpy as np
import pytest
from absl.testing import absltest
from jax.sharding import PartitionSpec as P

from hloprobe.numerics import evaluator


class ShardingTest(absltest.TestCase):
  def test_spec_parts(self):
    sizes = {"data": 2, "model": 4}
    self.assertEqual(evaluator.spec_parts(P("data", None), sizes, 2), (2, 1))
    self.assertEqual(
      evaluator.spec_parts(P(("data", "model")), sizes, 3), (8, 1, 1)
    )
    self.assertEqual(evaluator.spec_parts(P(), sizes, 2), (1, 1))

  @pytest.mark.compiles  # lax.slice_in_dim runs a jitted slice
  def test_partial_sums_over_k(self):
    g = np.random.default_rng(0)
    lhs = g.integers(-4, 5, (3, 8)).astype(np.float64)
    rhs = g.integers(-4, 5, (8, 2)).astype(np.float64)
    calls = []

    def dot(a, b):
      calls.append(a.shape[1])
      return a @ b

    got = evaluator.partial_sums(lhs, rhs, (((1,), (0,)), ((), ())), 4, dot)
    np.testing.assert_array_equal(got, lhs @ rhs)
    self.assertEqual(calls, [2, 2, 2, 2])


if __name__ == "__main__":
  absltest.main()
