"""Worker pools under interrupts, and what a worker's failure reports."""

from __future__ import annotations

import gc
import json
import os
import pickle
import platform
import secrets
import subprocess
import sys
import tempfile
from unittest import mock

import pytest
import testutil
from absl.testing import absltest

from hloprobe.runtime import pool as worker
from hloprobe.runtime import process, serve

# Worker processes, started and interrupted.
pytestmark = pytest.mark.compiles


class InterruptedStartTest(absltest.TestCase):
  # An interrupt as `Popen()` returns loses the Popen object: Python warns
  # that its process still runs; it ends as its stdin closes, and it is
  # ended with this process (`serve._die_with_parent`) in any case.
  @pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
  )
  def test_no_folder_left_wherever_start_is_interrupted(self):
    tmp = self.create_tempdir().full_path

    def start():
      with worker.WorkerPool() as pool:
        pool.start("", 0)

    k = 1
    # gc.collect() below sees only what this test makes: the objects of the
    # tests run before it in this process (a big heap under pytest-xdist)
    # are frozen out of collection, which made each collection seconds.
    gc.freeze()
    self.addCleanup(gc.unfreeze)
    with mock.patch.object(tempfile, "tempdir", tmp):
      # At each point of worker.py in turn: between making the folder,
      # starting the process and noting the worker, and while closing.
      while testutil.interrupted_at(
        k, start, files=(worker.__file__, process.__file__)
      ):
        gc.collect()  # the pool, if an interrupt beat its __exit__
        self.assertEqual(os.listdir(tmp), [], f"interrupted at event {k}")
        k += 1
    self.assertGreater(k, 20)
    self.assertEqual(os.listdir(tmp), [])


_CASES = """
import os
import numpy as np
import hloprobe

IN_WORKER = bool(os.environ.get("HLOPROBE_WORKER_STAGE_FILE"))


def _case(name, action):
  def fn(x, w):
    if IN_WORKER:
      action()
    return x @ w

  return hloprobe.Case(
    name=name,
    description=name,
    fn=fn,
    make_inputs=lambda: (np.ones((2, 4), np.float32), np.ones((4, 2), np.float32)),
    in_axes=(0, None),
  )


def chatty():
  return _case("chatty", lambda: print("chatter of the first case", flush=True))


def aborts():
  return _case("aborts", os.abort)
"""


class FailureMessageTest(absltest.TestCase):
  def _sweep(self, *factories: str) -> list[dict]:
    cases = self.create_tempfile("cases.py", _CASES).full_path
    # In this process: the cases act in workers only (IN_WORKER).
    proc = testutil.run_hloprobe_here(
      "sweep",
      "--case=" + ",".join(f"{cases}:{f}" for f in factories),
      "--batch_sizes=1",
      "--precisions=float32",
      "--nocache",
      "--jobs=1",
      "--format=json",
      timeout_s=600,
    )
    self.assertEqual(proc.returncode, 1, proc.stderr)
    return json.loads(proc.stdout)["configs"]

  def test_death_names_only_the_dying_calls_output(self):
    chatty, aborts = self._sweep("chatty", "aborts")
    self.assertEqual(chatty["status"], "ok")
    self.assertEqual(aborts["status"], "failed")
    # Prefixed with the case and the call it was in (the guarded case
    # worker, issue 27).
    self.assertIn(
      "worker process was killed by SIGABRT; last lines: ", aborts["error"]
    )
    self.assertStartsWith(aborts["error"], "case 'aborts' ")
    self.assertNotIn("chatter", aborts["error"])

  def test_exception_pickle_cannot_rebuild_is_named(self):
    # What a worker sends back for an exception pickle cannot rebuild.
    read, write = os.pipe()
    try:
      serve._reply(
        write, "raise", _TwoArgError("in", "worker"), worker.WorkerError
      )
      os.close(write)
      frame = serve._read_frame(read)
    finally:
      os.close(read)
    status, error = pickle.loads(frame)
    self.assertEqual(status, "raise")
    self.assertIsInstance(error, worker.WorkerError)
    self.assertIn("_TwoArgError: in/worker", str(error))
    self.assertNotIn("missing 1 required positional", str(error))


