"""The persistent record cache: what misses it, and that it changes nothing."""

from __future__ import annotations

import dataclasses
import os
from unittest import mock

import jax.numpy as jnp
import numpy as np
import pytest
import testutil
from absl.testing import absltest

from hloprobe import engine as sweep_stage
from hloprobe import records
from hloprobe.compile import cases, targets
from hloprobe.engine import engine, measure
from hloprobe.runtime import cache
from hloprobe.runtime import pool as worker


def _key(
  case_print,
  target="a100",
  precision="float32",
  n=4,
  passes=False,
  version=records.RECORD_VERSION,
):
  return case_print.config_key(
    targets.get_target(target),
    precision,
    n,
    64,
    passes,
    record_version=version,
  )


class KeyTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.case = cases.get_case("seed_mlp")
    cls.full = testutil.seed_mlp_inputs()  # make_inputs, without XLA
    cls.print = cache.CaseKey.of(cls.case, cls.full)

  def test_same_inputs_same_key(self):
    self.assertEqual(cache.CaseKey.of(self.case, self.full), self.print)
    self.assertEqual(_key(self.print), _key(self.print))

  def test_changed_case_function_misses(self):
    def other(xs, params):  # the seed MLP with one constant changed
      return cases.seed_mlp.fn(xs * 1.5, params)

    changed = dataclasses.replace(self.case, fn=other)
    self.assertNotEqual(cache.CaseKey.of(changed, self.full), self.print)

  def test_changed_input_bytes_miss(self):
    xy, params = self.full
    xy = xy.copy()
    xy[7, 1] = np.nextafter(xy[7, 1], np.float32(2))  # one ULP, one element
    self.assertNotEqual(cache.CaseKey.of(self.case, (xy, params)), self.print)

  def test_changed_closed_over_constant_misses(self):
    def with_const(c):
      return lambda xs, params: cases.seed_mlp.fn(xs, params) + jnp.asarray(c)

    a = dataclasses.replace(self.case, fn=with_const(np.ones(3, np.float32)))
    b = dataclasses.replace(self.case, fn=with_const(np.zeros(3, np.float32)))
    self.assertNotEqual(
      cache.CaseKey.of(a, self.full), cache.CaseKey.of(b, self.full)
    )

  def test_changed_target_config_misses(self):
    a100 = targets.get_target("a100")
    edited = dataclasses.replace(
      a100,
      config_text=a100.config_text.replace(
        "core_count: 108", "core_count: 107"
      ),
    )
    self.assertNotEqual(edited.config_text, a100.config_text)
    self.assertNotEqual(
      self.print.config_key(
        edited,
        "float32",
        4,
        64,
        False,
        record_version=records.RECORD_VERSION,
      ),
      _key(self.print),
    )

  def test_the_bits_only_miss_and_the_default_keys_stay(self):
    # The bits only (`SweepSpec.numerics` False) is another record; the
    # default's keys are those made before the argument existed.
    bits = self.print.config_key(
      targets.get_target("a100"),
      "float32",
      4,
      64,
      False,
      record_version=records.RECORD_VERSION,
      numerics=False,
    )
    self.assertNotEqual(bits, _key(self.print))
    self.assertEqual(
      self.print.config_key(
        targets.get_target("a100"),
        "float32",
        4,
        64,
        False,
        record_version=records.RECORD_VERSION,
        numerics=True,
      ),
      _key(self.print),
    )

  def test_another_record_layout_misses(self):
    # Records written in the flat layout of version 1 are not read as today's.
    self.assertNotEqual(_key(self.print, version=1), _key(self.print))

  def test_config_fields_and_xla_flags_miss(self):
    base = _key(self.print)
    self.assertNotEqual(_key(self.print, target="h100"), base)
    self.assertNotEqual(_key(self.print, precision="bfloat16"), base)
    self.assertNotEqual(_key(self.print, n=5), base)
    self.assertNotEqual(_key(self.print, passes=True), base)
    old = os.environ.get("XLA_FLAGS")
    os.environ["XLA_FLAGS"] = "--xla_gpu_enable_triton_gemm=false"
    try:
      self.assertNotEqual(_key(self.print), base)
    finally:
      if old is None:
        del os.environ["XLA_FLAGS"]
      else:
        os.environ["XLA_FLAGS"] = old
    self.assertEqual(_key(self.print), base)


