"""Configs shared between sweeps (issue 37, item 4): `run_sweep(given=)`
takes a config an earlier sweep made ok instead of computing it again
(explain's fix tries: the configs at fault, a precision swept already)."""

from __future__ import annotations

import pytest
from absl.testing import absltest

from hloprobe import engine

pytestmark = pytest.mark.compiles


def _plan(precisions, passes=False, sizes=(1, 9)):
  return engine.plan_sweep(
    engine.SweepSpec(
      ("seed_mlp",), sizes, precisions, ("cpu",), explain_passes=passes
    )
  )


class GivenTest(absltest.TestCase):
  def test_a_config_made_already_is_taken_not_computed(self):
    first = _plan(("bfloat16", "float32"), passes=True)
    later = _plan(("float32",))
    with engine.worker_pool(first) as pool:
      made = engine.run_sweep(first, pool=pool)
      calls = []
      call = pool.call
      pool.call = lambda *a, **k: calls.append(a) or call(*a, **k)
      taken = engine.run_sweep(later, pool=pool, given=[(first, made)])
      self.assertEqual(calls, [])  # no worker did anything
      # A sweep that asks for passes is not served by one without.
      engine.run_sweep(
        _plan(("float32",), passes=True), pool=pool, given=[(later, taken)]
      )
      self.assertNotEmpty(calls)
    alone = engine.run_sweep(later)
    self.assertLen(taken, 2)
    for got, want in zip(taken, alone):
      self.assertEqual(got.config, want.config)
      self.assertIsNone(got.compilation.passes)  # as a sweep without
      self.assertEqual(got.compilation.fates, want.compilation.fates)
      self.assertEqual(got.execution.leaf_stats, want.execution.leaf_stats)
      self.assertEqual(got.execution.ulp_vs_n1, want.execution.ulp_vs_n1)
      self.assertEqual(got.prediction, want.prediction)

  def test_another_largest_size_is_computed(self):
    first = _plan(("float32",), sizes=(1, 9))
    other = _plan(("float32",), sizes=(1, 4))
    with engine.worker_pool(first) as pool:
      made = engine.run_sweep(first, pool=pool)
      calls = []
      call = pool.call
      pool.call = lambda *a, **k: calls.append(a) or call(*a, **k)
      engine.run_sweep(other, pool=pool, given=[(first, made)])
    self.assertLen(calls, 2)  # n = 1 again too: its largest size differs


if __name__ == "__main__":
  absltest.main()