class _TwoArgError(Exception):
  def __init__(self, a, b):  # pickle rebuilds it with one argument
    super().__init__(f"{a}/{b}")


class StaleWorkerFolderTest(absltest.TestCase):
  """`hloprobe-worker-*` folders an interrupted or killed hloprobe left in
  TMPDIR are removed when the next pool starts (issue 41)."""

  def _folder(self, tmpdir: str, owner: str | None) -> str:
    path = os.path.join(tmpdir, f"hloprobe-worker-{secrets.token_hex(8)}")
    os.mkdir(path, 0o700)
    with open(os.path.join(path, "stderr.log"), "w") as f:
      f.write("left behind")
    if owner is not None:
      with open(os.path.join(path, process.OWNER_FILE), "w") as f:
        f.write(owner)
    return path

  def test_dead_owners_folders_go_live_ones_stay(self):
    tmpdir = self.create_tempdir().full_path
    # A pid past the kernel's pid_max (4194304 at most): never alive.
    dead = self._folder(tmpdir, "99999999")
    mine = self._folder(tmpdir, str(os.getpid()))
    parent = self._folder(tmpdir, str(os.getppid()))
    fresh_ownerless = self._folder(tmpdir, None)
    old_ownerless = self._folder(tmpdir, None)
    os.utime(old_ownerless, (0, 0))
    other = os.path.join(tmpdir, "hloprobe-workers-notes")
    os.mkdir(other)
    removed = process.remove_stale_worker_folders(tmpdir)
    self.assertCountEqual(removed, [dead, old_ownerless])
    for path in (mine, parent, fresh_ownerless, other):
      self.assertTrue(os.path.isdir(path), path)
    self.assertFalse(os.path.lexists(dead))

  def test_links_are_left_alone(self):
    tmpdir = self.create_tempdir().full_path
    target = self.create_tempdir().full_path
    link = os.path.join(tmpdir, "hloprobe-worker-0123456789abcdef")
    os.symlink(target, link)
    self.assertEqual(process.remove_stale_worker_folders(tmpdir), [])
    self.assertTrue(os.path.isdir(target))


# The executor's contractions at the shapes of issue 37's GPT-2 stack
# (a stacked attention gemm, a projection, a split-K part), their bytes'
# SHA-256, printed by a fresh process whose OpenBLAS thread count is set.
_CONTRACTIONS = """
import hashlib
import numpy as np
from hloprobe.execute import contraction
g = np.random.default_rng(37)
dims = contraction.DotDims
out = hashlib.sha256()
for lhs, rhs, d, algorithm in [
  ((24, 128, 64), (24, 64, 128), dims((0,), (0,), (2,), (1,)), "F32_F32_F32"),
  ((256, 768), (768, 2304), dims((), (), (1,), (0,)), "F64_F64_F64"),
  ((256, 2, 384), (2, 384, 768), dims((1,), (0,), (2,), (1,)), "TF32_TF32_F32"),
]:
  a = g.standard_normal(lhs).astype(np.float32)
  b = g.standard_normal(rhs).astype(np.float32)
  out.update(contraction.contract(a, b, d, algorithm).tobytes())
print(out.hexdigest())
"""


