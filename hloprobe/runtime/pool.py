"""Worker processes: work XLA may crash on, and work under other XLA_FLAGS.

XLA reads XLA_FLAGS once per process (xla/debug_options_flags.cc,
ParseDebugOptionsFlagsFromEnv), so a config that needs other flags runs in
another process. XLA also aborts the whole process on input it does not
expect: a flag it does not know (`parse_flags_from_env.cc: Unknown flag in
XLA_FLAGS: --xla_...`, jaxlib 0.10.2), a CHECK failure, or a signal such as
SIGFPE from a GpuTargetConfigProto with `threads_per_warp: 0`. Such work
runs in a worker, and a worker's death becomes one `WorkerError` line naming
the signal or the flag and the last lines XLA printed.

A `WorkerPool` keeps persistent workers (`python -c` running `serve`),
one per (XLA_FLAGS words, lane): jax is imported once per worker, not once
per config, and several lanes of one flag set compile side by side (see
`sweep.run_sweep`'s jobs); a worker that died is started again on the next
call. Requests and replies travel as length-prefixed pickles on the
worker's stdin and on a private copy of its stdout (native writes to fd 1
go to its stderr log), never as text to re-parse. Each worker gets its own
temporary folder (TMPDIR), removed when the worker ends however it ends;
a worker ends once its parent process has (it watches `os.getppid()`,
`serve._die_with_parent`; whatever thread started it) and when its stdin
closes, and it ignores SIGINT so that an
interrupt is handled once, by the parent. Before each stage of its work a
worker notes the stage's name in a file of its folder (`Request.note_stage`),
so its death names the stage it died in (`WorkerError.stage`). What a
worker runs is a `serve.Request` record, pickled whole (see `serve`).

Workers get XLA_PYTHON_CLIENT_PREALLOCATE=false unless the user set it:
several workers may share one attached GPU, and JAX's default is to take
75% of its memory per process (JAX docs, "GPU memory allocation").

A worker runs with the user's own XLA_FLAGS (the baseline's workers with
those alone) followed by the experiment's. XLA reads the words left to right and
the last value of a flag wins (checked on jaxlib 0.10.2 with two
--xla_dump_to), so an experiment overrides the user where both set a flag.

Private in intent: use the package, `hloprobe.runtime`.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import threading
import weakref
from collections.abc import Iterable, Sequence

from hloprobe.errors import XlaFlagsError
from hloprobe.runtime.forked import Forker, end_server, main_not_rerun
from hloprobe.runtime.process import (
  Worker,
  WorkerError,
  default_max_worker_mb,
  make_owned_folder,
  remove_stale_worker_folders,
  unpickled_reply,
  worker_folder_name,
)
from hloprobe.runtime.serve import CheckXlaFlagsRequest, Request

__all__ = [
  "WORKER_START_ENV",
  "PickledCalls",
  "WorkerError",
  "WorkerPool",
  "call_in_worker",
  "worker_xla_flags",
]


# The environment variable that, set to "spawn", starts every worker as
# `python -c` (`WorkerPool`'s `forked` off).
WORKER_START_ENV = "HLOPROBE_WORKER_START"


def worker_xla_flags(user_flags: str, experiment_flags: str) -> str:
  """The XLA_FLAGS of a worker: the user's words, then the experiment's.

  E.g. ("--xla_dump_to=/tmp/d", "--xla_cpu_enable_fast_math=false") ->
  "--xla_dump_to=/tmp/d --xla_cpu_enable_fast_math=false".
  """
  return " ".join(
    w for w in (user_flags.strip(), experiment_flags.strip()) if w
  )


def _preloaded(preload: Sequence[type]) -> tuple[str, ...]:
  """The modules that define `preload`'s request classes."""
  for kind in preload:
    if not (isinstance(kind, type) and issubclass(kind, Request)):
      raise TypeError(f"preload takes Request classes, got {kind!r}")
  return tuple(dict.fromkeys(kind.__module__ for kind in preload))


