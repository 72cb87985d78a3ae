"""Worker processes: results come back as records; bad XLA flags fail alone."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from unittest import mock

import pytest
from absl.testing import absltest

from hloprobe import records
from hloprobe.compile import cases, targets
from hloprobe.engine.compiled import CompileRequest
from hloprobe.errors import XlaFlagsError
from hloprobe.ir.precisions import Precision
from hloprobe.runtime import pool as worker
from hloprobe.runtime import serve
from hloprobe.sites import Fate

pytestmark = pytest.mark.compiles

_CPU = targets.BUILTIN_TARGETS["cpu"]


def _request(target=_CPU, n=1, explain_passes=False) -> CompileRequest:
  """seed_mlp at float32 on `target`, as the sweep sends it."""
  config = records.Config("seed_mlp", target, n, Precision.float32)
  full = cases.seed_mlp.full_inputs()
  return CompileRequest(config, "seed_mlp", full, explain_passes)


_CONFIG = _request()


class WorkerTest(absltest.TestCase):
  def test_records_come_back(self):
    work = worker.call_in_worker(_CONFIG, "")
    self.assertTrue(work.result.ok, work.result.failure)
    self.assertEqual(
      work.result.compilation.fates[3].fate, Fate.MULTIPLY_REDUCE
    )
    # The seed MLP's output at n = 1: one float32 mean, run in the worker.
    (out,) = work.outputs
    self.assertEqual((out.shape, str(out.dtype)), ((1,), "float32"))

  def test_misspelled_xla_flag_is_named(self):
    with self.assertRaisesRegex(
      XlaFlagsError, "XLA rejected flag --xla_cpu_enable_fast_mathh=false"
    ):
      worker.call_in_worker(_CONFIG, "--xla_cpu_enable_fast_mathh=false")

  def test_user_flags_then_experiment_flags(self):
    self.assertEqual(
      worker.worker_xla_flags(" --xla_dump_to=/d ", "--xla_foo=1 --xla_bar=2"),
      "--xla_dump_to=/d --xla_foo=1 --xla_bar=2",
    )
    self.assertEqual(worker.worker_xla_flags("", "--xla_foo=1"), "--xla_foo=1")
    self.assertEqual(worker.worker_xla_flags("--xla_foo=1", ""), "--xla_foo=1")

  def test_worker_keeps_the_users_xla_flags(self):
    dump = self.create_tempdir().full_path
    with mock.patch.dict(os.environ, {"XLA_FLAGS": f"--xla_dump_to={dump}"}):
      work = worker.call_in_worker(_CONFIG, "--xla_cpu_enable_fast_math=false")
    self.assertTrue(work.result.ok, work.result.failure)
    self.assertNotEmpty(os.listdir(dump))

  def test_experiment_flag_wins_over_the_users(self):
    user, mine = (self.create_tempdir().full_path for _ in range(2))
    with mock.patch.dict(os.environ, {"XLA_FLAGS": f"--xla_dump_to={user}"}):
      worker.call_in_worker(_CONFIG, f"--xla_dump_to={mine}")
    self.assertEmpty(os.listdir(user))
    self.assertNotEmpty(os.listdir(mine))

  def test_xla_crash_is_one_call_failure_and_the_worker_restarts(self):
    # Past the up-front check (targets.POSITIVE_COUNTS), as a config XLA
    # dies on would be: jaxlib 0.10.2 takes SIGFPE compiling it.
    a100 = targets.BUILTIN_TARGETS["a100"]
    broken = dataclasses.replace(
      a100,
      name="a100_tpw0",
      config_text=a100.config_text.replace(
        "threads_per_warp: 32", "threads_per_warp: 0"
      ),
    )
    tmp = self.create_tempdir().full_path
    with mock.patch.object(tempfile, "tempdir", tmp):
      with worker.WorkerPool() as pool:
        with self.assertRaisesRegex(
          worker.WorkerError, r"^worker process was killed by SIGFPE; last"
        ):
          pool.call(_request(broken, 2))
        self.assertEqual(os.listdir(tmp), [])  # its folder went with it
        good = pool.call(_request(a100, 2, explain_passes=True)).result
        self.assertTrue(good.ok, good.failure)
        self.assertEqual(good.compilation.fates[0].fate, Fate.TRITON_GEMM)
    self.assertEqual(os.listdir(tmp), [])

  def test_only_request_records_run(self):
    # No names in a table: a worker runs `serve.Request` records only.
    with self.assertRaisesRegex(TypeError, "runs Request records"):
      worker.call_in_worker("os.system", "")
    with self.assertRaisesRegex(TypeError, "preload takes Request classes"):
      worker.WorkerPool(preload=("hloprobe.engine",))

  def test_rejected_flag_is_a_usage_error(self):
    from hloprobe.errors import InvalidArgumentError

    self.assertTrue(issubclass(XlaFlagsError, InvalidArgumentError))
    with self.assertRaisesRegex(XlaFlagsError, "XLA_FLAGS of the environment"):
      worker.WorkerPool.check_environment_xla_flags("--xla_no_such_flag=1")

  def test_the_worker_resolves_a_case_once(self):
    memo = {}
    request = serve.CheckXlaFlagsRequest()
    self.assertIsNone(request.run(memo))
    with mock.patch.object(cases, "get_case", wraps=cases.get_case) as found:
      with mock.patch("hloprobe.engine.compiled.get_case", found):
        for _ in range(2):
          work = _CONFIG.run(memo)
    self.assertEqual(found.call_count, 1)
    self.assertIs(work.result.config, _CONFIG.config)


class BadValueTest(absltest.TestCase):
  def test_flag_value_xla_cannot_read_is_named(self):
    with self.assertRaisesRegex(
      XlaFlagsError,
      "XLA rejected flag --xla_cpu_enable_fast_math: cannot read the value 'maybe'",
    ):
      worker.call_in_worker(_CONFIG, "--xla_cpu_enable_fast_math=maybe")


if __name__ == "__main__":
  absltest.main()
