"""runtime/worker_error.py: the error a worker's death or timeout raises
is hloprobe's own (the command line prints it as one line), says the
stage the worker was in, and survives pickling whole (a Ray lane and the
worker side pass it back so)."""

from __future__ import annotations

import pickle

from absl.testing import absltest

from hloprobe.errors import HloprobeError
from hloprobe.runtime.worker_error import WorkerError


class WorkerErrorTest(absltest.TestCase):
  def test_a_death_names_its_stage(self):
    e = WorkerError("killed by SIGKILL", stage="compile")
    self.assertIsInstance(e, HloprobeError)
    self.assertEqual(
      (str(e), e.stage, e.timed_out), ("killed by SIGKILL", "compile", False)
    )

  def test_defaults_and_a_timeout(self):
    self.assertEqual(WorkerError("x").stage, None)
    self.assertTrue(WorkerError("x", timed_out=True).timed_out)

  def test_pickles_with_its_fields(self):
    e = pickle.loads(pickle.dumps(WorkerError("m", "run", True)))
    self.assertEqual((str(e), e.stage, e.timed_out), ("m", "run", True))


if __name__ == "__main__":
  absltest.main()
