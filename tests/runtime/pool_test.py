"""The sweep's workers: every config in one, lanes up to --jobs, deaths
contained (real compiles and runs)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from unittest import mock

import jax.numpy as jnp
import numpy as np
import pytest
import testutil
from absl.testing import absltest

from hloprobe import engine
from hloprobe.compile import cases, targets
from hloprobe.compile.experiments import Experiment
from hloprobe.runtime import pool as worker
from hloprobe.runtime import serve

pytestmark = pytest.mark.compiles

# One pool of workers for the module's sweeps that are not about which
# workers start (what a sweep computes does not depend on them being
# warm: JobsAndRetireTest).
_POOL = testutil.SweepPool()
# And one loader for the user cases' files (CrashTest, InputsTest).
_LOADER = contextlib.ExitStack()


def setUpModule():
  _LOADER.enter_context(testutil.shared_case_loader())


def tearDownModule():
  _POOL.close()
  _LOADER.close()


# A case whose program calls back into Python and kills its own process
# with SIGSEGV when the callback sees float32 rows at batch size 2: the
# float64 reference (float64 data) never does, the compiled program at
# n = 2 always does. x * 2 of small integers is exact in float32.
_CRASH_CASE = """
import os
import signal

import jax
import numpy as np

import hloprobe


def _poke(x):
  if x.dtype == np.float32 and x.shape[0] == 2:
    os.kill(os.getpid(), signal.SIGSEGV)
  return np.asarray(x, np.float32)  # the reference passes float64


