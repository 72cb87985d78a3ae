"""Worker processes: results come back as records; bad XLA flags fail alone."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe import sweep, worker
from hloprobe.dot_sites import Fate

_SPEC = sweep.SweepSpec(("seed_mlp",), (1,), ("float32",), ("cpu",))


class WorkerTest(absltest.TestCase):
  def test_records_come_back(self):
    (result,) = worker.call_in_worker("run_sweep", {"spec": _SPEC}, "")
    self.assertTrue(result.ok, result.error)
    self.assertEqual(result.fates[3].fate, Fate.MULTIPLY_REDUCE)
    self.assertIsNotNone(result.stats)

  def test_misspelled_xla_flag_is_named(self):
    with self.assertRaisesRegex(
      worker.WorkerError, "XLA rejected flag --xla_cpu_enable_fast_mathh=false"
    ):
      worker.call_in_worker(
        "run_sweep", {"spec": _SPEC}, "--xla_cpu_enable_fast_mathh=false"
      )

  def test_unknown_function(self):
    with self.assertRaisesRegex(ValueError, "unknown worker function"):
      worker.call_in_worker("os.system", {}, "")


if __name__ == "__main__":
  absltest.main()
