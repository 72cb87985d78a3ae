"""One worker process: start it, send it a request, read why it died.

See `pool` for why work runs in workers, and `serve` for the worker's
side. A `Worker` is made in two steps so an interrupt leaves nothing
behind; its death becomes one `WorkerError` line naming the signal and the
last lines XLA printed, or one `XlaFlagsError` naming the flag XLA
rejected.

Private in intent: use the package, `hloprobe.runtime`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pickle
import re
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

from hloprobe.errors import XlaFlagsError
from hloprobe.runtime.forked import (
  NOT_FORKED,
  ONE_BLAS_THREAD,
  ForkedProcess,
  Forker,
)
from hloprobe.runtime.serve import HEADER, STAGE_FILE_ENV, Request, main_code
from hloprobe.runtime.worker_error import WorkerError
from hloprobe.startup import filter_startup_noise

__all__ = [
  "Worker",
  "WorkerError",
  "default_max_worker_mb",
  "make_owned_folder",
  "remove_stale_worker_folders",
  "resident_mb",
  "unpickled_reply",
  "worker_folder_name",
]

_UNKNOWN_FLAG_RE = re.compile(r"Unknown flag in XLA_FLAGS: (\S+)")
# A flag XLA knows with a value it cannot read (command_line_flags.cc).
_BAD_VALUE_RE = re.compile(
  r"Couldn't interpret value (.*) for flag (\S+?)\.?$", re.M
)
# XLA_FLAGS that does not start with "--" is read as a file of flags
# (xla/parse_flags_from_env.cc, SetArgvFromEnv: "Could not open file ...
# to read flags for environment variable", then LOG(FATAL)).
_FLAGS_FILE_RE = re.compile(
  r'Could not open file "(.*)" to read flags for environment variable'
)
_LAST_LINES = 3
# How often a call waiting on a worker with a memory bound reads its
# resident size (`Worker.max_mb`), in seconds.
_MEMORY_POLL_S = 0.25


def default_max_worker_mb() -> int:
  """A worker's default memory bound: a quarter of this machine's memory
  (`os.sysconf`: SC_PHYS_PAGES x SC_PAGE_SIZE), in MiB; 4096 where the
  machine does not say."""
  try:
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
  except (ValueError, OSError, AttributeError):
    return 4096
  return max(64, total // 4 // (1 << 20))


def resident_mb(pid: int) -> float | None:
  """The resident memory of process `pid` in MiB (Linux /proc/PID/statm,
  its second field, resident pages), or None where it cannot be read (the
  process ended; not Linux)."""
  try:
    with open(f"/proc/{pid}/statm", "rb") as f:
      pages = int(f.read().split()[1])
  except (OSError, ValueError, IndexError):
    return None
  return pages * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def _signal_name(returncode: int) -> str:
  try:
    return signal.Signals(-returncode).name
  except ValueError:
    return f"signal {-returncode}"


def _rejected_flag(stderr: str, xla_flags: str) -> str | None:
  """One line on the flag XLA rejected, or None when it rejected none."""
  m = _UNKNOWN_FLAG_RE.search(stderr)
  if m:
    return f"XLA rejected flag {m.group(1)} (XLA_FLAGS={xla_flags!r})"
  m = _BAD_VALUE_RE.search(stderr)
  if m:
    return (
      f"XLA rejected flag --{m.group(2)}: cannot read the value {m.group(1)!r} "
      f"(XLA_FLAGS={xla_flags!r})"
    )
  m = _FLAGS_FILE_RE.search(stderr)
  if m:
    return (
      f"XLA read XLA_FLAGS={xla_flags!r} as the name of a flags file (it "
      "does not start with '--') and could not open it; write flags as "
      "--name=value"
    )
  return None


def _explain_death(returncode: int, stderr: str) -> str:
  """One line: the signal or exit status and the last lines printed."""
  lines = [
    line.strip()
    for line in filter_startup_noise(stderr).splitlines()
    if line.strip()
  ]
  last = " | ".join(lines[-_LAST_LINES:]) if lines else "it printed nothing"
  how = (
    f"was killed by {_signal_name(returncode)}"
    if returncode < 0
    else f"exited with status {returncode}"
  )
  return f"worker process {how}; last lines: {last}"


def _jax_platforms() -> str | None:
  """The platforms this process's JAX uses (None: JAX's own choice)."""
  if "jax" not in sys.modules:
    return os.environ.get("JAX_PLATFORMS")
  return sys.modules["jax"].config.jax_platforms


# numpy's BLAS in a worker runs one thread unless the user set otherwise:
# the numpy executor's float64 gemms (`execute.contraction`, the made
# checks and the float64 reference) share the machine with the other
# workers and XLA's own threads, and OpenBLAS's threads spin between
# calls. Issue 37, gpt2_1 explain (cpu, a100 x n = 1, 2, 8 x bfloat16,
# float32; 2 cores at load 10): the executor's 18 runs 17.98 -> 5.46
# CPU-s (its dots 15.6 -> 4.0; 96 stacked 128x64x128 attention gemms 0.10
# -> 0.009 CPU-s), their wall 49 -> 31 s, the explain JSON equal.
# OpenBLAS threads a gemm by blocks of the output, every element's sum
# over K made by one thread, but not always in the same K blocks: where
# the K left after blocks of GEMM_Q is between GEMM_Q and 2 GEMM_Q, one
# thread (driver/level3/level3.c) halves it rounded up to GEMM_UNROLL_M
# and several (level3_thread.c) do not, so float64 sums differ in their
# last bits. Measured (OpenBLAS 0.3.34, Haswell kernels: GEMM_Q 256,
# GEMM_UNROLL_M 4; a 64 x K x 96 gemm at 1 and 2 threads): every K from
# 257 on whose residue mod 8 is 1 to 6, in about half the elements (2e-13
# relative at most, K = 300). GPT-2's K (64, 128, 768, 3072) give the
# same bits, and decode's 257-token attention is too small a gemm to thread
# (`tests/runtime/process_test.py` checks such shapes). Before, the other
# K's values followed the machine's core count; now they are one
# thread's on every machine. Not every built-in case's gemm is cut
# alike: made in a worker, tf_127577's, tm_mm's and jax_22557's executor
# runs moved in their last bits against the main process's (check40,
# 2026-12-06), so a built-in case's are made in the main process
# (`engine._Sweep._compiled`).
# OPENBLAS_NUM_THREADS is read when numpy loads OpenBLAS, as the worker
# starts (XLA's own thread pools do not read it). The setting is
# `forked.ONE_BLAS_THREAD`, there because the server of forked workers,
# which loads numpy for all of them, starts with it too.


# glibc malloc's settings (its MALLOC_*_ environment variables, read as
# the process starts: glibc's malloc/arena.c tunables) that keep the
# memory a process frees for its next allocation: one arena (a thread's
# own arena gives memory above its heap's 64 MiB from mmap, whatever
# MALLOC_MMAP_MAX_ says), no block from mmap, no trim of the heap's top.
# Issue 37: XLA:CPU takes each run's buffers above glibc's 32 MiB mmap
# bound fresh from the kernel and gives them back after it, so every page
# was faulted in and zeroed again: decode's n = 64 program faulted 66,000
# pages a run (0.26 s, half of it system time), and its explain's two
# compile workers 2.1 M pages (17.6 s of system time, 7.6 s kept;
# 2026-12-07, jaxlib 0.12.0.1, glibc 2.36). Kept, a run faults none once
# the heap has grown to its buffers (a 64 MiB output: from the 5th run
# on jaxlib 0.12.0.1, the 9th on 0.10.2; every run faults it without),
# and the workers' peak resident memory was unchanged (2.13 and 1.57 GB
# against 2.11 and 1.60). Given to the sweep's compile lanes only
# (`Worker.kept_heap`; and so to what they start, ptxas; not to a Ray
# cluster's lanes): a case's worker, whose allocations vary more in
# size, grew from 2.3 to 2.9 GB so. A variable already set is kept.
KEPT_HEAP = {
  "MALLOC_ARENA_MAX": "1",
  "MALLOC_MMAP_MAX_": "0",
  "MALLOC_TRIM_THRESHOLD_": str(1 << 40),
}


def _worker_env(
  xla_flags: str, tmp: str, platforms: str | None, kept_heap: bool = False
) -> dict:
  """A worker's environment: this one's, with its own XLA_FLAGS, TMPDIR,
  stage file, JAX platforms and (unless set) no GPU preallocation, one
  BLAS thread (`forked.ONE_BLAS_THREAD`) and, with `kept_heap`,
  `KEPT_HEAP`."""
  env = dict(os.environ, XLA_FLAGS=xla_flags, TMPDIR=tmp)
  env[STAGE_FILE_ENV] = os.path.join(tmp, "stage")
  env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
  for name, value in {
    **ONE_BLAS_THREAD,
    **(KEPT_HEAP if kept_heap else {}),
  }.items():
    env.setdefault(name, value)
  if platforms is None:  # the worker starts the same backends as this one
    platforms = _jax_platforms()
  if platforms:
    env["JAX_PLATFORMS"] = platforms
  else:
    env.pop("JAX_PLATFORMS", None)
  return env


class Worker:
  """One persistent worker process under one XLA_FLAGS.

  Made in two steps so an interrupt leaves nothing behind: the object
  (its folder's name, no resources), which the pool notes, then `start`,
  which makes the folder and the process; `close` removes whatever
  `start` made, wherever it was interrupted.

  Args:
    xla_flags, platforms, preload: its XLA_FLAGS, JAX_PLATFORMS and the
      modules it imports as it starts.
    max_mb: the resident memory (MiB) the process may reach while a call
      waits on it, read every `_MEMORY_POLL_S` (`resident_mb`); past it
      the process is killed and the call raises `WorkerError` ("worker
      went over --max_worker_mb=..."), before the kernel's out-of-memory
      killer picks a process of its own choosing. None: no bound.
    kept_heap: start it with glibc malloc's `KEPT_HEAP` settings.
    forker: start it as a fork of this `forked.Forker`'s server (its
      imports made there once), not as `python -c`; where the fork cannot
      take its environment (`forked.NOT_FORKED`), its first call starts
      it as `python -c` and is sent again. None: `python -c`.
  """

  def __init__(
    self,
    xla_flags: str,
    platforms: str | None = None,
    preload=(),
    max_mb: int | None = None,
    kept_heap: bool = False,
    forker: Forker | None = None,
  ):
    self.xla_flags, self._platforms, self._preload = (
      xla_flags,
      platforms,
      preload,
    )
    self.max_mb, self.kept_heap = max_mb, kept_heap
    # Named before it exists (`tempfile.mkdtemp` makes it first).
    self.tmp = worker_folder_name()
    self.log_path = os.path.join(self.tmp, "stderr.log")
    self._stage_path = os.path.join(self.tmp, "stage")
    # Where the current call's output starts in the log (see `_death`).
    self._log_start = 0
    self._forker = forker
    self.proc: subprocess.Popen | ForkedProcess | None = None

  def start(self) -> None:
    """Makes its folder (0700), notes this process's pid in it (`OWNER_FILE`,
    for `remove_stale_worker_folders`) and starts its process, not
    waiting for it."""
    make_owned_folder(self.tmp)
    self._launch()

  def _launch(self) -> None:
    """Starts its process: forked (`forker`), else `python -c`."""
    env = _worker_env(self.xla_flags, self.tmp, self._platforms, self.kept_heap)
    argv = [str(os.getpid()), *self._preload]
    with open(self.log_path, "wb") as log:
      if self._forker is not None:
        self.proc = self._forker.start(["-c", *argv], env, log.fileno())
        return
      self.proc = subprocess.Popen(
        [sys.executable, "-c", main_code(), *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        env=env,
      )

  def call(self, request: Request, timeout_s: float):
    """Sends one request; returns its result or raises what it raised."""
    return unpickled_reply(self.call_pickled(pickle.dumps(request), timeout_s))

  def call_pickled(self, payload: bytes, timeout_s: float) -> bytes:
    """Sends one pickled request; returns the reply's pickled (status,
    value) unread, so a go-between (`ray_pool`) need not import what it
    names. Raises `WorkerError` or `XlaFlagsError` when the worker dies."""
    self._new_call()
    try:
      self.proc.stdin.write(HEADER.pack(len(payload)) + payload)
      self.proc.stdin.flush()
      return self._read_frame(timeout_s)
    except (BrokenPipeError, EOFError, ValueError, OSError):
      # ValueError/OSError: the pool closed the pipes (an interrupt).
      if self._not_forked():
        return self.call_pickled(payload, timeout_s)
      raise self._death() from None

  def _not_forked(self) -> bool:
    """Whether its process was a fork that could not take its environment
    (`forked.NOT_FORKED`); if so it is started again as `python -c`."""
    if not isinstance(self.proc, ForkedProcess):
      return False
    try:  # a fork that cannot take it exits at once (`forked._child`)
      if self.proc.wait(_NOT_FORKED_WAIT_S) != NOT_FORKED:
        return False
    except subprocess.TimeoutExpired:  # still running: not that
      return False
    for stream in (self.proc.stdin, self.proc.stdout):
      _close(stream)
    self._forker = None
    self._launch()
    return True

  def _new_call(self) -> None:
    """Forgets the last call's stage and output: a death names this one's."""
    with contextlib.suppress(FileNotFoundError):
      os.unlink(self._stage_path)
    try:
      self._log_start = os.path.getsize(self.log_path)
    except OSError:
      self._log_start = 0

  def _read_frame(self, timeout_s: float) -> bytes:
    deadline = time.monotonic() + timeout_s
    header = self._read_exact(HEADER.size, deadline)
    return self._read_exact(HEADER.unpack(header)[0], deadline)

  def _read_exact(self, size: int, deadline: float) -> bytes:
    fd, chunks, left = self.proc.stdout.fileno(), [], size
    while left:
      wait = deadline - time.monotonic()
      if self.max_mb is not None:
        wait = min(wait, _MEMORY_POLL_S)
      ready, _, _ = select.select([fd], [], [], max(wait, 0.0))
      if not ready and time.monotonic() < deadline:
        self._check_memory()
        continue
      if not ready:
        stage = _read_tail(self._stage_path).strip() or None
        self.close(kill=True)
        raise WorkerError(
          f"worker timed out (XLA_FLAGS={self.xla_flags!r}); it was stopped",
          stage,
          timed_out=True,
        )
      chunk = os.read(fd, min(left, 1 << 20))
      if not chunk:
        raise EOFError
      chunks.append(chunk)
      left -= len(chunk)
    return b"".join(chunks)

  def _check_memory(self) -> None:
    """Kills the process and raises `WorkerError` when it is over
    `max_mb` (resident)."""
    if self.max_mb is None or self.proc is None:
      return
    mb = resident_mb(self.proc.pid)
    if mb is None or mb <= self.max_mb:
      return
    stage = _read_tail(self._stage_path).strip() or None
    self.close(kill=True)
    raise WorkerError(
      f"worker went over --max_worker_mb={self.max_mb} (resident "
      f"{mb:.0f} MiB, stage {stage or 'start'}); it was stopped: give more "
      "with --max_worker_mb, or sweep smaller batch sizes",
      stage,
    )

  def _death(self) -> WorkerError | XlaFlagsError:
    """Why it died: an `XlaFlagsError` when XLA rejected a flag, else a
    `WorkerError` naming the stage it noted last."""
    returncode = self.proc.wait()
    stage = _read_tail(self._stage_path).strip() or None
    text = _read_tail(self.log_path, start=self._log_start)
    # A crash inside `startup.captured_stderr` leaves its capture file.
    for path in sorted(glob.glob(os.path.join(self.tmp, "hloprobe-stderr-*"))):
      text += _read_tail(path)
    self.close()
    rejected = _rejected_flag(text, self.xla_flags)
    if rejected is not None:  # a flag, not the stage
      return XlaFlagsError(rejected)
    return WorkerError(_explain_death(returncode, text), stage)

  @property
  def alive(self) -> bool:
    return self.proc is not None and self.proc.poll() is None

  def close(self, kill: bool = False) -> None:
    """Ends the process and removes its folder.

    Args:
      kill: SIGKILL it at once (an interrupt: it may be mid-compile);
        otherwise close its stdin and give it 5 s to end.
    """
    if self.proc is not None:
      self._end(kill)
    # A process the worker started may still write there for a moment
    # (an interrupt reaches them all): removed again until it is gone.
    for _ in range(_REMOVE_TRIES):
      shutil.rmtree(self.tmp, ignore_errors=True)
      if not os.path.lexists(self.tmp):
        break
      time.sleep(0.05)

  def _end(self, kill: bool) -> None:
    if self.proc.poll() is None:
      if not kill:
        _close(self.proc.stdin)
      try:
        self.proc.wait(timeout=0 if kill else 5)
      except subprocess.TimeoutExpired:
        self.proc.kill()
        self.proc.wait()
    for stream in (self.proc.stdin, self.proc.stdout):
      _close(stream)


# How long a call whose pipe broke waits for its fork's exit status: one
# that could not take its environment has exited before reading it; one
# still running then died otherwise, or its pipes were closed by the pool
# (an interrupt), and its death is named as ever.
_NOT_FORKED_WAIT_S = 5


def _close(stream) -> None:
  """Closes one of a worker's pipes. Closing flushes what a call left
  unsent; to a process that has ended that raises BrokenPipeError, and
  the pipe is closed all the same (a fork ended `NOT_FORKED` before its
  first call was read: forked_test)."""
  if not stream.closed:
    with contextlib.suppress(OSError):
      stream.close()


# The file in a worker's folder that names the hloprobe process (its pid)
# that made it.
OWNER_FILE = "owner.pid"
_WORKER_DIR_RE = re.compile(r"hloprobe-worker-[0-9a-f]{16}")
# Seconds a worker folder without its owner file is left alone (one being
# made by another hloprobe right now).
_OWNERLESS_GRACE_S = 600.0
_REMOVE_TRIES = 10


def worker_folder_name() -> str:
  """A new worker folder's path (not made): `hloprobe-worker-` and 16 hex
  digits in TMPDIR, the names `remove_stale_worker_folders` looks at."""
  return os.path.join(
    tempfile.gettempdir(), f"hloprobe-worker-{secrets.token_hex(8)}"
  )


def make_owned_folder(path: str) -> None:
  """Makes folder `path` (0700) with this process's pid in it
  (`OWNER_FILE`), so that `remove_stale_worker_folders` removes it once
  this process is gone."""
  os.mkdir(path, 0o700)
  with open(os.path.join(path, OWNER_FILE), "w") as f:
    f.write(str(os.getpid()))


def remove_stale_worker_folders(tmpdir: str | None = None) -> list[str]:
  """Removes the `hloprobe-worker-*` folders an interrupted or killed
  hloprobe left in `tmpdir` (default `tempfile.gettempdir()`): those of
  this user whose owner process (`OWNER_FILE`) is gone, or that have no
  owner file and are older than `_OWNERLESS_GRACE_S`. Folders of live
  hloprobe processes, of other users and links are left alone.

  Returns:
    The paths removed.
  """
  tmpdir = tmpdir or tempfile.gettempdir()
  removed = []
  try:
    names = os.listdir(tmpdir)
  except OSError:
    return removed
  for name in names:
    if not _WORKER_DIR_RE.fullmatch(name):
      continue
    path = os.path.join(tmpdir, name)
    try:
      st = os.lstat(path)
    except OSError:
      continue
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
      continue
    if not _owner_gone(path, st.st_mtime):
      continue
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
      removed.append(path)
  return removed


def _owner_gone(path: str, mtime: float) -> bool:
  """Whether a worker folder's owner process is gone."""
  try:
    with open(os.path.join(path, OWNER_FILE)) as f:
      pid = int(f.read(32))
  except (OSError, ValueError):
    return time.time() - mtime > _OWNERLESS_GRACE_S
  if pid == os.getpid():
    return False
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return True
  except OSError:  # alive, another user's
    return False
  return False


def unpickled_reply(frame: bytes):
  """A worker's reply frame read: its value, or what it raised, raised.

  Args:
    frame: the pickled ("ok" or "raise", value) a worker sent.

  Raises:
    BaseException: what the request raised in the worker, unpickled.
  """
  status, value = pickle.loads(frame)
  if status == "raise":
    raise value
  return value


def _read_tail(path: str, size: int = 16384, start: int = 0) -> str:
  """The last `size` bytes of the file from byte `start` on, as text
  ("" when it cannot be read)."""
  try:
    with open(path, "rb") as f:
      f.seek(max(start, os.path.getsize(path) - size))
      return f.read().decode("utf-8", errors="replace")
  except OSError:
    return ""
