"""engine/executor.py: the pool a sweep's spec asks for, made and closed
here without starting a worker (no process, no XLA). Expected: local
processes for "local" (JAX_PLATFORMS left as this process has it unless
a target is an attached GPU), one line naming the executors otherwise."""

from __future__ import annotations

import dataclasses
import os
from unittest import mock

from absl.testing import absltest

from hloprobe import engine
from hloprobe.engine import executor
from hloprobe.errors import InvalidArgumentError
from hloprobe.runtime import WorkerPool


def _spec(targets=("cpu", "a100"), **kw):
  return engine.SweepSpec(("seed_mlp",), (1,), ("float32",), targets, **kw)


class WorkerPoolTest(absltest.TestCase):
  def test_local_pool_starts_nothing(self):
    with executor.worker_pool(_spec()) as pool:
      self.assertIsInstance(pool, WorkerPool)
      self.assertEqual(pool.started, 0)
      self.assertIsNone(pool._platforms)  # this process's platforms

  def test_an_attached_gpu_lets_jax_choose(self):
    with mock.patch.dict(os.environ, {"JAX_PLATFORMS": "cuda,cpu"}):
      with executor.worker_pool(_spec(("gpu",))) as pool:
        self.assertEqual(pool._platforms, "cuda,cpu")

  def test_unknown_executor_is_one_line(self):
    spec = dataclasses.replace(_spec(), executor="slurm")
    with self.assertRaisesRegex(
      InvalidArgumentError, "unknown executor 'slurm'; choose from local, ray"
    ):
      executor.worker_pool(spec)


if __name__ == "__main__":
  absltest.main()
