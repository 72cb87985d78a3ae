"""Workers forked from a server that imported jax once (`runtime.forked`):
each with its own environment, XLA_FLAGS read after the fork, a death
named as a `python -c` worker's, and `python -c` where a fork cannot be
one (real workers and XLA)."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import types
from unittest import mock

import pytest
import testutil
from absl.testing import absltest

from hloprobe.errors import XlaFlagsError
from hloprobe.runtime import WorkerError, forked, serve
from hloprobe.runtime import pool as worker_pool
from hloprobe.tools.bench_shards import comparable

pytestmark = pytest.mark.compiles

# A request whose module only its own folder holds: a worker finds it
# through the PYTHONPATH it was given, as a user case's shell is found.
_PROBE = """
import dataclasses, os, sys, tempfile, time

from hloprobe.runtime.serve import Request


@dataclasses.dataclass(frozen=True)
class Probe(Request):
  def run(self, memo):
    jax = sys.modules.get("jax")
    return {
      "pid": os.getpid(),
      "parent": os.getppid(),
      "xla_flags": os.environ.get("XLA_FLAGS"),
      "tmp": tempfile.gettempdir(),
      "path": list(sys.path),
      "blas": os.environ.get("OPENBLAS_NUM_THREADS"),
      "platforms": jax.config.jax_platforms if jax else None,
      "jax_imported": jax is not None,
    }


@dataclasses.dataclass(frozen=True)
class Sleep(Request):
  seconds: float

  def run(self, memo):
    time.sleep(self.seconds)
    return os.getpid()
