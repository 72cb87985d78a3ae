"""Whole-file writes under an interrupt at every point: no temporary file
is left beside the target, and the target is old or new, never partial."""

from __future__ import annotations

import os
import sys

from absl.testing import absltest

from hloprobe.compile import cache
from hloprobe.report import render


def _interrupted_at(k: int, fn) -> bool:
  """Runs `fn()`, raising KeyboardInterrupt at its k-th traced event (a
  call, line or return of Python code, as a signal handler would between
  bytecodes); True if it was interrupted, False if it finished first."""
  count = 0

  def tracer(frame, event, arg):
    nonlocal count
    if event in ("call", "line", "return"):
      count += 1
      if count == k:
        raise KeyboardInterrupt
    return tracer

  sys.settrace(tracer)
  try:
    fn()
  except KeyboardInterrupt:
    return True
  finally:
    sys.settrace(None)
  return False


class InterruptedWriteTest(absltest.TestCase):
  def _every_point(self, folder: str, fn, check) -> int:
    """Interrupts `fn` at each point in turn; returns how many there were."""
    k = 1
    while _interrupted_at(k, fn):
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
    render.atomic_write(path, "old")

    def check():
      with open(path) as f:
        self.assertIn(f.read(), ("old", "new"))

    points = self._every_point(
      out, lambda: render.atomic_write(path, "new"), check
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
      folder, lambda: records.put("k" * 64, ["new"]), check
    )
    self.assertGreater(points, 10)


if __name__ == "__main__":
  absltest.main()
