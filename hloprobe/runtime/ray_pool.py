"""Ray as the sweep's executor (`--executor=ray`): `RayPool`, a
`WorkerPool` whose lanes live on a Ray cluster.

`RayPool` has `WorkerPool`'s interface (`call`, `start`, `close`,
`user_xla_flags`, a context manager), so `sweep.run_sweep` drives it as
it drives the local pool: lanes, order, the cache, references and
predictions stay in the main process, as do the records. Each (XLA_FLAGS
words, lane) is one Ray actor (`_Lane`), started with a `runtime_env`
whose `env_vars` carry its XLA_FLAGS (and JAX_PLATFORMS, no GPU
preallocation) and whose `py_executable` is the interpreter it runs (this
one's by default); each config is one task of that actor
(`_Lane.call`). The actor runs the config the way the local pool does:
in a worker process of its own (`process.Worker`, `serve`), so XLA's
death on a config, a flag XLA rejects, the stage it died in and
`--case_timeout` read exactly as they do locally, and a request's
records come back unchanged. The actor only passes pickled bytes on (it
imports neither jax nor the request's module): Ray cloudpickles the
bytes, the records inside are `serve`'s own pickles.

A dead actor (its Ray worker killed, its node lost) fails the one config
whose task it was running with one line (`WorkerError`, stage "worker");
the next call on its lane starts a new actor. Tasks are never retried
(`max_task_retries=0`): a config XLA kills the process on would be
compiled again. `close(kill=True)` (an interrupt) kills every actor, which
ends their outstanding tasks and their worker processes, and stops a local
cluster this pool started.

The cluster: `address` (`--ray_address`), else RAY_ADDRESS, else a local
cluster on 127.0.0.1 with `num_cpus` CPUs (`--jobs`); a Ray already
initialised in this process (a test's, a notebook's) is used as it is and
left running. Actors ask for no CPU (`num_cpus=0`) and are spread over the
cluster's nodes (`scheduling_strategy="SPREAD"`): `--jobs` lanes run at
once, as locally, whatever the cluster's size; each node must have
hloprobe and its jax installed at the same path as here (or give
`python`).

Ray is an optional extra (`pip install 'hloprobe[ray]'`): it is imported
only here, on first use, and its absence is one line
(`InvalidArgumentError`). Checked with Ray 2.60.0 on Python 3.13.

Private in intent: use the package, `hloprobe.runtime`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import sys
import threading
import warnings
from collections.abc import Sequence

from hloprobe.errors import (
  HloprobeError,
  InvalidArgumentError,
  XlaFlagsError,
  first_line,
)
from hloprobe.runtime.pool import PickledCalls, _preloaded, worker_xla_flags
from hloprobe.runtime.process import Worker, WorkerError

__all__ = ["RAY_MISSING", "RayPool", "import_ray"]

RAY_MISSING = (
  "--executor=ray needs Ray: `make full` installs it (hloprobe's extra "
  "`ray`: pip install -e '.[ray]', or .venv/bin/pip install 'ray>=2.60')"
)
# ray.init's arguments: no worker's output in this process's, and Ray's
# logging left as this process has it.
_QUIET = {"log_to_driver": False, "configure_logging": False}
# Seconds a task may run past its worker's own timeout before the actor
# is given up for dead (the worker's timeout ends it first).
_SLACK_S = 60.0


def import_ray():
  """The `ray` module.

  Raises:
    InvalidArgumentError: Ray is not installed (`RAY_MISSING`).
  """
  try:
    import ray
  except ImportError:
    raise InvalidArgumentError(RAY_MISSING) from None
  return ray


class _Lane:
  """A Ray actor's body: one lane's worker process (`process.Worker`) on
  a Ray node, started at once (it imports jax meanwhile) and again after
  it died.

  Args:
    xla_flags: the lane's whole XLA_FLAGS (the user's, then its own).
    platforms: JAX_PLATFORMS of its worker ("" for JAX's own choice).
    preload: the modules its worker imports as it starts (`RayPool`
      names them from its Request classes, as `WorkerPool` does).
    cwd: the sweep's folder: the actor and its worker run there where the
      node has it (a user case's relative path, as locally), else in the
      folder Ray gave them.
  """

  def __init__(self, xla_flags: str, platforms: str, preload: tuple, cwd: str):
    if os.path.isdir(cwd):
      os.chdir(cwd)  # this process is the actor's own
    self._args = (xla_flags, platforms, preload)
    self._worker: Worker | None = None
    self._live()

  def _live(self) -> Worker:
    if self._worker is None or not self._worker.alive:
      if self._worker is not None:
        self._worker.close()
      self._worker = Worker(*self._args)
      self._worker.start()
    return self._worker

  def pid(self) -> int:
    """This actor's process id (a test kills it)."""
    return os.getpid()

  def call(self, payload: bytes, timeout_s: float) -> bytes:
    """One pickled request run in its worker; the pickled reply, or the
    worker's death as a pickled ("raise", error)."""
    try:
      return self._live().call_pickled(payload, timeout_s)
    except (WorkerError, XlaFlagsError) as e:
      return pickle.dumps(("raise", e))

  def close(self) -> None:
    if self._worker is not None:
      self._worker.close()


def _lane_env(xla_flags: str, platforms: str) -> dict[str, str]:
  """A lane actor's env_vars: its XLA_FLAGS, JAX_PLATFORMS, and what this
  process set for JAX that a node's environment lacks."""
  env = {"XLA_FLAGS": xla_flags, "JAX_PLATFORMS": platforms}
  for name in (
    "JAX_SKIP_CUDA_CONSTRAINTS_CHECK",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
  ):
    if name in os.environ:
      env[name] = os.environ[name]
  env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
  return env


class RayPool(PickledCalls):
  """`WorkerPool`'s interface on a Ray cluster: one actor per (XLA_FLAGS
  words, lane), each running its configs in a worker process of its own.

  Args:
    platforms: JAX_PLATFORMS of the workers: None for this process's
      platforms, "" for JAX's own choice, or a value such as "cuda,cpu".
    preload: as `WorkerPool`'s (the modules' names go to the actors).
    user_xla_flags: as `WorkerPool`'s.
    address: the Ray cluster's address, or None: RAY_ADDRESS, else a
      local cluster on 127.0.0.1.
    num_cpus: CPUs of a local cluster started here (`--jobs`).
    python: the interpreter each actor runs (`runtime_env`'s
      `py_executable`); None: this one's.

  Raises:
    InvalidArgumentError: Ray is not installed.
    HloprobeError: the cluster at `address` cannot be joined.

  Attributes:
    started: how many actors the pool has started so far.
  """

  def __init__(
    self,
    platforms: str | None = None,
    preload: Sequence[type | str] = (),
    user_xla_flags: str | None = None,
    address: str | None = None,
    num_cpus: int = 1,
    python: str | None = None,
  ):
    self._ray = import_ray()
    from hloprobe.runtime.process import _jax_platforms

    if platforms is None:
      platforms = _jax_platforms()
    self._platforms, self._preload = platforms or "", _preloaded(preload)
    if user_xla_flags is None:
      user_xla_flags = os.environ.get("XLA_FLAGS", "")
    self.user_xla_flags = user_xla_flags
    self._python = python or sys.executable
    self._lock = threading.Lock()
    self._busy: dict[tuple[str, int], threading.Lock] = {}
    self._actors: dict[tuple[str, int], object] = {}
    self._pids: dict[tuple[str, int], object] = {}  # Ray refs
    self._closed = False
    self.started = 0
    self._own_cluster = not self._ray.is_initialized()
    if self._own_cluster:
      self._connect(address, num_cpus)
    self._lane_class = self._ray.remote(_Lane)

  def _connect(self, address: str | None, num_cpus: int) -> None:
    """Joins `address` (or RAY_ADDRESS), else starts a local cluster.

    Raises:
      HloprobeError: the cluster cannot be joined (one line).
    """
    address = address or os.environ.get("RAY_ADDRESS") or None
    if not address:
      return self._start_local(num_cpus)
    try:
      self._ray.init(address=address, **_QUIET)
    except Exception as e:  # Ray's ConnectionError, auth, a bad address
      raise HloprobeError(
        f"cannot join the Ray cluster at {address}: {first_line(e)} (a "
        "cluster with token authentication, Ray's default, needs "
        "RAY_AUTH_MODE=token here and its token, `ray get-auth-token`)"
      ) from None

  def _start_local(self, num_cpus: int) -> None:
    """Starts a local cluster on 127.0.0.1 with `num_cpus` CPUs.

    Ray starts its processes with subprocess (fork, then exec at once):
    JAX's "os.fork() was called" warning does not apply. Ray's log line
    that the cluster has token authentication is dropped: the cluster is
    the sweep's own.
    """
    log = logging.getLogger("ray")
    level = log.level
    with warnings.catch_warnings():
      warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
      log.setLevel(logging.ERROR)
      try:
        self._ray.init(
          num_cpus=max(1, num_cpus),
          include_dashboard=False,
          _node_ip_address="127.0.0.1",
          **_QUIET,
        )
      finally:
        log.setLevel(level)

  def _key(self, xla_flags: str, lane: int) -> tuple[str, int]:
    return worker_xla_flags(self.user_xla_flags, xla_flags), lane

  def _actor(self, key: tuple[str, int]):
    """The lane's actor, started if it has none (caller holds its lock)."""
    with self._lock:
      if self._closed:
        raise WorkerError("the worker pool was closed (an interrupt)")
      actor = self._actors.get(key)
      if actor is None:
        actor = self._lane_class.options(
          num_cpus=0,
          max_restarts=0,
          max_task_retries=0,
          scheduling_strategy="SPREAD",
          runtime_env={
            "env_vars": _lane_env(key[0], self._platforms),
            "py_executable": self._python,
          },
        ).remote(key[0], self._platforms, self._preload, os.getcwd())
        self._actors[key] = actor
        # Its first task: it answers as soon as the actor is up.
        self._pids[key] = actor.pid.remote()
        self.started += 1
      return actor

  def start(self, xla_flags: str = "", lane: int = 0) -> None:
    """Starts the lane's actor if it has none, without waiting for it."""
    self._actor(self._key(xla_flags, lane))

  def call_pickled(
    self,
    payload: bytes,
    xla_flags: str = "",
    timeout_s: float = 1800.0,
    lane: int = 0,
  ) -> bytes:
    """One task of the lane's actor (see `PickledCalls.call`): the reply's
    pickled (status, value), unread.

    Raises:
      XlaFlagsError: XLA rejected a flag of the lane's XLA_FLAGS.
      WorkerError: the worker or the actor died (one line), timed out, or
        the pool is closed.
    """
    key = self._key(xla_flags, lane)
    with self._lock:
      busy = self._busy.setdefault(key, threading.Lock())
    with busy:
      actor = self._actor(key)
      ref = actor.call.remote(payload, timeout_s)
      try:
        frame = self._ray.get(ref, timeout=timeout_s + _SLACK_S)
      except self._ray.exceptions.GetTimeoutError:
        self._drop(key, actor)
        raise WorkerError(
          f"Ray task timed out (XLA_FLAGS={key[0]!r}); its actor was stopped",
          timed_out=True,
        ) from None
      except self._ray.exceptions.RayError as e:
        self._drop(key, actor)
        raise WorkerError(
          f"Ray worker died (XLA_FLAGS={key[0]!r}): {first_line(e)}"
        ) from None
    return frame

  def lane_pids(self) -> dict[tuple[str, int], int]:
    """(XLA_FLAGS, lane) -> the process id of each live actor (asked as
    its first task, so never queued behind a config; a test kills one)."""
    with self._lock:
      asked = dict(self._pids)
    return dict(zip(asked, self._ray.get(list(asked.values()))))

  def _drop(self, key, actor) -> None:
    """Forgets a dead or stuck actor (killed): its lane starts a new one."""
    with self._lock:
      if self._actors.get(key) is actor:
        del self._actors[key]
        self._pids.pop(key, None)
    with contextlib.suppress(Exception):  # closed meanwhile (an interrupt)
      self._ray.kill(actor, no_restart=True)

  def close(self, kill: bool = False) -> None:
    """Ends every actor (and its worker); later calls raise `WorkerError`.
    Stops the local cluster this pool started.

    Args:
      kill: kill them at once (an interrupt: their outstanding tasks end
        with them); otherwise let each end its worker first.
    """
    with self._lock:
      if self._closed:
        return
      self._closed = True
      actors = list(self._actors.values())
      self._actors.clear()
      self._pids.clear()
    try:
      if not kill:
        self._ray.get([a.close.remote() for a in actors], timeout=30)
    except self._ray.exceptions.RayError:
      pass  # an actor already dead: killed below all the same
    finally:
      for a in actors:
        self._ray.kill(a, no_restart=True)
      if self._own_cluster and self._ray.is_initialized():
        self._ray.shutdown()

  def __enter__(self) -> RayPool:
    return self

  def __exit__(self, exc_type, *rest) -> None:
    self.close(kill=exc_type is not None)
