"""The record cache's size bound: least recently used entries go first."""

from __future__ import annotations

import os
import subprocess
import sys
from unittest import mock

import pytest
import testutil
from absl.testing import absltest

from hloprobe.ir import textfile
from hloprobe.runtime import cache

_PAYLOAD = b"x" * 1000  # each entry: this and its index, about 1.4 KB


def _key(i: int) -> str:
  return f"{i:02x}" + "0" * 62


class EvictionTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.store = cache.RecordCache(self.create_tempdir().full_path)
    for i in range(10):
      self.store.put(_key(i), (i, _PAYLOAD))
      # Entry i last used i seconds after the epoch: older = smaller i.
      os.utime(self.store._path(_key(i)), ns=(i * 10**9, i * 10**9))
    self.entry_bytes = os.path.getsize(self.store._path(_key(0)))

  def _kept(self) -> list[int]:
    return [i for i in range(10) if self.store.get(_key(i)) is not None]

  def _folders(self) -> list[str]:
    return sorted(os.listdir(self.store.records_dir))

  def test_usage_counts_every_entry(self):
    held = self.store.usage()
    self.assertEqual(held.entries, 10)
    self.assertEqual(held.size_bytes, 10 * self.entry_bytes)

  def test_holds_at_least_counts_entries(self):
    self.assertTrue(self.store.holds_at_least(10))
    self.assertFalse(self.store.holds_at_least(11))
    missing = cache.RecordCache(os.path.join(self.store.directory, "none"))
    self.assertTrue(missing.holds_at_least(0))
    self.assertFalse(missing.holds_at_least(1))

  def test_bound_holds_and_most_recent_survive(self):
    gone = self.store.evict(4 * self.entry_bytes + 10)
    self.assertEqual((gone.entries, gone.size_bytes), (6, 6 * self.entry_bytes))
    self.assertLessEqual(self.store.usage().size_bytes, 4 * self.entry_bytes)
    self.assertEqual(self._kept(), [6, 7, 8, 9])
    # entry i is in folder records/0i/: the six emptied folders are gone
    self.assertEqual(self._folders(), ["06", "07", "08", "09"])

  def test_a_hit_makes_an_entry_recent(self):
    self.assertEqual(self.store.get(_key(0)), (0, _PAYLOAD))  # the oldest
    self.store.evict(2 * self.entry_bytes)
    self.assertEqual(self._kept(), [0, 9])

  def test_under_the_bound_nothing_goes(self):
    gone = self.store.evict(10 * self.entry_bytes)
    self.assertEqual(gone.entries, 0)
    self.assertEqual(self._kept(), list(range(10)))

  def test_entry_removed_by_another_process_is_harmless(self):
    store = self.store

    class Racing(cache.RecordCache):
      def _scan(self):
        found = super()._scan()
        os.unlink(store._path(_key(0)))  # gone after the listing
        os.unlink(store._path(_key(5)))
        return found

    racing = Racing(store.directory)
    racing.evict(3 * self.entry_bytes)
    self.assertEqual(self._kept(), [7, 8, 9])
    self.assertIsNone(store.get(_key(0)))  # a vanished entry is a miss

  def test_clear_removes_every_entry_and_stale_temporaries(self):
    shard = os.path.dirname(self.store._path(_key(1)))
    stale, fresh = (os.path.join(shard, f".tmp-{n}") for n in ("old", "new"))
    for path in (stale, fresh):
      with open(path, "wb") as f:
        f.write(b"half")
    os.utime(stale, ns=(0, 0))  # left by a writer that died long ago
    gone = self.store.clear()
    self.assertEqual(gone.entries, 10)
    self.assertEqual(self.store.usage().entries, 0)
    self.assertEqual(self._kept(), [])
    self.assertFalse(os.path.exists(stale))
    self.assertTrue(os.path.exists(fresh))  # a writer may be using it
    self.assertEqual(self._folders(), ["01"])  # the only one not empty
    self.store.put(_key(3), "again")  # the folder still takes entries
    self.assertEqual(self.store.get(_key(3)), "again")

  def test_put_makes_a_folder_evicted_under_it_again(self):
    self.store.clear()
    self.assertEqual(self._folders(), [])
    real, calls = textfile.write_whole, []

    def evicted_first(path, write, prefix):
      calls.append(path)
      if len(calls) == 1:  # another process's eviction, after makedirs
        self.store.evict(0)
      real(path, write, prefix=prefix)

    with mock.patch.object(cache, "write_whole", evicted_first):
      with self.assertNoLogs(level="WARNING"):
        self.store.put(_key(4), "kept")
    self.assertLen(calls, 2)
    self.assertEqual(self.store.get(_key(4)), "kept")

  def test_missing_folder_is_empty(self):
    empty = cache.RecordCache(os.path.join(self.store.directory, "none"))
    self.assertEqual(empty.usage().entries, 0)
    self.assertEqual(empty.evict(0).entries, 0)


# Writes, reads and evicts entries 0-19 in a shared folder, as sweeps in
# two processes would; any exception or warning fails the process.
_SHARING = """
import logging, sys
from hloprobe.runtime import cache
logging.getLogger().addHandler(logging.StreamHandler())
store = cache.RecordCache(sys.argv[1])
for i in range(400):
  key = f"{i % 20:02x}" + "0" * 62
  got = store.get(key)
  assert got is None or got == (i % 20, b"x" * 1000), got
  store.put(key, (i % 20, b"x" * 1000))
  store.evict(5000)
"""


@pytest.mark.compiles  # two Python processes
class SharedFolderTest(absltest.TestCase):
  def test_two_processes_evicting_one_folder(self):
    folder = self.create_tempdir().full_path
    env = dict(os.environ, PYTHONPATH=testutil.ROOT, JAX_PLATFORMS="cpu")
    procs = [
      subprocess.Popen(
        [sys.executable, "-c", _SHARING, folder],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
      )
      for _ in range(2)
    ]
    for proc in procs:
      _, err = proc.communicate(timeout=300)
      self.assertEqual(proc.returncode, 0, err)
      self.assertNotIn("hloprobe:", err)  # no warning (a vanished entry)
    self.assertLessEqual(cache.RecordCache(folder).usage().size_bytes, 5000)


if __name__ == "__main__":
  absltest.main()
