"""A worker's memory bound (issue 37, item 5; --max_worker_mb): a worker
past it is stopped, its config fails with one line naming the bound, and
the other configs go on in a fresh worker."""

from __future__ import annotations

import os
from unittest import mock

import pytest
from absl.testing import absltest

from hloprobe import engine
from hloprobe.runtime import WorkerError, WorkerPool, process, serve


class ResidentTest(absltest.TestCase):
  def test_this_process_is_resident(self):
    mb = process.resident_mb(os.getpid())
    self.assertGreater(mb, 1.0)  # a Python with numpy: tens of MiB
    self.assertIsNone(process.resident_mb(2**22 + 1))  # no such pid

  def test_the_default_is_a_quarter_of_the_machine(self):
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    self.assertEqual(process.default_max_worker_mb(), total // 4 // 2**20)
    self.assertEqual(WorkerPool().max_worker_mb, total // 4 // 2**20)
    self.assertEqual(WorkerPool(max_worker_mb=100).max_worker_mb, 100)


@pytest.mark.compiles
class BoundTest(absltest.TestCase):
  def test_a_worker_over_the_bound_is_stopped_with_one_line(self):
    # Starting XLA's CPU backend imports jax: far over 64 MiB resident.
    with WorkerPool(max_worker_mb=64) as pool:
      with self.assertRaises(WorkerError) as caught:
        pool.call(serve.CheckXlaFlagsRequest())
      self.assertFalse(pool._workers[("", 0)].alive)
    line = str(caught.exception)
    self.assertNotIn("\n", line)
    self.assertRegex(
      line,
      r"^worker went over --max_worker_mb=64 \(resident \d+ MiB, stage ",
    )

  def test_the_other_configs_are_kept(self):
    # The first worker reads as over the bound (its pid only), so the
    # first config fails; the next config runs in a fresh worker, whose
    # real resident size is read.
    real, first = process.resident_mb, []

    def resident(pid):
      first[:] = first or [pid]
      return 1e9 if pid == first[0] else real(pid)

    spec = engine.SweepSpec(
      ("seed_mlp",), (1, 2), ("float32",), ("cpu",), max_worker_mb=8000
    )
    with mock.patch.object(process, "resident_mb", resident):
      results = engine.run_sweep(spec)
    bad, good = results
    self.assertFalse(bad.ok)
    self.assertRegex(
      bad.failure.error, r"^worker went over --max_worker_mb=8000 \(resident"
    )
    self.assertTrue(good.ok, good.failure)
    self.assertIsNotNone(good.execution)


if __name__ == "__main__":
  absltest.main()
