"""Workers forked from a server that imported jax once (issue 37).

A worker started as `python -c` (`process.Worker`) imports jax and
hloprobe's stages before its first request: about 1.2 CPU-s each on the
2-core machine of issue 37's bench (jaxlib 0.12.0.1, Python 3.13,
2026-12-07), three times in a sweep (the case's worker and two compile
lanes) besides the main process's own, which alone kept one core busy for
the first 2.5 s of an explain. A `Forker` starts the standard library's
forkserver (`multiprocessing`'s "forkserver" context, one per process, as
the standard library keeps it) with the sweep's modules preloaded, and
each worker is a fork of it: the imports are made once, in a process of
their own, beside the main process's (`hloprobe.__main__` starts it
first). gpt2_1's explain took 6% less wall time so, decode's 7%
(`bench_scale`'s explain alone, three and two pairs back to back, the JSON
equal).

What differs between workers is applied by the fork itself, before
anything reads it (`_child`):
  - stdin, stdout and stderr: the worker's pipes and log, passed as file
    descriptors (`multiprocessing.reduction.DupFd`) and put at 0, 1 and 2;
    no signal blocked;
  - the environment, whole. XLA reads XLA_FLAGS as its first backend
    starts (xla/debug_options_flags.cc; after the fork: a fork given an
    unknown flag aborts as a started worker does, forked_test on jaxlib
    0.12.0.1 and 0.10.2), the CUDA
    plugin JAX_SKIP_CUDA_CONSTRAINTS_CHECK as it starts, Python's
    `tempfile` TMPDIR when first asked (its cache is cleared), and jax
    JAX_PLATFORMS when it is imported: set again with `jax.config.update`;
  - PYTHONPATH: a fork's `sys.path` is its client's (the standard
    library sets it so), and the entries it lacks are added
    (`_python_path`);
  - glibc malloc's `process.KEPT_HEAP` settings, read by glibc as a
    process starts: set with `mallopt` (M_ARENA_MAX, M_MMAP_MAX,
    M_TRIM_THRESHOLD, the same tunables).
A variable read as a process starts or as the server imported its
modules (`_READ_AT_START`: Python's, OpenBLAS's, jax's, glibc's) that
differs from the server's cannot be applied: the fork then ends at once
with `NOT_FORKED`, and the worker is started as `python -c` instead, its
first call sent again (`process.Worker`). The server starts with
`ONE_BLAS_THREAD` set, as every worker does.

Its parent is the server, not this process: it ends when the server
does (`serve._die_with_parent`), and the server when this process does
(the standard library's forkserver reads a pipe from its client until
it closes; each fork closes its own copy of the client's end,
`_without_client_pipe`). At exit this process kills the forks still
running (a pool left open), kills the server (it may still be importing)
and waits for it, so that the CPU of the server and of its workers counts
in this process's children's (`time`, `bench_scale`) as `python -c`
workers' does; a command that forked nothing pays the server's imports
so far in CPU, not in wall time. A worker's exit status comes from the
server (`multiprocessing.Process.exitcode`: a signal's negative number,
as `subprocess` gives it), read under one lock (`_STATUS_LOCK`).

The standard library prepares each fork as a spawned process, which
runs the main script again (`main_not_rerun`): a user's script that calls
hloprobe's Python API is not forked from.

Why not `multiprocessing.Pool` or `concurrent.futures`: a worker here is
one persistent process per (XLA_FLAGS, lane) serving pickled requests on
its own pipes (`serve`), whose death is explained from its stderr log;
only the start of the process is the forkserver's.

Private in intent: use the package, `hloprobe.runtime`.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence

from hloprobe.runtime import serve

# numpy's BLAS threads of a worker (`process.Worker`'s environment).
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1"}

__all__ = [
  "NOT_FORKED",
  "ONE_BLAS_THREAD",
  "ForkedProcess",
  "Forker",
  "end_server",
  "main_not_rerun",
]

# A fork's exit status where it cannot take a worker's environment.
NOT_FORKED = 75
# A forked worker's `multiprocessing` name.
_NAME = "hloprobe-worker"
# The standard library reads a fork's exit status from the server's pipe
# once, in whatever thread polls first (multiprocessing/popen_forkserver.py
# `poll`; `Process.start` polls every child of the process): two threads
# reading it at once made one status 255 (a review, 2026-12-07: 1 of 120
# SIGABRTs). Every start and status read of a fork is made under this
# lock, one for the process as the standard library's set of children is.
_STATUS_LOCK = threading.Lock()
# What `_child` applies itself.
_APPLIED = frozenset(
  {
    "PYTHONPATH",
    "XLA_FLAGS",
    "TMPDIR",
    serve.STAGE_FILE_ENV,
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "JAX_PLATFORMS",
    # Read as the CUDA plugin starts (jax_plugins/xla_cuda12 `initialize`,
    # jax 0.12.0.1 and 0.10.2), after the fork; `api.ship` sets it for the
    # workers.
    "JAX_SKIP_CUDA_CONSTRAINTS_CHECK",
    "MALLOC_ARENA_MAX",
    "MALLOC_MMAP_MAX_",
    "MALLOC_TRIM_THRESHOLD_",
  }
)
# Variables (by prefix) read as a process starts or as the server imports
# jax and numpy: Python's own, OpenBLAS's and OpenMP's threads, numpy's,
# jax's configuration (but those `_APPLIED`), jaxlib's logging,
# the dynamic loader's and glibc's. A worker whose differ from the
# server's is not a fork of it; any other variable (COLUMNS, HOME, CUDA's,
# read when a backend starts) is set in the fork's environment.
_READ_AT_START = (
  "PYTHON",
  "OPENBLAS_",
  "OMP_",
  "GOTO",
  "MKL_",
  "NPY_",
  "JAX_",
  "TF_CPP_",
  "LD_",
  "GLIBC_",
  "MALLOC_",
)
# glibc's mallopt(3) parameters of the MALLOC_* variables above.
_MALLOPT = {
  "MALLOC_ARENA_MAX": -8,  # M_ARENA_MAX
  "MALLOC_MMAP_MAX_": -4,  # M_MMAP_MAX
  "MALLOC_TRIM_THRESHOLD_": -1,  # M_TRIM_THRESHOLD
}
_INT_MAX = (1 << 31) - 1


def main_not_rerun() -> bool:
  """Whether a fork runs nothing of this process's `__main__` module again.

  The standard library prepares each child of its forkserver as a spawned
  one (multiprocessing/spawn.py, `get_preparation_data` and `prepare`;
  Python 3.10 to 3.13): it runs the main script again as `__mp_main__`
  (all of it but an `if __name__ == "__main__":` block), or the module of
  `python -m NAME`, except where NAME is a package's `__main__` (`python
  -m hloprobe`, `python -m pytest`) or there is no file (an interpreter
  prompt, a notebook). A user's script that calls hloprobe's Python API
  unguarded would call it again in each worker, so its workers are not
  forked; hloprobe's console script only imports `hloprobe.__main__` (its
  call of `main` is guarded), so its are.
  """
  main = sys.modules.get("__main__")
  name = getattr(getattr(main, "__spec__", None), "name", None)
  if name is not None:
    return name == "__main__" or name.endswith(".__main__")
  if getattr(main, "__file__", None) is None:
    return True
  entry = getattr(getattr(main, "main", None), "__module__", None)
  return entry == "hloprobe.__main__"


class _Fd:
  """A file descriptor of this process that a fork is given (duplicated
  for the child as the Process is pickled for the server)."""

  def __init__(self, fd: int):
    self.fd = fd

  def __reduce__(self):
    from multiprocessing import reduction

    return _detached, (reduction.DupFd(self.fd),)


def _detached(dup) -> int:
  return dup.detach()


class ForkedProcess:
  """The part of `subprocess.Popen`'s interface `process.Worker` uses, of
  a forked worker: `pid`, `stdin` and `stdout` (its pipes' ends here),
  `poll`, `wait` and `kill`. Its exit status is read under `_STATUS_LOCK`."""

  def __init__(self, process, stdin, stdout):
    self._process, self.stdin, self.stdout = process, stdin, stdout
    self.pid = process.pid

  def poll(self) -> int | None:
    """Its exit status (a signal's as minus its number), None while it
    runs."""
    return _exit_status(self._process, 0)

  def wait(self, timeout: float | None = None) -> int:
    """Its exit status, once it has one.

    Raises:
      subprocess.TimeoutExpired: still running after `timeout` seconds.
    """
    code = _exit_status(self._process, timeout)
    if code is None:
      raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
    return code

  def kill(self) -> None:
    self._process.kill()


def _exit_status(process, timeout: float | None) -> int | None:
  """A fork's exit status once it has one within `timeout` seconds (None:
  for ever), else None: waited for without reading it, then read under
  `_STATUS_LOCK`."""
  deadline = None if timeout is None else time.monotonic() + timeout
  while True:
    with _STATUS_LOCK:
      code = process.exitcode
    left = None if deadline is None else deadline - time.monotonic()
    if code is not None or (left is not None and left <= 0):
      return code
    multiprocessing.connection.wait([process.sentinel], left)


class Forker:
  """Starts workers as forks of the standard library's forkserver.

  Args:
    preload: modules the server imports before its first fork (a pool's
      `preload` and what its requests import: jax, hloprobe's stages).
      The standard library keeps one server per process, started with the
      preload of the first `Forker` that starts it: a later one's modules
      are imported by each worker (`serve`), as without a server.

  Raises:
    ValueError: this platform has no forkserver (not a POSIX system).
  """

  def __init__(self, preload: Sequence[str] = ()):
    self._context = multiprocessing.get_context("forkserver")
    self._context.set_forkserver_preload([__name__, *preload])
    from multiprocessing import forkserver

    # Its imports go on in the background. The standard library unblocks
    # SIGINT and SIGTERM as it starts its resource tracker (Python 3.13's
    # multiprocessing/resource_tracker.py `ensure_running`): blocked again
    # where they were (`hloprobe.__main__` blocks them until the command
    # line's handlers are set).
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    try:
      forkserver.ensure_running()
    finally:
      signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    # Once, however many Forkers: the server waited for as this process
    # exits, so that its CPU and its workers' (it waits for each) count in
    # this process's children's (`resource.RUSAGE_CHILDREN`, `time`), as
    # `python -c` workers' do; else it ends after this process, unseen.
    atexit.unregister(_stop_server)
    atexit.register(_stop_server)

  def start(self, argv: list[str], env: dict, stderr: int) -> ForkedProcess:
    """A worker forked with `argv` (`serve`'s), `env` and `stderr` (a file
    descriptor of this process, its log's: the caller closes it after), as
    a `ForkedProcess` whose `stdin` and `stdout` are this process's ends of
    two new pipes."""
    child_in, stdin = os.pipe()
    stdout, child_out = os.pipe()
    try:
      process = self._context.Process(
        target=_child,
        args=(argv, env, _Fd(child_in), _Fd(child_out), _Fd(stderr)),
        name=_NAME,
        daemon=True,
      )
      with _STATUS_LOCK:  # `start` reads every other child's status
        process.start()
    except BaseException:
      for fd in (stdin, stdout):
        os.close(fd)
      raise
    finally:
      for fd in (child_in, child_out):
        os.close(fd)
    return ForkedProcess(
      process, os.fdopen(stdin, "wb"), os.fdopen(stdout, "rb")
    )


def end_server() -> None:
  """Ends the server now, for a process that ends by `os._exit` (the
  command line's interrupt), which runs no `atexit` function: it waits
  for the server (`_stop_server`) and removes the standard library's
  temporary folder, which holds the server's socket (multiprocessing/
  util.py `get_temp_dir`, a `pymp-*` folder in TMPDIR, else removed as
  this process exits; the process's `_config` is the standard library's
  own record of it)."""
  _stop_server()
  folder = multiprocessing.current_process()._config.get("tempdir")
  if folder:
    shutil.rmtree(folder, ignore_errors=True)


def _stop_server() -> None:
  """Ends the standard library's forkserver and waits for it: the forks
  still running (of a pool not closed) killed and waited for first, so
  that the server has reaped them; then the server killed (it may still
  be importing, for a command that forked nothing) and its `_stop`
  (Python 3.11 to 3.13: its pipe closed, waited for, its socket's file
  removed); nothing where no server runs."""
  from multiprocessing import forkserver

  server = getattr(forkserver, "_forkserver", None)
  pid = getattr(server, "_forkserver_pid", None)
  if pid is None or not hasattr(server, "_stop"):
    return
  with _STATUS_LOCK:
    live = [p for p in multiprocessing.active_children() if p.name == _NAME]
  for process in live:
    process.kill()
  for process in live:
    _exit_status(process, 5)
  with contextlib.suppress(ProcessLookupError):
    os.kill(pid, signal.SIGKILL)
  server._stop()


def _child(argv, env: dict, stdin: int, stdout: int, stderr: int) -> None:
  """The fork's main: its descriptors and environment, then `serve`."""
  for fd, at in ((stdin, 0), (stdout, 1), (stderr, 2)):
    os.dup2(fd, at)
    os.close(fd)
  _without_client_pipe()
  # No signal blocked, as in a worker started once the command line's
  # handlers are set (`hloprobe.__main__` blocks SIGINT and SIGTERM until
  # then, and may start the server before).
  signal.pthread_sigmask(signal.SIG_SETMASK, ())
  differ = _unforkable(env, os.environ)
  if differ:
    os.write(2, f"not forked: {', '.join(differ)} differ\n".encode())
    os._exit(NOT_FORKED)
  _python_path(env.get("PYTHONPATH"))
  os.environ.clear()
  os.environ.update(env)
  tempfile.tempdir = None
  _mallopt(env)
  if "jax" in sys.modules:
    sys.modules["jax"].config.update(
      "jax_platforms", env.get("JAX_PLATFORMS") or None
    )
  multiprocessing.current_process().daemon = False  # it may start workers
  # Its parent, whose end it ends with (`serve._die_with_parent`): the
  # server, which ends with this process's.
  sys.argv = [argv[0], str(os.getppid()), *argv[2:]]
  serve.serve(sys.argv)


def _without_client_pipe() -> None:
  """Closes the fork's copy of its client's end of the server's "alive"
  pipe (the standard library gives each fork one, multiprocessing/
  forkserver.py `_serve_one`, so that a fork may be a client too): the
  server ends when its client does, only once no fork holds that end,
  and so a busy worker outlived a killed hloprobe, holding its stdout
  (a review, 2026-12-07). A server this fork starts is its own."""
  from multiprocessing import forkserver

  server = getattr(forkserver, "_forkserver", None)
  fd = getattr(server, "_forkserver_alive_fd", None)
  if fd is not None:
    os.close(fd)
    server._forkserver_alive_fd = None


def _unforkable(env, server) -> list[str]:
  """The variables a worker's `env` sets that a fork of the server (whose
  environment is `server`) cannot take: read as a process starts or as
  the server imported its modules (`_READ_AT_START`), not applied by
  `_child`, and set to another value than the server's. One the server
  has and `env` has not is no obstacle: the server's imports set it
  (jax sets TF_CPP_MIN_LOG_LEVEL as it is imported, jax 0.12.0.1 and
  0.10.2), as a
  `python -c` worker's would."""
  return sorted(
    k
    for k in set(env) - _APPLIED
    if k.startswith(_READ_AT_START) and env[k] != server.get(k)
  )


def _python_path(wanted: str | None) -> None:
  """The entries of PYTHONPATH `wanted` that `sys.path` lacks, put after
  sys.path[0], in order. A fork's `sys.path` is its client's (the
  standard library's forkserver sets it so, multiprocessing/spawn.py
  `prepare`), which holds the folders the client added (a user case's,
  `api.ship.worker_environment`) where a `python -c` worker finds them
  on its PYTHONPATH."""
  found = set(sys.path)
  missing = [
    p for p in (wanted or "").split(os.pathsep) if p and p not in found
  ]
  sys.path[1:1] = list(dict.fromkeys(missing))


def _mallopt(env: dict) -> None:
  """glibc malloc's settings of `env`'s MALLOC_* variables (`_MALLOPT`),
  as glibc would have read them at a process's start."""
  wanted = {k: env[k] for k in _MALLOPT if k in env}
  if not wanted:
    return
  libc = ctypes.CDLL(None)
  for name, value in wanted.items():
    libc.mallopt(_MALLOPT[name], min(int(value), _INT_MAX))


# In the server, as it imports this module first (`Forker`'s preload; a
# `python -c` with no argument that imported the forkserver): one BLAS
# thread unless the user set otherwise, as `process.Worker` gives each
# worker, before numpy loads OpenBLAS there.
if sys.argv == ["-c"] and "multiprocessing.forkserver" in sys.modules:
  os.environ.update(
    {k: v for k, v in ONE_BLAS_THREAD.items() if k not in os.environ}
  )
