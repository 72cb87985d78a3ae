"""Concurrent `golden update`s: one at a time, the second names the first;
what a killed update left is removed by the next."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import testutil
from absl.testing import absltest

from hloprobe.errors import GoldenError
from hloprobe.golden import lock, update
from hloprobe.golden.snapshot import Snapshot

_SWEEP = {
  "cases": ["seed_mlp"],
  "targets": ["cpu"],
  "batch_sizes": [1],
  "precisions": ["float32"],
}
_EMPTY = Snapshot({}, {"jax": "0.10.2", "jaxlib": "0.10.2"})
_HOLD = (
  "import sys, time; from hloprobe.golden import lock\n"
  "with lock.golden_lock(sys.argv[1]):\n"
  "  print('held', flush=True); time.sleep(float(sys.argv[2]))\n"
)


class GoldenLockTest(absltest.TestCase):
  def _holder(self, golden: str, hold_s: float) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=testutil.ROOT)
    proc = subprocess.Popen(
      [sys.executable, "-c", _HOLD, golden, str(hold_s)],
      stdout=subprocess.PIPE,
      text=True,
      env=env,
    )
    self.addCleanup(proc.stdout.close)
    self.addCleanup(proc.wait)
    self.addCleanup(proc.kill)
    self.assertEqual(proc.stdout.readline(), "held\n")
    return proc

  @pytest.mark.compiles  # a second Python process holds the lock
  def test_second_update_fails_naming_the_holder(self):
    golden = os.path.join(self.create_tempdir().full_path, "golden")
    holder = self._holder(golden, 60)
    with self.assertRaisesRegex(
      GoldenError,
      rf"golden is being updated by process {holder.pid} since .*"
      r"\.golden\.lock\); waited 0 s",
    ):
      update.update_goldens(golden, _EMPTY, _SWEEP, lock_timeout_s=0.3)
    self.assertFalse(os.path.exists(golden))  # nothing written

  @pytest.mark.compiles  # a second Python process holds the lock
  def test_second_update_waits_for_the_first(self):
    golden = os.path.join(self.create_tempdir().full_path, "golden")
    self._holder(golden, 1.0)
    result = update.update_goldens(golden, _EMPTY, _SWEEP, lock_timeout_s=60)
    self.assertEqual(result.added, ())
    self.assertTrue(os.path.isfile(os.path.join(golden, "MANIFEST.json")))
    self.assertEqual(os.listdir(os.path.dirname(golden)), ["golden"])

  def test_leftovers_of_a_killed_update_are_removed_and_named(self):
    parent = self.create_tempdir().full_path
    golden = os.path.join(parent, "golden")
    update.update_goldens(golden, _EMPTY, _SWEEP)
    for name in (".golden.update-k1l2", ".golden.update-m3n4.old"):
      os.makedirs(os.path.join(parent, name, "cpu"))
    result = update.update_goldens(golden, _EMPTY, _SWEEP)
    self.assertIn(
      "removed .golden.update-k1l2 (left by an interrupted", result.note
    )
    self.assertIn("removed .golden.update-m3n4.old", result.note)
    self.assertEqual(os.listdir(parent), ["golden"])

  def test_leftover_previous_goldens_are_put_back(self):
    parent = self.create_tempdir().full_path
    golden = os.path.join(parent, "golden")
    update.update_goldens(golden, _EMPTY, _SWEEP)
    os.rename(golden, os.path.join(parent, ".golden.update-x.old"))
    with lock.golden_lock(golden):
      self.assertEqual(
        lock.clean_leftovers(golden),
        ["restored .golden.update-x.old as golden (an update died mid-swap)"],
      )
    self.assertEqual(os.listdir(parent), ["golden"])

  def test_leftovers_and_lock_are_git_ignored(self):
    for name in (".golden.lock", ".golden.update-abc", ".golden.update-a.old"):
      proc = subprocess.run(
        ["git", "check-ignore", "-q", name], cwd=testutil.ROOT, check=False
      )
      self.assertEqual(proc.returncode, 0, name)


class LockFileKindTest(absltest.TestCase):
  """Issue 41 item 3: the lock file is read (its holder's line) and locked
  only when it is a regular file; a FIFO in its place is one line, not a
  wait without end nor an OSError traceback."""

  def test_a_fifo_lock_file_is_one_line(self):
    golden = os.path.join(self.create_tempdir().full_path, "golden")
    os.mkfifo(lock.lock_path(golden))
    start = time.monotonic()
    with self.assertRaises(GoldenError) as cm:
      with lock.golden_lock(golden, timeout_s=1):
        pass
    self.assertLess(time.monotonic() - start, 5)
    self.assertNotIn("\n", str(cm.exception))
    self.assertIn("is a FIFO, not a regular file; remove it", str(cm.exception))

  def test_the_holder_of_a_fifo_is_not_waited_on(self):
    path = os.path.join(self.create_tempdir().full_path, ".golden.lock")
    os.mkfifo(path)
    start = time.monotonic()
    self.assertEqual(lock._holder(path), "another process")
    self.assertLess(time.monotonic() - start, 5)

  def test_a_regular_lock_file_names_its_holder(self):
    path = self.create_tempfile(content="process 7 since 2026-12-05").full_path
    self.assertEqual(lock._holder(path), "process 7 since 2026-12-05")


if __name__ == "__main__":
  absltest.main()