class PickledCalls:
  """`call` for a pool whose subclass runs pickled requests
  (`call_pickled`): `WorkerPool` here, `ray_pool.RayPool` on a cluster."""

  def call(
    self,
    request: Request,
    xla_flags: str = "",
    timeout_s: float = 1800.0,
    lane: int = 0,
  ):
    """Runs `request.run(memo)` in a worker for these extra XLA_FLAGS.

    Args:
      request: the work, a `serve.Request` record (pickled whole).
      xla_flags: extra XLA_FLAGS words ("" for none); the worker gets the
        pool's `user_xla_flags`, then these.
      timeout_s: wall-clock limit of this call, in seconds.
      lane: which of the flag set's workers (0, 1, ...): calls on one lane
        run one after another, lanes side by side.

    Returns:
      What `request.run` returned, unpickled.

    Raises:
      XlaFlagsError: XLA rejected a flag of the worker's XLA_FLAGS.
      WorkerError: the worker died (a signal, an abort) or timed out, or
        the pool is closed; the message is one line.
      Exception: what `request.run` raised, re-raised here.
    """
    if not isinstance(request, Request):
      raise TypeError(f"a worker runs Request records, got {request!r}")
    payload = pickle.dumps(request)
    return unpickled_reply(
      self.call_pickled(payload, xla_flags, timeout_s, lane)
    )

  def call_pickled(
    self, payload: bytes, xla_flags: str, timeout_s: float, lane: int
  ) -> bytes:
    """As `call`, for a request pickled already: the reply's pickled
    (status, value), unread (`process.unpickled_reply` reads it).

    Raises:
      NotImplementedError: here; each pool class defines its own.
    """
    raise NotImplementedError(type(self).__name__)