class BlasThreadsTest(absltest.TestCase):
  def test_worker_env_has_one_blas_thread_unless_set(self):
    with mock.patch.dict(os.environ):
      os.environ.pop("OPENBLAS_NUM_THREADS", None)
      env = process._worker_env("", tempfile.gettempdir(), None)
      self.assertEqual(env["OPENBLAS_NUM_THREADS"], "1")
      os.environ["OPENBLAS_NUM_THREADS"] = "3"
      env = process._worker_env("", tempfile.gettempdir(), None)
      self.assertEqual(env["OPENBLAS_NUM_THREADS"], "3")

  def test_contractions_are_the_same_bits_at_one_and_two_threads(self):
    # The gemms are large enough that OpenBLAS threads them at two
    # (M*N*K above its 4 x 65536 threshold, interface/gemm.c); their K
    # (64, 768, 384) are cut in the same blocks at one and two threads,
    # as GPT-2's are (not every K is: process._ONE_BLAS_THREAD).
    digests = set()
    for threads in ("1", "2"):
      env = dict(os.environ, OPENBLAS_NUM_THREADS=threads)
      done = subprocess.run(
        [sys.executable, "-c", _CONTRACTIONS],
        env=env,
        capture_output=True,
        text=True,
        check=True,
      )
      digests.add(done.stdout.strip())
    self.assertLen(digests, 1)


# Faulted pages of the last 5 of 10 rounds of malloc, write and free of a
# 64 MiB block, above glibc's largest mmap threshold (32 MiB), as XLA:CPU
# takes a run's buffers: one line.
_FAULTS = """
import ctypes, resource
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
found = []
for _ in range(10):
  before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
  block = libc.malloc(64 << 20)
  ctypes.memset(block, 1, 64 << 20)
  libc.free(block)
  found.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(sum(found[5:]))
"""


@absltest.skipUnless(
  platform.libc_ver()[0] == "glibc", "the settings are glibc malloc's"
)
class KeptHeapTest(absltest.TestCase):
  """A sweep's compile lanes keep the memory they free (glibc malloc's
  `process.KEPT_HEAP`), so that XLA:CPU's runs do not fault their buffers
  in again (issue 37)."""

  def test_worker_env_has_the_settings_only_when_asked(self):
    with mock.patch.dict(os.environ):
      for name in process.KEPT_HEAP:
        os.environ.pop(name, None)
      plain = process._worker_env("", tempfile.gettempdir(), None)
      kept = process._worker_env("", tempfile.gettempdir(), None, True)
      self.assertFalse(set(process.KEPT_HEAP) & set(plain))
      self.assertEqual(kept["MALLOC_ARENA_MAX"], "1")
      self.assertEqual(kept["MALLOC_MMAP_MAX_"], "0")
      os.environ["MALLOC_ARENA_MAX"] = "4"  # the user's own wins
      kept = process._worker_env("", tempfile.gettempdir(), None, True)
      self.assertEqual(kept["MALLOC_ARENA_MAX"], "4")

  def test_the_pool_gives_them_to_lanes_not_to_a_case_worker(self):
    with worker.WorkerPool(kept_heap=True) as pool:
      pool.start("", 0)
      pool.start("", -1)  # engine.plan.CASE_LANE
      found = {}
      for (_, lane), w in pool._workers.items():
        with open(f"/proc/{w.proc.pid}/environ", "rb") as f:
          env = dict(
            item.split(b"=", 1) for item in f.read().split(b"\0") if item
          )
        found[lane] = env.get(b"MALLOC_MMAP_MAX_")
    self.assertEqual(found, {0: b"0", -1: os.environb.get(b"MALLOC_MMAP_MAX_")})

  def test_a_freed_block_is_not_faulted_in_again(self):
    # 64 MiB is 16,384 pages of 4 KiB: each round faults them all without
    # the settings (glibc 2.36 gives the block back to the kernel), none
    # with them.
    def faults(extra):
      env = {k: v for k, v in os.environ.items() if k not in process.KEPT_HEAP}
      done = subprocess.run(
        [sys.executable, "-c", _FAULTS],
        env=dict(env, **extra),
        capture_output=True,
        text=True,
        check=True,
      )
      return int(done.stdout.strip().splitlines()[-1])

    self.assertGreater(faults({}), 5 * 16_000)
    self.assertLess(faults(process.KEPT_HEAP), 1_000)


if __name__ == "__main__":
  absltest.main()