"""


class _ProbeTest(absltest.TestCase):
  """`forked_probe` (the requests above) in a folder of its own, on the
  workers' PYTHONPATH."""

  def setUp(self):
    super().setUp()
    self.folder = tempfile.mkdtemp(prefix="hloprobe-forked-test-")
    self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.folder]))
    path = os.path.join(self.folder, "forked_probe.py")
    with open(path, "w") as f:
      f.write(textwrap.dedent(_PROBE))
    # Imported here from its file, not from sys.path: a fork's sys.path
    # (this process's) lacks the folder, which it adds from the PYTHONPATH
    # below as a `python -c` worker would read it.
    spec = importlib.util.spec_from_file_location("forked_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    patched = mock.patch.dict(sys.modules, {"forked_probe": module})
    patched.start()
    self.addCleanup(patched.stop)
    self.probe = module.Probe()
    given = os.environ.get("PYTHONPATH")
    path = os.pathsep.join(filter(None, [self.folder, given]))
    patcher = mock.patch.dict(os.environ, {"PYTHONPATH": path})
    patcher.start()
    self.addCleanup(patcher.stop)


class ForkedWorkersTest(_ProbeTest):
  def _pool(self, **kwargs) -> worker_pool.WorkerPool:
    pool = worker_pool.WorkerPool(forked=("hloprobe.runtime.serve",), **kwargs)
    self.addCleanup(pool.close)
    return pool

  def _proc(self, pool, flags: str = "", lane: int = 0):
    return pool._workers[pool._key(flags, lane)].proc

  def test_each_fork_has_its_own_environment(self):
    pool = self._pool(platforms="cpu", kept_heap=True)
    flags = "--xla_cpu_enable_fast_math=false"
    found = {lane: pool.call(self.probe, flags, lane=lane) for lane in (0, 1)}
    for lane, got in found.items():
      proc = self._proc(pool, flags, lane)
      self.assertIsInstance(proc, forked.ForkedProcess)
      self.assertEqual(got["pid"], proc.pid)
      self.assertNotEqual(got["parent"], os.getpid())  # the server's
      self.assertEqual(got["xla_flags"], pool.worker_flags(flags))
      worker = pool._workers[pool._key(flags, lane)]
      self.assertEqual(got["tmp"], worker.tmp)
      self.assertEqual(got["path"][1], self.folder)  # from PYTHONPATH
      self.assertNotIn(self.folder, sys.path)
      self.assertEqual(got["blas"], os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    self.assertNotEqual(found[0]["pid"], found[1]["pid"])
    self.assertNotEqual(found[0]["tmp"], found[1]["tmp"])

  def test_jax_takes_the_fork_s_platforms(self):
    # A server (of a process of its own) that imported jax where
    # JAX_PLATFORMS was unset; a fork's own is set in jax's config again.
    script = textwrap.dedent(
      """
      from hloprobe.runtime import pool
      import forked_probe
      workers = pool.WorkerPool(platforms="cpu", forked=("jax",))
      got = workers.call(forked_probe.Probe())
      proc = workers._workers[workers._key("", 0)].proc
      print(got["jax_imported"], got["platforms"], type(proc).__name__)
      workers.close()
      """
    )
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    done = subprocess.run(
      [sys.executable, "-c", script],
      capture_output=True,
      text=True,
      env=env,
      timeout=300,
      check=True,
    )
    self.assertEqual(done.stdout.split(), ["True", "cpu", "ForkedProcess"])

  def test_xla_reads_a_fork_s_xla_flags_after_it_is_forked(self):
    pool = self._pool()
    pool.call(serve.CheckXlaFlagsRequest())  # a fork's flags: none
    self.assertIsInstance(self._proc(pool), forked.ForkedProcess)
    with self.assertRaisesRegex(
      XlaFlagsError, r"XLA rejected flag --xla_no_such_flag_at_all"
    ):
      pool.call(serve.CheckXlaFlagsRequest(), "--xla_no_such_flag_at_all=1")

  def test_a_killed_fork_is_named_by_its_signal_and_started_again(self):
    pool = self._pool()
    first = pool.call(self.probe)
    os.kill(first["pid"], signal.SIGKILL)
    with self.assertRaisesRegex(WorkerError, r"killed by SIGKILL"):
      pool.call(self.probe)
    again = pool.call(self.probe)
    self.assertNotEqual(again["pid"], first["pid"])
    self.assertIsInstance(self._proc(pool), forked.ForkedProcess)

  def test_an_environment_a_fork_cannot_take_starts_python_c(self):
    # A PYTHON* variable the server did not start with: read as Python
    # starts, so no fork of it has it; the call goes to `python -c`.
    pool = self._pool()
    value = "hloprobe-forked-test"
    with mock.patch.dict(os.environ, {"PYTHONHLOPROBEFORKTEST": value}):
      got = pool.call(self.probe)
    self.assertIsInstance(self._proc(pool), subprocess.Popen)
    self.assertEqual(got["parent"], os.getpid())
    self.assertIn(self.folder, got["path"])

  def test_a_pool_of_spawned_workers_is_asked_for_by_the_environment(self):
    with mock.patch.dict(os.environ, {worker_pool.WORKER_START_ENV: "spawn"}):
      pool = self._pool()
    pool.call(self.probe)
    self.assertIsInstance(self._proc(pool), subprocess.Popen)


class EndsWithItsClientTest(_ProbeTest):
  """A fork ends with the process that asked for it, however that ends."""

  def _script(self, body: str) -> subprocess.Popen:
    script = "from hloprobe.runtime import pool\nimport forked_probe\n" + (
      textwrap.dedent(body)
    )
    return testutil.python_c(self, script, stderr=subprocess.DEVNULL)

  def test_a_pool_left_open_does_not_hold_the_exit(self):
    # A case loader's pool is kept until exit, and the sweep's pool made
    # after it (its `Forker` too) is closed: the server ends at exit with
    # the kept pool's fork, and the process exits.
    proc = self._script(
      """
      kept = pool.WorkerPool(forked=("hloprobe.runtime.serve",))
      print(kept.call(forked_probe.Probe())["pid"], flush=True)
      with pool.WorkerPool(forked=("hloprobe.runtime.serve",)) as other:
        other.call(forked_probe.Probe())
      """
    )
    out, _ = proc.communicate(timeout=60)
    self.assertEqual(proc.returncode, 0)
    self.assertTrue(testutil.process_ends(int(out.split()[0]), 10))

  def test_a_killed_client_s_busy_fork_ends_and_its_stdout_closes(self):
    proc = self._script(
      """
      import threading
      workers = pool.WorkerPool(forked=("hloprobe.runtime.serve",))
      print(workers.call(forked_probe.Probe())["pid"], flush=True)
      threading.Thread(
        target=workers.call, args=(forked_probe.Sleep(120),), daemon=True
      ).start()
      import time
      time.sleep(120)
      """
    )
    pid = int(proc.stdout.readline())
    time.sleep(2)  # in its sleep
    self.assertTrue(testutil.process_running(pid))
    proc.kill()
    proc.wait()
    start = time.monotonic()
    proc.stdout.read()  # EOF: no process holds the pipe any more
    self.assertLess(time.monotonic() - start, 30)
    self.assertTrue(testutil.process_ends(pid, 30))


class SameResultsTest(absltest.TestCase):
  def test_a_sweep_s_results_are_those_of_python_c_workers(self):
    # The command line's workers forked (its default) and spawned: the
    # same results.json but for timings, an XLA_FLAGS experiment's
    # (dot strength reduction off: other fates at n = 1) included.
    found = {}
    for start in ("fork", "spawn"):
      out = self.create_tempdir().full_path
      proc = testutil.run_hloprobe(
        "sweep",
        "--case=seed_mlp",
        "--targets=cpu,a100",
        "--batch_sizes=1,2",
        "--precisions=bfloat16",
        "--experiment=nodsr:--xla_disable_hlo_passes=dot-strength-reduction",
        "--nocache",
        f"--output_dir={out}",
        env={worker_pool.WORKER_START_ENV: start},
      )
      self.assertEqual(proc.returncode, 0, proc.stderr)
      found[start] = comparable(os.path.join(out, "results.json"))
    self.assertLen(found["fork"]["configs"], 8)
    self.assertEqual(found["fork"], found["spawn"])


class UnforkableTest(absltest.TestCase):
  """Which of a worker's variables a fork of the server cannot take."""

  def test_one_read_as_a_process_starts_and_set_otherwise(self):
    server = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}
    self.assertEqual(
      forked._unforkable(
        {"PYTHONHASHSEED": "1", "OPENBLAS_NUM_THREADS": "1"}, server
      ),
      ["PYTHONHASHSEED"],
    )
    self.assertEqual(
      forked._unforkable({"OPENBLAS_NUM_THREADS": "4"}, server),
      ["OPENBLAS_NUM_THREADS"],
    )

  def test_what_the_fork_applies_or_reads_later_is_no_obstacle(self):
    server = {"HOME": "/a", "XLA_FLAGS": "", "JAX_PLATFORMS": "cpu"}
    env = {
      "HOME": "/b",
      "XLA_FLAGS": "--xla_cpu_enable_fast_math=false",
      "JAX_PLATFORMS": "cuda",
      "PYTHONPATH": "/c",
      "MALLOC_ARENA_MAX": "1",
      "JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1",
    }
    self.assertEqual(forked._unforkable(env, server), [])

  def test_one_only_the_server_has_is_no_obstacle(self):
    # jax sets TF_CPP_MIN_LOG_LEVEL as the server imports it.
    self.assertEqual(forked._unforkable({}, {"TF_CPP_MIN_LOG_LEVEL": "1"}), [])


class MainNotRerunTest(absltest.TestCase):
  """Which `__main__` modules a fork would run again (the standard
  library's rule, multiprocessing/spawn.py `_fixup_main_from_name` and
  `_fixup_main_from_path`)."""

  def _main(self, name=None, file=None, main=None):
    module = types.ModuleType("__main__")
    module.__spec__ = None if name is None else types.SimpleNamespace(name=name)
    if file is not None:
      module.__file__ = file
    if main is not None:
      module.main = main
    return mock.patch.dict(sys.modules, {"__main__": module})

  def test_a_package_s_main_module_is_not_run_again(self):
    for name in ("hloprobe.__main__", "pytest.__main__", "__main__"):
      with self._main(name=name, file="/x/__main__.py"):
        self.assertTrue(forked.main_not_rerun(), name)

  def test_another_module_run_with_dash_m_would_be(self):
    with self._main(name="mytool", file="/x/mytool.py"):
      self.assertFalse(forked.main_not_rerun())

  def test_a_user_s_script_would_be_and_its_pool_spawns(self):
    with self._main(file="/home/user/study.py"):
      self.assertFalse(forked.main_not_rerun())
      pool = worker_pool.WorkerPool(forked=("hloprobe.runtime.serve",))
      self.addCleanup(pool.close)
      self.assertIsNone(pool._forker)

  def test_hloprobe_s_console_script_and_a_prompt_are_not(self):
    from hloprobe import __main__ as entry

    def other():
      pass

    with self._main(file="/venv/bin/hloprobe", main=entry.main):
      self.assertTrue(forked.main_not_rerun())
    with self._main(file="/venv/bin/tool", main=other):
      self.assertFalse(forked.main_not_rerun())
    with self._main():
      self.assertTrue(forked.main_not_rerun())


if __name__ == "__main__":
  absltest.main()