class WorkerPool(PickledCalls):
  """Persistent worker processes, one per (XLA_FLAGS words, lane).

  Use as a context manager: leaving it ends every worker and removes its
  temporary folder, also on an exception or interrupt. A worker that died
  is replaced by a fresh one on the next call; once the pool is closed,
  no call starts one (a lane thread still running after an interrupt
  fails at once).

  Args:
    platforms: JAX_PLATFORMS of the workers: None for this process's
      platforms, "" for JAX's own choice (an attached GPU), or a value
      such as "cuda,cpu".
    preload: `serve.Request` classes whose modules each worker imports as
      it starts (e.g. (`sweep.compiled.CompileRequest`,): jax), so that
      `start` warms a worker up while this process does other work.
    user_xla_flags: the user's XLA_FLAGS, put before each flag set's own
      words (see `worker_xla_flags`); None: this process's environment's,
      read once here.
    max_worker_mb: each worker's resident memory bound in MiB
      (`process.Worker`'s `max_mb`: past it the worker is stopped and the
      call raises `WorkerError` naming the bound; the next call gets a
      fresh worker); None: a quarter of the machine's memory
      (`process.default_max_worker_mb`).
    kept_heap: start the workers of lanes 0 and up with glibc malloc's
      `process.KEPT_HEAP` settings (a sweep's compile lanes; not a case's
      worker, lane `CASE_LANE` < 0 or a case loader's pool).
    forked: modules (names) of a server that imports them once and forks
      each worker (`forked.Forker`, started here: its imports go on while
      this process works), not each worker started as `python -c` and
      importing them itself; () for `python -c`, as where this platform
      has no forkserver, where a fork would run the main script again
      (`forked.main_not_rerun`) or where the environment's
      HLOPROBE_WORKER_START is "spawn" (`tools.profile_workers`, whose
      profiler starts with each `python -c`).

  Attributes:
    started: how many worker processes the pool has started so far.
  """

  def __init__(
    self,
    platforms: str | None = None,
    preload: Sequence[type] = (),
    user_xla_flags: str | None = None,
    max_worker_mb: int | None = None,
    kept_heap: bool = False,
    forked: Sequence[str] = (),
  ):
    self._platforms, self._preload = platforms, _preloaded(preload)
    self._kept_heap = kept_heap
    self._forker = _forker(forked) if forked else None
    self.max_worker_mb = max_worker_mb or default_max_worker_mb()
    if user_xla_flags is None:
      user_xla_flags = os.environ.get("XLA_FLAGS", "")
    self.user_xla_flags = user_xla_flags
    self._workers: dict[tuple[str, int], Worker] = {}
    # An interrupt may come as `__exit__` starts, before it closes them:
    # then they end when the pool is collected, or at exit at the latest.
    self._finalizer = weakref.finalize(self, _end_all, self._workers)
    # Lanes call from several threads (SweepSpec.jobs): the dict under one
    # lock, each worker's pipe under its own.
    self._lock = threading.Lock()
    self._busy: dict[tuple[str, int], threading.Lock] = {}
    self._closed = False
    self.started = 0
    self._shared: list[str] = []  # `shared_folder`'s, once made
    # What an interrupted or killed hloprobe left in TMPDIR.
    remove_stale_worker_folders()

  def call_pickled(
    self,
    payload: bytes,
    xla_flags: str = "",
    timeout_s: float = 1800.0,
    lane: int = 0,
  ) -> bytes:
    """As `call`, for a request pickled already; returns the reply's
    pickled (status, value) unread (`process.unpickled_reply` reads it),
    so that a go-between (a `ray_pool` lane) imports nothing it names.

    Raises:
      XlaFlagsError, WorkerError: as `call`.
    """
    key = self._key(xla_flags, lane)
    with self._lock:
      busy = self._busy.setdefault(key, threading.Lock())
    with busy:
      return self._worker(key).call_pickled(payload, timeout_s)

  @staticmethod
  def start_fork_server(modules: Sequence[str]) -> None:
    """Starts the server that forks the workers of pools asked for forked
    ones (`forked.Forker`; its imports of `modules` go on in the
    background), where forks are wanted (`_forker`) and this platform
    has a forkserver; a later pool's finds it running."""
    _forker(modules)

  @staticmethod
  def end_fork_server() -> None:
    """Ends the fork server now (`forked.end_server`), for a process that
    ends by `os._exit`; nothing where none was started."""
    end_server()

  @classmethod
  def check_environment_xla_flags(cls, xla_flags: str) -> None:
    """The environment's XLA_FLAGS, tried in a worker of a pool of its own
    before JAX starts here.

    XLA aborts the process on a flag it does not know or a value it cannot
    read (see the module doc), which would end this one without a word.

    Args:
      xla_flags: the environment's XLA_FLAGS (the command line reads it).

    Raises:
      XlaFlagsError: XLA rejected a flag (the message names it).
    """
    if not xla_flags.strip():
      return
    with cls(user_xla_flags=xla_flags) as pool:
      try:
        pool.call(CheckXlaFlagsRequest())
      except XlaFlagsError as e:
        raise XlaFlagsError(f"XLA_FLAGS of the environment: {e}") from None

  def worker_flags(self, xla_flags: str) -> str:
    """The whole XLA_FLAGS a worker asked for with `xla_flags` runs under:
    the pool's `user_xla_flags`, then these (`worker_xla_flags`)."""
    return worker_xla_flags(self.user_xla_flags, xla_flags)

  def _key(self, xla_flags: str, lane: int) -> tuple[str, int]:
    """A worker's key: its whole XLA_FLAGS and its lane."""
    return self.worker_flags(xla_flags), lane

  def _worker(self, key: tuple[str, int]) -> Worker:
    """The live worker of `key`, started if needed (caller holds its lock)."""
    with self._lock:
      if self._closed:
        raise WorkerError("the worker pool was closed (an interrupt)")
      worker = self._workers.get(key)
      if worker is None or not worker.alive:
        if worker is not None:
          worker.close()
        worker = Worker(
          key[0],
          self._platforms,
          self._preload,
          self.max_worker_mb,
          kept_heap=self._kept_heap and key[1] >= 0,
          forker=self._forker,
        )
        self._workers[key] = worker  # `close` ends it from here on
        self.started += 1
        # From the calling thread: a worker outlives it
        # (`serve._die_with_parent` watches the process, not the thread).
        worker.start()
      return worker

  @property
  def closed(self) -> bool:
    """Whether `close` was called (no call starts a worker any more)."""
    return self._closed

  def shared_folder(self) -> str | None:
    """A folder of this pool for files its workers and this process share
    (a case's inputs, `engine.shared`), made on first use (0700, with the
    workers' folder names and owner file: removed by `close`, or by a
    later pool's `remove_stale_worker_folders` once this process is
    gone); None once closed or when it cannot be made."""
    with self._lock:
      if self._closed:
        return None
      if not self._shared:
        path = worker_folder_name()
        try:
          make_owned_folder(path)
        except OSError:
          return None
        self._shared.append(path)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(
          self, _end_all, self._workers, self._shared
        )
      return self._shared[0]

  def start(self, xla_flags: str = "", lane: int = 0) -> None:
    """Starts the worker of (these extra XLA_FLAGS, lane) if it is not
    running, without waiting for it (see `call`'s arguments)."""
    self._worker(self._key(xla_flags, lane))

  def retire(self, keep: Iterable[tuple[str, int]]) -> None:
    """Ends the workers of lanes 0 and up whose (extra XLA_FLAGS, lane) is
    not in `keep` (a negative lane, e.g. a case's loader, is kept), so
    that a run of several sweeps on one pool (explain's fix tries, each
    with flag sets of its own) holds only the current sweep's workers, not
    every flag set's seen so far (issue 37: four idle-or-busy compile
    workers of 0.6-0.8 GB each on 2 cores). A worker still answering a
    call (explain's batch-invariance answer runs beside its fix tries) is
    ended once that call has its reply, not during it; a later call of a
    retired key starts a fresh worker. An interrupt while it waits kills
    the workers it took out of the pool (`close` no longer sees them)."""
    wanted = {self._key(flags, lane) for flags, lane in keep}
    with self._lock:
      gone = [k for k in self._workers if k[1] >= 0 and k not in wanted]
      workers = [(self._workers.pop(k), self._busy.get(k)) for k in gone]
    try:
      for w, busy in workers:
        with busy or contextlib.nullcontext():
          w.close()
    except BaseException:  # an interrupt: the rest the quick way
      for w, _ in workers:
        w.close(kill=True)
      raise

  def close(self, kill: bool = False) -> None:
    """Ends every worker and removes their temporary folders; later calls
    raise `WorkerError`.

    Args:
      kill: SIGKILL them at once instead of letting them finish.
    """
    with self._lock:
      self._closed = True
      workers = list(self._workers.values())
    try:
      for w in workers:
        w.close(kill)
    except BaseException:  # an interrupt: end them all the quick way
      self._finalizer()
      raise
    self._finalizer()

  def __enter__(self) -> WorkerPool:
    return self

  def __exit__(self, exc_type, *rest) -> None:
    self.close(kill=exc_type is not None)


def _forker(preload: Sequence[str]) -> Forker | None:
  """A `Forker` of `preload`, or None where workers are not forked: the
  environment asks for `python -c` ones (`WORKER_START_ENV`), a fork would
  run the main script again (`forked.main_not_rerun`), or there is no
  forkserver."""
  if os.environ.get(WORKER_START_ENV) == "spawn" or not main_not_rerun():
    return None
  try:
    return Forker(preload)
  except (ValueError, OSError):  # no forkserver here: `python -c`
    return None


def _end_all(workers: dict, shared: Sequence[str] = ()) -> None:
  """SIGKILLs a pool's workers and removes their folders and its shared
  folder (idempotent)."""
  for w in list(workers.values()):
    w.close(kill=True)
  workers.clear()
  for path in shared:
    shutil.rmtree(path, ignore_errors=True)


def call_in_worker(request: Request, xla_flags: str, timeout_s: float = 1800.0):
  """Runs `request` in a worker of its own (see `WorkerPool.call`)."""
  with WorkerPool() as pool:
    return pool.call(request, xla_flags, timeout_s)