def _fn(x):
  y = jax.pure_callback(_poke, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
  return y * 2.0


def _inputs():
  return (np.arange(8, dtype=np.float32).reshape(4, 2),)


def crash_at_two():
  return hloprobe.Case("crash_at_two", "dies at n = 2", _fn, _inputs)
"""


# A case whose inputs differ on every call (unseeded numpy): a worker
# making its own would run other inputs than the reference's.
_UNSEEDED_CASE = """
import numpy as np

import hloprobe


def _inputs():
  rng = np.random.default_rng()
  return (
    rng.standard_normal((4, 64)).astype(np.float32),
    rng.standard_normal((64, 8)).astype(np.float32),
  )


def unseeded():
  return hloprobe.Case(
    "unseeded", "x @ w on fresh random inputs", lambda x, w: x @ w, _inputs,
    in_axes=(0, None),
  )
"""


def _worker_folders(root: str) -> list[str]:
  """Every worker's temporary folder under `root`, relative to it."""
  return sorted(
    os.path.relpath(os.path.join(d, name), root)
    for d, names, _ in os.walk(root)
    for name in names
    if name.startswith("hloprobe-worker-")
  )


class CrashTest(absltest.TestCase):
  def test_a_crash_running_a_config_is_its_failure_alone(self):
    folder = self.create_tempdir().full_path
    path = os.path.join(folder, "crash_case.py")
    with open(path, "w") as f:
      f.write(textwrap.dedent(_CRASH_CASE))
    spec = engine.SweepSpec(
      (f"{path}:crash_at_two",), (1, 2, 3), ("float32",), ("cpu",)
    )
    # On the module's warm workers; the config after the death gets a
    # fresh one, kept for the next test.
    one, two, three = _POOL.run(spec)
    self.assertFalse(two.ok)
    self.assertEqual(two.failure.stage, "run")
    self.assertRegex(
      two.failure.error,
      r"^case 'crash_at_two': worker process was killed by SIGSEGV; last",
    )
    # Before and after it (the next on a fresh worker) all is well: row 0
    # is [0, 1] * 2 = [0, 2], exactly.
    for r in (one, three):
      self.assertTrue(r.ok, r.failure)
      stats = r.execution.stats
      self.assertEqual(stats.row0_values.tolist(), [0.0, 2.0])
      self.assertEqual(stats.max_abs, 0.0)


@pytest.mark.cpu_numerics
class InputsTest(absltest.TestCase):
  def test_the_worker_runs_on_the_references_inputs(self):
    path = self.create_tempfile("unseeded.py", _UNSEEDED_CASE).full_path
    spec = engine.SweepSpec((f"{path}:unseeded",), (2,), ("float32",), ("cpu",))
    (r,) = _POOL.run(spec)
    self.assertTrue(r.ok, r.failure)
    # K = 64 float32 products against float64: |err| <= gamma_64 |x||w|,
    # about 4e-6 relative; other inputs would be off by O(1).
    self.assertLess(r.execution.stats.max_rel, 1e-4)

  def test_a_record_reusing_a_builtin_name_is_compiled_as_given(self):
    x = np.full((4, 8), 0.5, np.float32)
    w = np.full((8, 3), 0.25, np.float32)
    mine = cases.Case(
      "seed_mlp",
      "not the shipped one",
      lambda x, w: jnp.tanh(x @ w),
      lambda: (x, w),
      in_axes=(0, None),
    )
    spec = engine.SweepSpec((mine,), (1,), ("float32",), ("cpu",))
    (r,) = _POOL.run(spec)
    self.assertTrue(r.ok, r.failure)
    self.assertLen(r.compilation.fates, 1)  # the seed MLP has 4 dot sites
    # tanh(8 * 0.5 * 0.25) = tanh(1), from numpy; XLA's tanh is within
    # 1e-6 of it under AVX, AVX2 and AVX-512 (make test-isa).
    np.testing.assert_allclose(
      r.execution.stats.row0_values, np.tanh(np.ones(3)), rtol=1e-6
    )


class InputsOnceTest(absltest.TestCase):
  def test_a_case_found_here_only_makes_its_inputs_once(self):
    x = np.full((4, 8), 0.5, np.float32)
    w = np.full((8, 3), 0.25, np.float32)
    calls = []

    def counted():
      calls.append(len(calls))
      return x, w

    mine = cases.Case(
      "counted", "x @ w", lambda x, w: x @ w, counted, in_axes=(0, None)
    )
    self.assertFalse(cases.resolvable_elsewhere(mine.name, mine))
    folder = self.create_tempdir().full_path
    spec = engine.SweepSpec(
      (mine,), (1, 2), ("float32",), ("cpu",), cache_dir=folder
    )
    results = _POOL.run(spec)
    self.assertTrue(all(r.ok for r in results), [r.failure for r in results])
    # sizes checked, fingerprint, references and both compiles: one call
    self.assertEqual(calls, [0])


class JobsAndRetireTest(absltest.TestCase):
  """One sweep at --jobs=1 and again at --jobs=2 (a lane per flag set) on a
  pool that then runs the baseline alone, as explain's sweep and a fix try
  share one: the sweeps are run once here, the tests read them."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    folder = tempfile.mkdtemp(prefix="hloprobe-pool-test-")
    cls.addClassCleanup(shutil.rmtree, folder, ignore_errors=True)
    # The A100 as a config file: the plan reads it once, a worker gets the
    # Target record whole.
    a100 = os.path.join(folder, "my_a100.txtpb")
    with open(a100, "w") as f:
      f.write(targets.BUILTIN_TARGETS["a100"].config_text)
    nofm = Experiment.parse("nofm:--xla_cpu_enable_fast_math=false")
    reads = mock.patch.object(
      targets, "load_target_config", wraps=targets.load_target_config
    )
    with reads as load:
      # One size (results' order over several: module_case_story_test's
      # MixedSweepTest); two flag sets on two targets.
      spec = engine.SweepSpec(
        ("seed_mlp",), (2,), ("float32",), ("cpu", a100), experiments=(nofm,)
      )
      spec = engine.plan_sweep(spec)  # read here, once for both sweeps
      cls.one = _POOL.run(spec)
      cls.tmp = tmp = os.path.join(folder, "tmp")
      os.mkdir(tmp)
      cls.seen = seen = set()
      watch = lambda _: seen.update(_worker_folders(tmp))
      with mock.patch.object(tempfile, "tempdir", tmp):
        with worker.WorkerPool() as pool:
          keys = lambda *pairs: sorted(pool._key(f, lane) for f, lane in pairs)
          cls.two = engine.run_sweep(
            dataclasses.replace(spec, jobs=2), watch, None, pool
          )
          cls.started = pool.started
          # Then the baseline alone (two lanes): it ends the experiment's
          # worker; the baseline's (whose kept compiles the invariance
          # answer reads) and a case's loader (a negative lane) are kept.
          pool.start("", -1)
          cls.workers = (
            sorted(pool._workers),
            keys(("", -1), ("", 0), (nofm.flags_text, 0)),
          )
          gone = [pool._workers[pool._key(nofm.flags_text, 0)]]
          cls.alone = engine.run_sweep(
            dataclasses.replace(spec, jobs=2, experiments=()), pool=pool
          )
          cls.gone_alive = any(w.alive for w in gone)
          cls.workers_after = (
            sorted(pool._workers),
            keys(("", -1), ("", 0), ("", 1)),
          )
    cls.reads = load.call_count
    cls.left = os.listdir(tmp)

  def test_jobs_change_nothing_and_each_flag_set_has_one_worker(self):
    self.assertEqual(self.reads, 1)
    two = self.two
    self.assertTrue(all(r.ok for r in two), [r.failure for r in two])
    self.assertEqual(
      [(r.config.experiment, r.config.target.name, r.config.n) for r in two],
      [(e, t, 2) for e in ("baseline", "nofm") for t in ("cpu", "my_a100")],
    )
    self.assertEqual(
      testutil.configs_json(self.one), testutil.configs_json(two)
    )
    # Two flag sets on two jobs: one worker each, none inside another (an
    # experiment is no nested sweep with a pool of its own).
    self.assertEqual(self.started, 2)
    self.assertLen(self.seen, 2)
    self.assertTrue(all(os.sep not in f for f in self.seen), self.seen)
    self.assertEqual(self.left, [])

  def test_a_sweep_ends_the_workers_of_flags_an_earlier_one_left(self):
    got, want = self.workers
    self.assertEqual(got, want)
    self.assertTrue(all(r.ok for r in self.alone))
    self.assertFalse(self.gone_alive)
    got, want = self.workers_after
    self.assertEqual(got, want)


class RetireTest(absltest.TestCase):
  def test_a_worker_answering_a_call_is_ended_after_it(self):
    # explain's batch-invariance answer runs beside its fix tries, whose
    # sweeps retire other lanes: a call in flight keeps its worker until
    # it has its reply (the call's lock held here stands for the call).
    with worker.WorkerPool() as pool:
      pool.start("", 1)
      busy = pool._busy.setdefault(pool._key("", 1), threading.Lock())
      gone = pool._workers[pool._key("", 1)]
      with busy:
        retiring = threading.Thread(target=pool.retire, args=([("", 0)],))
        retiring.start()
        retiring.join(1.0)
        self.assertTrue(retiring.is_alive())  # waiting for the call
        self.assertTrue(gone.alive)
      retiring.join(30)
      self.assertFalse(retiring.is_alive())
      self.assertFalse(gone.alive)
      self.assertNotIn(pool._key("", 1), pool._workers)

  def test_an_interrupted_retire_leaves_no_worker_behind(self):
    # retire waits for a call in flight; an interrupt meanwhile must not
    # leave the workers it took out of the pool running (`close` no
    # longer sees them).
    script = textwrap.dedent(
      """
      import os, signal, threading
      from hloprobe.runtime import pool as worker
      pool = worker.WorkerPool()
      pool.start("", 1)
      key = pool._key("", 1)
      w = pool._workers[key]
      busy = pool._busy.setdefault(key, threading.Lock())
      busy.acquire()  # a call in flight
      threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
      try:
        pool.retire([("", 0)])
      except KeyboardInterrupt:
        print("interrupted")
      pool.close(kill=True)
      print(w.alive, os.path.exists(w.tmp))
      """
    )
    self.assertEqual(_printed(self, script), ["interrupted", "False", "False"])


class SpawnTest(absltest.TestCase):
  def test_a_worker_outlives_the_thread_that_started_it(self):
    # Linux sends PR_SET_PDEATHSIG when the thread that forked the worker
    # ends: started from a short-lived thread (a lane's, a rows
    # request's), it was SIGKILLed then, and the next call failed.
    with worker.WorkerPool() as pool:
      first = threading.Thread(
        target=pool.call, args=(serve.CheckXlaFlagsRequest(),)
      )
      first.start()
      first.join()
      w = pool._workers[pool._key("", 0)]
      time.sleep(1.0)  # the signal came within milliseconds
      self.assertTrue(w.alive, w.proc.returncode)
      pool.call(serve.CheckXlaFlagsRequest())
      self.assertIs(pool._workers[pool._key("", 0)], w)
      self.assertEqual(pool.started, 1)

  def test_a_thread_uses_the_pool_after_the_main_thread_returned(self):
    # A program whose main thread returns while another thread still
    # calls (hloprobe's Python API from a thread): the worker starts and
    # answers. (A spawning thread of concurrent.futures was ended as the
    # main thread returned: "cannot schedule new futures after
    # interpreter shutdown".)
    script = textwrap.dedent(
      """
      import threading, time
      from hloprobe.runtime import pool, serve
      def later():
        time.sleep(0.5)
        with pool.WorkerPool() as p:
          p.call(serve.CheckXlaFlagsRequest())
          p.call(serve.CheckXlaFlagsRequest())
          print("answered", p.started, flush=True)
      threading.Thread(target=later).start()
      """
    )
    self.assertEqual(_printed(self, script), ["answered", "1"])


def _printed(test: absltest.TestCase, script: str) -> list[str]:
  """The words `script` printed, run by a Python of its own; `test` fails
  where it exits non-zero."""
  done = subprocess.run(
    [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
  )
  test.assertEqual(done.returncode, 0, done.stderr[-2000:])
  return done.stdout.split()


class DieWithParentTest(absltest.TestCase):
  def test_a_worker_ends_with_its_parent_process_not_its_thread(self):
    # A worker (here `serve._die_with_parent` alone, busy sleeping, its
    # stdin not a pipe that would close) started from a thread that ends:
    # alive while its parent process lives, ended within seconds of the
    # parent's death (Linux's PR_SET_PDEATHSIG, used before, fires at the
    # thread's end instead).
    child = (
      "import os, time; from hloprobe.runtime import serve; "
      "serve._die_with_parent(os.getppid()); print('ready', flush=True); "
      "time.sleep(120)"
    )
    script = textwrap.dedent(
      f"""
      import os, subprocess, sys, threading
      def start():  # ends once the worker watches its parent
        p = subprocess.Popen([sys.executable, "-c", {child!r}],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        print(p.pid, p.stdout.readline().decode().strip(), flush=True)
      t = threading.Thread(target=start)
      t.start()
      t.join()
      sys.stdin.readline()
      os._exit(0)
      """
    )
    parent = testutil.python_c(self, script, stdin=subprocess.PIPE)
    pid, ready = parent.stdout.readline().split()
    pid = int(pid)
    self.addCleanup(lambda: testutil.process_running(pid) and os.kill(pid, 9))
    self.assertEqual(ready, "ready")
    time.sleep(1.0)  # its starting thread has ended
    self.assertTrue(testutil.process_running(pid))
    parent.stdin.write("\n")
    parent.stdin.close()
    self.assertEqual(parent.wait(30), 0)
    self.assertTrue(testutil.process_ends(pid, 20))


if __name__ == "__main__":
  absltest.main()
