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
death on a config, a flag XLA rejects, the stage it died in,
`--case_timeout` and the memory bound (`--max_worker_mb`; by default a
quarter of the node's memory, read on the node) read exactly as they do
locally, and a request's
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
left running.

A local cluster listens on the loopback interface only (`_start_local`
says how each of Ray's servers is told so), runs without a dashboard,
and is killed whole when this process ends however it ends (SIGKILL
included: `ray_watchdog`). Ray's `ray.init` replaces this process's
SIGTERM handler (`sys.exit(15)`, Ray 2.60.0 `_private/worker.py` `init`)
and its core worker installs a C++ failure-signal handler that prints a
stack on SIGTERM: both are put back as they were after `ray.init`, so
the command line's SIGTERM is one line and exit 143. A cluster joined at
`address` is the user's choice: joined with neither a token
(RAY_AUTH_MODE=token) nor TLS (RAY_USE_TLS=1), it took a client without
either, and `warn` is given one line saying so. Actors ask for no CPU (`num_cpus=0`) and are spread over the
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
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence

from hloprobe.errors import (
  HloprobeError,
  InvalidArgumentError,
  XlaFlagsError,
  first_line,
)
from hloprobe.runtime.pool import PickledCalls, _preloaded, worker_xla_flags
from hloprobe.runtime.process import (
  Worker,
  WorkerError,
  default_max_worker_mb,
)
from hloprobe.runtime.ray_watchdog import Watchdog

__all__ = ["RAY_MISSING", "RayPool"]

RAY_MISSING = (
  "--executor=ray needs Ray: `make full` installs it (hloprobe's extra "
  "`ray`: pip install -e '.[ray]', or .venv/bin/pip install 'ray>=2.60')"
)
# ray.init's arguments: no worker's output in this process's, and Ray's
# logging left as this process has it.
_QUIET = {"log_to_driver": False, "configure_logging": False}
# Where a local cluster listens (Ray's `get_localhost_ip` on Linux).
LOOPBACK = "127.0.0.1"
# Ray's switch whose False makes `services.get_node_ip_address` answer the
# loopback address instead of the address other machines see (Ray 2.60.0
# `_private/ray_constants.py` ENABLE_RAY_CLUSTER, read once at import; the
# module attribute is read at each call).
_CLUSTER_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
# Seconds a task may run past its worker's own timeout before the actor
# is given up for dead (the worker's timeout ends it first).
_SLACK_S = 60.0


def _log_warning(line: str) -> None:
  """The default `warn`: a `logging.warning` of the line."""
  logging.warning("%s", line)


def unguarded_cluster_line(address: str, environ) -> str | None:
  """The warning for a cluster this process joined with neither a token
  nor TLS, or None.

  Ray's client sends a token only in token mode (RAY_AUTH_MODE=token;
  with an explicit address a token file alone does not turn it on, Ray
  2.60.0 `_private/worker.py` `init`), and speaks TLS only with
  RAY_USE_TLS=1 (`_private/grpc_utils.py`; Ray's TLS is mutual, the
  client's certificate checked). A cluster with token authentication
  refuses a client without a token, and one with TLS a client without
  it: joined without either, the cluster has neither, and anyone who can
  reach it can run code on it. Joined with a token, whether the cluster
  checks it is not known here.

  Args:
    address: the cluster's address, as given.
    environ: this process's environment (os.environ).
  """
  token = environ.get("RAY_AUTH_MODE", "").lower() == "token"
  tls = environ.get("RAY_USE_TLS", "0").lower() in ("1", "true")
  if token or tls:
    return None
  return (
    f"hloprobe: warning: the Ray cluster at {address} took this process "
    "without a token or TLS: it has no authentication, and anyone who can "
    "reach it can run code on it (Ray's token authentication: "
    "RAY_AUTH_MODE=token and `ray get-auth-token`; or RAY_USE_TLS=1)"
  )


@contextlib.contextmanager
def _loopback_only(ray):
  """Ray answers the loopback address as this node's inside the block:
  `_CLUSTER_SWITCH`=0 in the environment (Ray's processes started here
  inherit it) and Ray's constant it sets at import, set again here for a
  Ray imported before."""
  constants = sys.modules.get("ray._private.ray_constants")
  before_env = os.environ.get(_CLUSTER_SWITCH)
  before = getattr(constants, "ENABLE_RAY_CLUSTER", None)
  os.environ[_CLUSTER_SWITCH] = "0"
  if constants is not None:
    constants.ENABLE_RAY_CLUSTER = False
  try:
    yield
  finally:
    if before_env is None:
      os.environ.pop(_CLUSTER_SWITCH, None)
    else:
      os.environ[_CLUSTER_SWITCH] = before_env
    if constants is not None and before is not None:
      constants.ENABLE_RAY_CLUSTER = before


@contextlib.contextmanager
def _signals_kept():
  """SIGINT's and SIGTERM's handlers as they were before the block (Ray's
  `init` sets its own SIGTERM handler, and its core worker a C++ one that
  prints a stack): set again (sigaction) after it, in the main thread."""
  main = threading.current_thread() is threading.main_thread()
  saved = {}
  if main:
    for s in (signal.SIGINT, signal.SIGTERM):
      h = signal.getsignal(s)
      if h is not None:
        saved[s] = h
  try:
    yield
  finally:
    for s, h in saved.items():
      signal.signal(s, h)


class _Signalled(KeyboardInterrupt):
  """SIGTERM that Ray's own handler turned into `sys.exit(15)` during
  `ray.init` (before `_signals_kept` put this process's back), raised as
  the interrupt it is.

  Attributes:
    signum: the signal.
  """

  def __init__(self, signum: int):
    super().__init__(signum)
    self.signum = signum


def _off_main(fn, *args, **kwargs):
  """`fn(*args, **kwargs)`, run on another thread when called on the main
  one, which waits for it in Python.

  Ray's blocking calls (`ray.get`) check for signals themselves and turn
  the exception a signal handler raised into a new `KeyboardInterrupt`
  (Ray 2.60.0 `_raylet.pyx` `check_signals`): the command line's
  `Interrupted` (SIGTERM: exit 143) would arrive as a SIGINT (130). Off
  the main thread Ray runs no handler; the main thread's wait raises the
  handler's own exception. The other thread is left to end with its call
  (an interrupt kills the actors, which ends it).
  """
  if threading.current_thread() is not threading.main_thread():
    return fn(*args, **kwargs)
  box: list = []
  done = threading.Event()

  def run():
    try:
      box.append((True, fn(*args, **kwargs)))
    except BaseException as e:  # handed to the caller
      box.append((False, e))
    finally:
      done.set()

  threading.Thread(target=run, daemon=True, name="hloprobe-ray-get").start()
  done.wait()
  ok, value = box[0]
  if ok:
    return value
  raise value


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
    max_mb: its worker's resident memory bound in MiB (`Worker`'s), or
      None: a quarter of this node's memory
      (`process.default_max_worker_mb`, read here, on the node).
  """

  def __init__(
    self,
    xla_flags: str,
    platforms: str,
    preload: tuple,
    cwd: str,
    max_mb: int | None = None,
  ):
    if os.path.isdir(cwd):
      os.chdir(cwd)  # this process is the actor's own
    self._args = (
      xla_flags,
      platforms,
      preload,
      max_mb or default_max_worker_mb(),
    )
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
    warn: given one line when the cluster joined at `address` has neither
      token authentication nor TLS; None: `logging.warning`.
    max_worker_mb: each lane's worker's resident memory bound in MiB, as
      `WorkerPool`'s; None: a quarter of the memory of the node it runs
      on. A worker past it is stopped and its config fails with one line.

  Raises:
    InvalidArgumentError: Ray is not installed.
    HloprobeError: the cluster at `address` cannot be joined; the local
      cluster did not come up on the loopback interface.

  Attributes:
    started: how many actors the pool has started so far.
  """

  @staticmethod
  def import_ray():
    """The `ray` module, which the pool runs on; a command checks it is
    there before any work (`--executor=ray`).

    Raises:
      InvalidArgumentError: Ray is not installed (`RAY_MISSING`).
    """
    try:
      with _signals_kept():  # Ray's C++ may install handlers as it loads
        import ray
    except ImportError:
      raise InvalidArgumentError(RAY_MISSING) from None
    return ray

  def __init__(
    self,
    platforms: str | None = None,
    preload: Sequence[type | str] = (),
    user_xla_flags: str | None = None,
    address: str | None = None,
    num_cpus: int = 1,
    python: str | None = None,
    warn: Callable[[str], None] | None = None,
    max_worker_mb: int | None = None,
  ):
    self._ray = self.import_ray()
    self.max_worker_mb = max_worker_mb
    self._warn = warn or _log_warning
    self._watchdog: Watchdog | None = None
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
      with _signals_kept():
        self._ray.init(address=address, **_QUIET)
    except SystemExit as e:  # Ray's SIGTERM handler, during init
      if e.code == signal.SIGTERM:
        raise _Signalled(signal.SIGTERM) from None
      raise
    except Exception as e:  # Ray's ConnectionError, auth, a bad address
      raise HloprobeError(
        f"cannot join the Ray cluster at {address}: {first_line(e)} (a "
        "cluster with token authentication, Ray's default, needs "
        "RAY_AUTH_MODE=token here and its token, `ray get-auth-token`)"
      ) from None
    line = unguarded_cluster_line(address, os.environ)
    if line:
      self._warn(line)

  def _start_local(self, num_cpus: int) -> None:
    """Starts a local cluster on 127.0.0.1 with `num_cpus` CPUs, its
    processes marked for the watchdog (`ray_watchdog`).

    Every server of the cluster takes its interface from the node's IP
    address (Ray 2.60.0): the GCS's and the raylet's gRPC servers (the
    node manager and the object manager) and each core worker's (this
    driver's and each actor's) listen on 127.0.0.1 only when it is
    "127.0.0.1", else on every interface (`src/ray/rpc/grpc_server.cc`
    `GrpcServer::Run`, `listen_to_localhost_only`, set from
    `node_ip_address == "127.0.0.1"` in `gcs_server.cc` and the raylet's
    and core worker's servers); the runtime-env agent binds that address
    (`_private/runtime_env/agent/main.py`); the dashboard agent's gRPC
    and HTTP servers and its metrics export bind the loopback address
    when it is a loopback one (`dashboard/agent.py`,
    `dashboard/modules/reporter/reporter_agent.py`). `ray.init`'s
    `_node_ip_address="127.0.0.1"` alone is not enough: `init` turns a
    loopback address into the machine's outward one
    (`services.resolve_ip_for_localhost`) unless `ENABLE_RAY_CLUSTER` is
    False, which `_CLUSTER_SWITCH`=0 gives Ray's processes and
    `_loopback_only` this one. No dashboard (`include_dashboard=False`;
    its host would be 127.0.0.1 too). The node's address is checked
    after `init`; another is refused.

    Ray starts its processes with subprocess (fork, then exec at once):
    JAX's "os.fork() was called" warning does not apply. Ray's log line
    that the cluster has token authentication is dropped: the cluster is
    the sweep's own.

    Raises:
      HloprobeError: the node came up on an address other than 127.0.0.1
        (the cluster is shut down first).
    """
    log = logging.getLogger("ray")
    level = log.level
    self._watchdog = Watchdog()
    with warnings.catch_warnings():
      warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
      log.setLevel(logging.ERROR)
      try:
        with (
          self._watchdog.marking(),
          _loopback_only(self._ray),
          _signals_kept(),
        ):
          self._ray.init(
            num_cpus=max(1, num_cpus),
            include_dashboard=False,
            dashboard_host=LOOPBACK,
            _node_ip_address=LOOPBACK,
            **_QUIET,
          )
      except SystemExit as e:  # Ray's SIGTERM handler, during init
        self._end_cluster()
        if e.code == signal.SIGTERM:
          raise _Signalled(signal.SIGTERM) from None
        raise
      except BaseException:
        self._end_cluster()
        raise
      finally:
        log.setLevel(level)
    node = self._ray.util.get_node_ip_address()
    if node != LOOPBACK:
      self._end_cluster()
      raise HloprobeError(
        f"the local Ray cluster came up on {node}, not {LOOPBACK}, so it "
        "would listen on the network; it was shut down (Ray was set up "
        f"before hloprobe could set {_CLUSTER_SWITCH}=0: set it before "
        "`import ray`)"
      )

  def _end_cluster(self) -> None:
    """Shuts down the local cluster this pool started, then has the
    watchdog kill what is left of it."""
    try:
      if self._ray.is_initialized():
        with _signals_kept():
          self._ray.shutdown()
    finally:
      if self._watchdog is not None:
        self._watchdog.close()
        self._watchdog = None

  def worker_flags(self, xla_flags: str) -> str:
    """As `WorkerPool.worker_flags`: the user's XLA_FLAGS, then these."""
    return worker_xla_flags(self.user_xla_flags, xla_flags)

  def _key(self, xla_flags: str, lane: int) -> tuple[str, int]:
    return self.worker_flags(xla_flags), lane

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
        ).remote(
          key[0],
          self._platforms,
          self._preload,
          os.getcwd(),
          self.max_worker_mb,
        )
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
        frame = _off_main(self._ray.get, ref, timeout=timeout_s + _SLACK_S)
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
    return dict(zip(asked, _off_main(self._ray.get, list(asked.values()))))

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
        _off_main(self._ray.get, [a.close.remote() for a in actors], timeout=30)
    except self._ray.exceptions.RayError:
      pass  # an actor already dead: killed below all the same
    finally:
      try:
        for a in actors:
          self._ray.kill(a, no_restart=True)
      finally:
        if self._own_cluster:
          self._end_cluster()

  def __enter__(self) -> RayPool:
    return self

  def __exit__(self, exc_type, *rest) -> None:
    self.close(kill=exc_type is not None)
