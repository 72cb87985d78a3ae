"""Whole-file writes under an interrupt at every point: no temporary file
is left beside the target, and the target is old or new, never partial."""

from __future__ import annotations

import os

from absl.testing import absltest
from testutil import interrupted_at

from hloprobe.ir import textfile
from hloprobe.report import files
from hloprobe.runtime import cache


class InterruptedWriteTest(absltest.TestCase):
  def _every_point(self, folder: str, fn, check, module) -> int:
    """Interrupts `fn` at each point of `module` and textfile (calls they
    make and calls into them; not, say, in a gc callback) in turn; returns
    how many there were."""
    files = (module.__file__, textfile.__file__)
    k = 1
    while interrupted_at(k, fn, files):
      left = [
        os.path.join(d, f)
        for d, _, files in os.walk(folder)
        for f in files
        if f.startswith(".tmp-")
      ]
      self.assertEqual(left, [], f"interrupted at event {k}")
      check()
      k += 1
    return k

  def test_atomic_write(self):
    out = self.create_tempdir().full_path
    path = os.path.join(out, "f.txt")
    files.atomic_write(path, "old")

    def check():
      with open(path) as f:
        self.assertIn(f.read(), ("old", "new"))

    points = self._every_point(
      out, lambda: files.atomic_write(path, "new"), check, files
    )
    self.assertGreater(points, 10)
    check()

  def test_record_cache_put(self):
    folder = self.create_tempdir().full_path
    records = cache.RecordCache(folder)
    records.put("k" * 64, ["old"])

    def check():
      self.assertIn(records.get("k" * 64), (["old"], ["new"]))

    points = self._every_point(
      folder, lambda: records.put("k" * 64, ["new"]), check, cache
    )
    self.assertGreater(points, 10)


if __name__ == "__main__":
  absltest.main()
