"""Work shared across sweeps on one pool (issue 37, item 3): a built-in
case's fix-try sweep reuses the explain sweep's float64 references and
emulations (`guarded._held_setup`), as a user case's worker does."""

from __future__ import annotations

from unittest import mock

import pytest
from absl.testing import absltest

from hloprobe import engine
from hloprobe.numerics import emulation_cache, reference

pytestmark = pytest.mark.compiles


class HeldSetupTest(absltest.TestCase):
  def test_a_later_sweep_of_some_sizes_makes_no_reference(self):
    first = engine.SweepSpec(("seed_mlp",), (1, 2, 9), ("bfloat16",), ("cpu",))
    tries = engine.SweepSpec(("seed_mlp",), (1, 9), ("float32",), ("cpu",))
    other = engine.SweepSpec(("seed_mlp",), (1, 4), ("float32",), ("cpu",))
    computed = mock.patch.object(
      reference,
      "executed_reference",
      wraps=reference.executed_reference,
    )
    visits = mock.patch.object(
      emulation_cache.EmulationCache,
      "visits",
      autospec=True,
      side_effect=emulation_cache.EmulationCache.visits,
    )
    with engine.worker_pool(first) as pool, computed as made, visits as told:
      before = engine.run_sweep(first, pool=pool)
      count = made.call_count
      told.reset_mock()
      again = engine.run_sweep(tries, pool=pool)
      self.assertEqual(made.call_count, count)  # none made again
      # Its emulation cache guesses at the sizes the tries visit only.
      self.assertEqual([c.args[1] for c in told.call_args_list][-1:], [(1, 9)])
      engine.run_sweep(other, pool=pool)  # another largest size: made
      self.assertGreater(made.call_count, count)
    self.assertGreater(count, 0)
    self.assertTrue(all(r.ok for r in before + again))
    # The same numbers as a sweep of its own.
    alone = engine.run_sweep(tries)
    for a, b in zip(again, alone):
      self.assertEqual(a.execution.leaf_stats, b.execution.leaf_stats)
      self.assertEqual(a.prediction, b.prediction)


if __name__ == "__main__":
  absltest.main()
