"""Worker pools under interrupts, and what a worker's failure reports."""

from __future__ import annotations

import gc
import os
import tempfile
from unittest import mock

import pytest
import testutil
from absl.testing import absltest

from hloprobe.compile import worker


class InterruptedStartTest(absltest.TestCase):
  # An interrupt as `Popen()` returns loses the Popen object: Python warns
  # that its process still runs; it ends as its stdin closes, and it is
  # SIGKILLed with this process (PR_SET_PDEATHSIG) in any case.
  @pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
  )
  def test_no_folder_left_wherever_start_is_interrupted(self):
    tmp = self.create_tempdir().full_path

    def start():
      with worker.WorkerPool() as pool:
        pool.start("", 0)

    k = 1
    with mock.patch.object(tempfile, "tempdir", tmp):
      # At each point of worker.py in turn: between making the folder,
      # starting the process and noting the worker, and while closing.
      while testutil.interrupted_at(k, start, files=(worker.__file__,)):
        gc.collect()  # the pool, if an interrupt beat its __exit__
        self.assertEqual(os.listdir(tmp), [], f"interrupted at event {k}")
        k += 1
    self.assertGreater(k, 20)
    self.assertEqual(os.listdir(tmp), [])


if __name__ == "__main__":
  absltest.main()
