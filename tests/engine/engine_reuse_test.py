"""Configs shared between sweeps (issue 37, item 4): `run_sweep(given=)`
takes a config an earlier sweep made ok instead of computing it again
(explain's fix tries: the configs at fault, a precision swept already).

And a sweep of the bits only (`SweepSpec.numerics` False, `explain
--only=invariance`, issue 38): its records hold no numerics, say so, and
never serve a sweep that wants them; a record with numerics serves it."""

from __future__ import annotations

import contextlib
from unittest import mock

import pytest
import testutil
from absl.testing import absltest

from hloprobe import engine
from hloprobe.engine.spec import BITS_ONLY

pytestmark = pytest.mark.compiles

# The module's sweeps share one warm pool (`engine.worker_pool` returns it,
# leaving `with` keeps it open): its workers start once, not per test.
_WORKERS = contextlib.ExitStack()


def setUpModule():
  _WORKERS.enter_context(testutil.shared_workers())


def tearDownModule():  # pytest calls it (not unittest's module cleanups)
  _WORKERS.close()


@contextlib.contextmanager
def _calls(pool):
  """The list of `pool.call`s made within (each call's arguments); the
  pool's own `call` again on leaving (the pool is the module's)."""
  calls, call = [], pool.call
  with mock.patch.object(
    pool, "call", lambda *a, **k: calls.append(a) or call(*a, **k)
  ):
    yield calls


def _plan(precisions, passes=False, sizes=(1, 9), cache_dir=None):
  return engine.plan_sweep(
    engine.SweepSpec(
      ("seed_mlp",),
      sizes,
      precisions,
      ("cpu",),
      explain_passes=passes,
      cache_dir=cache_dir,
    )
  )


class GivenTest(absltest.TestCase):
  def test_a_config_made_already_is_taken_not_computed(self):
    first = _plan(("bfloat16", "float32"), passes=True)
    later = _plan(("float32",))
    with engine.worker_pool(first) as pool:
      made = engine.run_sweep(first, pool=pool)
      with _calls(pool) as calls:
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

  def test_a_taken_record_is_stored_under_its_own_key(self):
    # The earlier sweep asked for passes, the later does not: their cache
    # keys differ (`CaseKey.config_key`'s explain_passes), so the earlier
    # one's entries do not serve a third sweep of the later's words. The
    # later sweep takes the records (no worker call) and stores each under
    # its own key (engine `_hit`, commits e605904 and 48c4f3e): the third
    # sweep, given nothing, hits the cache for both configs.
    folder = self.create_tempdir().full_path
    first = _plan(("float32",), passes=True, cache_dir=folder)
    later = _plan(("float32",), cache_dir=folder)
    with engine.worker_pool(first) as pool:
      made = engine.run_sweep(first, pool=pool)
      with _calls(pool) as calls:
        taken = engine.run_sweep(later, pool=pool, given=[(first, made)])
        self.assertEqual(calls, [])
        again = engine.run_sweep(later, pool=pool)
        self.assertEqual(calls, [])  # every config a cache hit
    self.assertLen(again, 2)
    for got, want in zip(again, taken):
      self.assertEqual(got.config, want.config)
      self.assertIsNone(got.compilation.passes)
      self.assertEqual(got.compilation.fates, want.compilation.fates)
      self.assertEqual(got.execution.leaf_stats, want.execution.leaf_stats)
      self.assertEqual(got.prediction, want.prediction)

  def test_another_largest_size_is_computed(self):
    first = _plan(("float32",), sizes=(1, 9))
    other = _plan(("float32",), sizes=(1, 4))
    with engine.worker_pool(first) as pool:
      made = engine.run_sweep(first, pool=pool)
      with _calls(pool) as calls:
        engine.run_sweep(other, pool=pool, given=[(first, made)])
    self.assertLen(calls, 2)  # n = 1 again too: its largest size differs


class BitsOnlyTest(absltest.TestCase):
  def test_no_numerics_and_never_served_to_a_sweep_wanting_them(self):
    full = _plan(("float32",))
    bits = engine.plan_sweep(full, numerics=False)
    with engine.worker_pool(full) as pool:
      made = engine.run_sweep(bits, pool=pool)
      for r in made:
        self.assertTrue(r.ok, r.failure)
        self.assertNotEmpty(r.compilation.fates)  # compiled, sites mapped
        self.assertGreater(r.execution.run_s, 0)  # run on the CPU
        self.assertEqual(r.execution.leaf_stats, ())  # no reference
        self.assertIsNone(r.prediction)
        self.assertEqual(r.prediction_error, BITS_ONLY)
      with _calls(pool) as calls:
        wanted = engine.run_sweep(full, pool=pool, given=[(bits, made)])
        self.assertLen(calls, 2)  # both computed again, with numerics
        for r in wanted:
          self.assertNotEmpty(r.execution.leaf_stats)
          self.assertIsNotNone(r.prediction)
        calls.clear()
        served = engine.run_sweep(bits, pool=pool, given=[(full, wanted)])
        self.assertEqual(calls, [])
      self.assertEqual(
        [r.compilation.fates for r in served],
        [r.compilation.fates for r in made],
      )


if __name__ == "__main__":
  absltest.main()