@pytest.mark.compiles  # sweeps, in process or through the CLI
class SweepCacheTest(absltest.TestCase):
  def test_cached_results_equal_computed_ones(self):
    # The sweeps share one pool of workers (a cold and a warm worker make
    # the same records: the cache is what is tested here).
    pool = testutil.SweepPool()
    self.addCleanup(pool.close)
    folder = self.create_tempdir().full_path
    # One size on two targets: what is asserted holds per config.
    spec = sweep_stage.SweepSpec(
      ("seed_mlp",), (2,), ("float32",), ("cpu", "a100")
    )
    cached = dataclasses.replace(spec, cache_dir=folder)
    cold = pool.run(cached)
    self.assertTrue(all(r.ok for r in cold), [r.failure for r in cold])
    self.assertTrue(all("compile" in r.timings for r in cold))
    warm = pool.run(cached)
    # every warm record came from the cache: nothing compiled or emulated
    for r in warm:
      self.assertNotIn("compile", r.timings)
      self.assertNotIn("emulation", r.timings)
      self.assertIn("cache", r.timings)
    self.assertEqual(testutil.configs_json(warm), testutil.configs_json(cold))
    self.assertEqual(
      testutil.configs_json(pool.run(spec)), testutil.configs_json(cold)
    )

    # A corrupt entry is a miss (with a warning) and is rewritten; the
    # others stay hits.
    entries = sorted(
      os.path.join(d, f)
      for d, _, files in os.walk(folder)
      for f in files
      if f.endswith(".record")
    )
    self.assertLen(entries, 2)
    with open(entries[0], "wb") as f:
      f.write(b"not a record")
    with self.assertLogs(level="WARNING") as logs:
      again = pool.run(cached)
    self.assertLen(logs.output, 1)
    self.assertIn("unreadable cache entry", logs.output[0])
    self.assertEqual(testutil.configs_json(again), testutil.configs_json(cold))
    self.assertEqual(
      sorted("compile" in r.timings for r in again), [False, True]
    )
    self.assertEqual(
      {
        type(cache.RecordCache(folder).get(os.path.basename(p)[:-7])).__name__
        for p in entries
      },
      {"ConfigResult"},
    )

    # Entries of another record layout miss: both are computed again
    # and stored beside the old ones, under new keys.
    newer = records.RECORD_VERSION + 1
    with mock.patch.object(engine, "RECORD_VERSION", newer):
      relaid = pool.run(cached)
    self.assertTrue(all("compile" in r.timings for r in relaid))
    self.assertEqual(testutil.configs_json(relaid), testutil.configs_json(cold))
    stored = [
      f for _, _, fs in os.walk(folder) for f in fs if f.endswith(".record")
    ]
    self.assertLen(stored, 4)


def _sweep_counting_workers(spec):
  """(results, workers started when the first inputs were made, workers
  started in all), the sweep run on a pool of its own."""
  real, seen = measure.CaseSetup.inputs, []
  with worker.WorkerPool() as pool:

    def spy(setup, watch):
      seen.append(pool.started)
      return real(setup, watch)

    with mock.patch.object(measure.CaseSetup, "inputs", spy):
      results = sweep_stage.run_sweep(spec, pool=pool)
  return results, seen[0], pool.started


@pytest.mark.compiles  # sweeps, in process or through the CLI
class WorkersTest(absltest.TestCase):
  def test_a_fully_cached_rerun_starts_no_worker(self):
    folder = self.create_tempdir().full_path
    spec = sweep_stage.SweepSpec(
      ("seed_mlp",), (1,), ("float32",), ("cpu", "a100"), cache_dir=folder
    )
    cold, early, started = _sweep_counting_workers(spec)
    self.assertTrue(all(r.ok for r in cold), [r.failure for r in cold])
    # Cold: the baseline's worker is started before the inputs are made
    # (it warms up meanwhile), and it alone compiles both configs.
    self.assertEqual((early, started), (1, 1))
    # Warm: every config is a hit, so no worker process starts at all.
    warm, early, started = _sweep_counting_workers(spec)
    self.assertEqual((early, started), (0, 0))
    self.assertTrue(all("compile" not in r.timings for r in warm))
    self.assertEqual(testutil.configs_json(warm), testutil.configs_json(cold))


@pytest.mark.compiles  # sweeps, in process or through the CLI
class CliTest(absltest.TestCase):
  def test_timings_table_and_warm_rerun(self):
    folder = self.create_tempdir().full_path
    args = (
      "sweep",
      "--batch_sizes=2",
      "--precisions=float32",
      f"--cache_dir={folder}",
      "--timings",
    )
    # In this process (tests/runtime/host_test.py runs a fresh process's
    # explain through the record cache).
    here = lambda *words: testutil.run_hloprobe_here(*words, timeout_s=600)
    cold = here(*args)
    self.assertEqual(cold.returncode, 0, cold.stderr)
    table = cold.stdout.split("\n\n")[-1]
    self.assertIn("compile", table.splitlines()[0])
    self.assertIn("emulation", table.splitlines()[0])
    self.assertTrue(table.splitlines()[-1].startswith("all"))
    warm = here(*args)
    self.assertEqual(warm.returncode, 0, warm.stderr)
    header = warm.stdout.split("\n\n")[-1].splitlines()[0]
    self.assertIn("cache", header)
    self.assertNotIn("compile", header)
    # --nocache computes again
    fresh = here(*args, "--nocache")
    self.assertIn("compile", fresh.stdout.split("\n\n")[-1].splitlines()[0])

    # `hloprobe cache` counts the one record, `cache clear` removes it, and
    # with a bound of 0 MiB a sweep's record is evicted after the sweep.
    shown = here("cache", f"--cache_dir={folder}")
    self.assertEqual(shown.returncode, 0, shown.stderr)
    self.assertIn("records: 1 (", shown.stdout)
    cleared = here("cache", "clear", f"--cache_dir={folder}")
    self.assertEqual(cleared.returncode, 0, cleared.stderr)
    self.assertIn("removed 1 records", cleared.stdout)
    self.assertEqual(cache.RecordCache(folder).usage().entries, 0)
    bounded = here(*args, "--cache_max_mb=0")
    self.assertEqual(bounded.returncode, 0, bounded.stderr)
    self.assertIn("compile", bounded.stdout.split("\n\n")[-1].splitlines()[0])
    self.assertEqual(cache.RecordCache(folder).usage().entries, 0)
    # and its emptied records/xx/ folder with it
    self.assertEqual(os.listdir(cache.RecordCache(folder).records_dir), [])


if __name__ == "__main__":
  absltest.main()
