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
a worker dies with its parent (Linux `prctl(PR_SET_PDEATHSIG, SIGKILL)`)
and ends when its stdin closes, and it ignores SIGINT so that an
interrupt is handled once, by the parent. Before each stage of its work a
worker notes the stage's name in a file of its folder (`note_stage`), so
its death names the stage it died in (`WorkerError.stage`).

Workers get XLA_PYTHON_CLIENT_PREALLOCATE=false unless the user set it:
several workers may share one attached GPU, and JAX's default is to take
75% of its memory per process (JAX docs, "GPU memory allocation").

A worker runs with the user's own XLA_FLAGS (the baseline's workers with
those alone) followed by the experiment's. XLA reads the words left to right and
the last value of a flag wins (checked on jaxlib 0.10.2 with two
--xla_dump_to), so an experiment overrides the user where both set a flag.
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
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref

from hloprobe.errors import HloprobeError, InvalidArgumentError

__all__ = [
  "WorkerError",
  "WorkerPool",
  "call_in_worker",
  "note_stage",
  "check_environment_xla_flags",
  "serve",
  "worker_xla_flags",
]

_UNKNOWN_FLAG_RE = re.compile(r"Unknown flag in XLA_FLAGS: (\S+)")
# A flag XLA knows with a value it cannot read (command_line_flags.cc).
_BAD_VALUE_RE = re.compile(
  r"Couldn't interpret value (.*) for flag (\S+?)\.?$", re.M
)
# Functions a worker may run, by name: (module, attribute).
_FUNCTIONS = {
  "compile_and_run": ("hloprobe.sweep.compiled", "compile_and_run"),
  "load_target": ("hloprobe.sweep.compiled", "load_target"),
  "check_xla_flags": ("hloprobe.compile.worker", "_check_xla_flags"),
}
_HEADER = struct.Struct(">Q")
_MAIN = (
  "import sys; from hloprobe.compile import worker; worker.serve(sys.argv)"
)
_LAST_LINES = 3
# Where a worker notes the stage it is in (a file in its own folder).
_STAGE_FILE_ENV = "HLOPROBE_WORKER_STAGE_FILE"


class WorkerError(HloprobeError):
  """Raised when a worker process dies or XLA rejects its flags.

  Attributes:
    stage: the stage the worker noted last before it died ("compile",
      "run", ...; see `note_stage`), or None when it noted none (it died
      starting, e.g. on a flag XLA rejected) or did not die.
  """

  def __init__(self, message: str, stage: str | None = None):
    super().__init__(message)
    self.stage = stage


def note_stage(name: str) -> None:
  """In a worker, records that stage `name` starts (read if it dies).

  A no-op outside a worker process.
  """
  path = os.environ.get(_STAGE_FILE_ENV)
  if path:
    with open(path, "w") as f:
      f.write(name)


def _signal_name(returncode: int) -> str:
  try:
    return signal.Signals(-returncode).name
  except ValueError:
    return f"signal {-returncode}"


def _explain_death(returncode: int, stderr: str, xla_flags: str) -> str:
  """One line: the flag XLA rejected, or the signal/status and last lines."""
  m = _UNKNOWN_FLAG_RE.search(stderr)
  if m:
    return f"XLA rejected flag {m.group(1)} (XLA_FLAGS={xla_flags!r})"
  m = _BAD_VALUE_RE.search(stderr)
  if m:
    return (
      f"XLA rejected flag --{m.group(2)}: cannot read the value {m.group(1)!r} "
      f"(XLA_FLAGS={xla_flags!r})"
    )
  from hloprobe.compile.toolchain import filter_startup_noise

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


def worker_xla_flags(user_flags: str, experiment_flags: str) -> str:
  """The XLA_FLAGS of a worker: the user's words, then the experiment's.

  E.g. ("--xla_dump_to=/tmp/d", "--xla_cpu_enable_fast_math=false") ->
  "--xla_dump_to=/tmp/d --xla_cpu_enable_fast_math=false".
  """
  return " ".join(
    w for w in (user_flags.strip(), experiment_flags.strip()) if w
  )


def _jax_platforms() -> str | None:
  """The platforms this process's JAX uses (None: JAX's own choice)."""
  if "jax" not in sys.modules:
    return os.environ.get("JAX_PLATFORMS")
  return sys.modules["jax"].config.jax_platforms


def _worker_env(xla_flags: str, tmp: str, platforms: str | None) -> dict:
  """A worker's environment: this one's, with its own XLA_FLAGS, TMPDIR,
  stage file, JAX platforms and (unless set) no GPU preallocation."""
  env = dict(os.environ, XLA_FLAGS=xla_flags, TMPDIR=tmp)
  env[_STAGE_FILE_ENV] = os.path.join(tmp, "stage")
  env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
  if platforms is None:  # the worker starts the same backends as this one
    platforms = _jax_platforms()
  if platforms:
    env["JAX_PLATFORMS"] = platforms
  else:
    env.pop("JAX_PLATFORMS", None)
  return env


class _Worker:
  """One persistent worker process under one XLA_FLAGS.

  Made in two steps so an interrupt leaves nothing behind: the object
  (its folder's name, no resources), which the pool notes, then `start`,
  which makes the folder and the process; `close` removes whatever
  `start` made, wherever it was interrupted.
  """

  def __init__(self, xla_flags: str, platforms: str | None = None, preload=()):
    self.xla_flags, self._platforms, self._preload = (
      xla_flags,
      platforms,
      preload,
    )
    # Named before it exists (`tempfile.mkdtemp` makes it first).
    self.tmp = os.path.join(
      tempfile.gettempdir(), f"hloprobe-worker-{secrets.token_hex(8)}"
    )
    self.log_path = os.path.join(self.tmp, "stderr.log")
    self._stage_path = os.path.join(self.tmp, "stage")
    # Where the current call's output starts in the log (see `_death`).
    self._log_start = 0
    self.proc: subprocess.Popen | None = None

  def start(self) -> None:
    """Makes its folder (0700) and starts its process, not waiting for it."""
    os.mkdir(self.tmp, 0o700)
    env = _worker_env(self.xla_flags, self.tmp, self._platforms)
    with open(self.log_path, "wb") as log:
      self.proc = subprocess.Popen(
        [sys.executable, "-c", _MAIN, str(os.getpid()), *self._preload],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        env=env,
      )

  def call(self, function: str, kwargs: dict, timeout_s: float):
    """Sends one request; returns its result or raises what it raised."""
    payload = pickle.dumps((function, kwargs))
    self._new_call()
    try:
      self.proc.stdin.write(_HEADER.pack(len(payload)) + payload)
      self.proc.stdin.flush()
      status, value = pickle.loads(self._read_frame(timeout_s))
    except (BrokenPipeError, EOFError, ValueError, OSError):
      # ValueError/OSError: the pool closed the pipes (an interrupt).
      raise WorkerError(*self._death()) from None
    if status == "raise":
      raise value
    return value

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
    header = self._read_exact(_HEADER.size, deadline)
    return self._read_exact(_HEADER.unpack(header)[0], deadline)

  def _read_exact(self, size: int, deadline: float) -> bytes:
    fd, chunks, left = self.proc.stdout.fileno(), [], size
    while left:
      ready, _, _ = select.select([fd], [], [], deadline - time.monotonic())
      if not ready:
        self.close(kill=True)
        raise WorkerError(
          f"worker timed out (XLA_FLAGS={self.xla_flags!r}); it was stopped"
        )
      chunk = os.read(fd, min(left, 1 << 20))
      if not chunk:
        raise EOFError
      chunks.append(chunk)
      left -= len(chunk)
    return b"".join(chunks)

  def _death(self) -> tuple[str, str | None]:
    """(one line on why it died, the stage it noted last or None)."""
    returncode = self.proc.wait()
    stage = _read_tail(self._stage_path).strip() or None
    text = _read_tail(self.log_path, start=self._log_start)
    # A crash inside `toolchain.captured_stderr` leaves its capture file.
    for path in sorted(glob.glob(os.path.join(self.tmp, "hloprobe-stderr-*"))):
      text += _read_tail(path)
    message = _explain_death(returncode, text, self.xla_flags)
    self.close()
    if message.startswith("XLA rejected"):  # a flag, not the stage
      stage = None
    return message, stage

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
    shutil.rmtree(self.tmp, ignore_errors=True)

  def _end(self, kill: bool) -> None:
    if self.proc.poll() is None:
      if not kill:
        self.proc.stdin.close()
      try:
        self.proc.wait(timeout=0 if kill else 5)
      except subprocess.TimeoutExpired:
        self.proc.kill()
        self.proc.wait()
    for stream in (self.proc.stdin, self.proc.stdout):
      if not stream.closed:
        stream.close()


def _read_tail(path: str, size: int = 16384, start: int = 0) -> str:
  """The last `size` bytes of the file from byte `start` on, as text
  ("" when it cannot be read)."""
  try:
    with open(path, "rb") as f:
      f.seek(max(start, os.path.getsize(path) - size))
      return f.read().decode("utf-8", errors="replace")
  except OSError:
    return ""


def _key(xla_flags: str, lane: int) -> tuple[str, int]:
  """A pool's key of a worker: its whole XLA_FLAGS and its lane."""
  return worker_xla_flags(os.environ.get("XLA_FLAGS", ""), xla_flags), lane


class WorkerPool:
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
    preload: modules each worker imports as it starts (e.g.
      ("hloprobe.sweep.compiled",): jax), so that `start` warms a worker up while
      this process does other work.

  Attributes:
    started: how many worker processes the pool has started so far.
  """

  def __init__(self, platforms: str | None = None, preload=()):
    self._platforms, self._preload = platforms, tuple(preload)
    self._workers: dict[tuple[str, int], _Worker] = {}
    # An interrupt may come as `__exit__` starts, before it closes them:
    # then they end when the pool is collected, or at exit at the latest.
    self._finalizer = weakref.finalize(self, _end_all, self._workers)
    # Lanes call from several threads (SweepSpec.jobs): the dict under one
    # lock, each worker's pipe under its own.
    self._lock = threading.Lock()
    self._busy: dict[tuple[str, int], threading.Lock] = {}
    self._closed = False
    self.started = 0

  def call(
    self,
    function: str,
    kwargs: dict,
    xla_flags: str = "",
    timeout_s: float = 1800.0,
    lane: int = 0,
  ):
    """Runs `function(**kwargs)` in the worker for these extra XLA_FLAGS.

    Args:
      function: a name in `_FUNCTIONS` ("compile_and_run", ...).
      kwargs: picklable keyword arguments.
      xla_flags: extra XLA_FLAGS words ("" for none); the worker gets the
        XLA_FLAGS of this process's environment, then these.
      timeout_s: wall-clock limit of this call, in seconds.
      lane: which of the flag set's workers (0, 1, ...): calls on one lane
        run one after another, lanes side by side.

    Returns:
      The function's return value, unpickled.

    Raises:
      WorkerError: the worker died (a signal, an abort, XLA rejected a
        flag) or timed out, or the pool is closed; the message is one line.
      Exception: what the function raised, re-raised here.
    """
    if function not in _FUNCTIONS:
      raise ValueError(
        f"unknown worker function {function!r}; choose from {sorted(_FUNCTIONS)}"
      )
    key = _key(xla_flags, lane)
    with self._lock:
      busy = self._busy.setdefault(key, threading.Lock())
    with busy:
      return self._worker(key).call(function, kwargs, timeout_s)

  def _worker(self, key: tuple[str, int]) -> _Worker:
    """The live worker of `key`, started if needed (caller holds its lock)."""
    with self._lock:
      if self._closed:
        raise WorkerError("the worker pool was closed (an interrupt)")
      worker = self._workers.get(key)
      if worker is None or not worker.alive:
        if worker is not None:
          worker.close()
        worker = _Worker(key[0], self._platforms, self._preload)
        self._workers[key] = worker  # `close` ends it from here on
        self.started += 1
        worker.start()
      return worker

  def start(self, xla_flags: str = "", lane: int = 0) -> None:
    """Starts the worker of (these extra XLA_FLAGS, lane) if it is not
    running, without waiting for it (see `call`'s arguments)."""
    self._worker(_key(xla_flags, lane))

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


def _end_all(workers: dict) -> None:
  """SIGKILLs a pool's workers and removes their folders (idempotent)."""
  for w in list(workers.values()):
    w.close(kill=True)
  workers.clear()


def call_in_worker(
  function: str, kwargs: dict, xla_flags: str, timeout_s: float = 1800.0
):
  """Runs `function(**kwargs)` in a worker of its own (see `WorkerPool.call`)."""
  with WorkerPool() as pool:
    return pool.call(function, kwargs, xla_flags, timeout_s)


def check_environment_xla_flags() -> None:
  """XLA_FLAGS of the environment, tried in a worker before JAX starts here.

  XLA aborts the process on a flag it does not know or a value it cannot
  read (see `worker`), which would end this one without a word.

  Raises:
    InvalidArgumentError: XLA rejected a flag (the message names it).
  """
  if not os.environ.get("XLA_FLAGS", "").strip():
    return
  try:
    call_in_worker("check_xla_flags", {}, "")
  except WorkerError as e:
    if str(e).startswith("XLA rejected"):
      raise InvalidArgumentError(f"XLA_FLAGS of the environment: {e}") from None
    raise


def _check_xla_flags() -> None:
  """Starts the CPU backend: XLA parses XLA_FLAGS then (aborting if bad)."""
  from hloprobe.compile import lowering

  lowering.start_backends("cpu")


def _die_with_parent(parent: int) -> None:
  """Asks Linux to SIGKILL this process when its parent ends."""
  try:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
  except (OSError, AttributeError):
    pass  # elsewhere the closed stdin still ends the worker
  if os.getppid() != parent:  # the parent ended before prctl
    os._exit(1)


def _read_request(fd: int):
  header = os.read(fd, _HEADER.size)
  while 0 < len(header) < _HEADER.size:
    more = os.read(fd, _HEADER.size - len(header))
    if not more:
      return None
    header += more
  if not header:
    return None
  size, chunks = _HEADER.unpack(header)[0], []
  while size:
    chunk = os.read(fd, size)
    if not chunk:
      return None
    chunks.append(chunk)
    size -= len(chunk)
  return pickle.loads(b"".join(chunks))


def _reply(fd: int, status: str, value) -> None:
  """Sends (status, value) to the parent as one frame.

  An exception pickle cannot rebuild (one whose __init__ takes other
  arguments than its args, a local class) goes as a `WorkerError` saying
  `Type: message` of it; an unpicklable result as one naming the error.
  """
  try:
    payload = pickle.dumps((status, value))
    if status == "raise":
      pickle.loads(payload)
  except Exception as e:
    what = value if status == "raise" else e
    payload = pickle.dumps(
      ("raise", WorkerError(f"{type(what).__name__}: {what}"))
    )
  data = _HEADER.pack(len(payload)) + payload
  while data:
    data = data[os.write(fd, data) :]


def serve(argv: list[str]) -> None:
  """A worker's main: answers requests from stdin until it closes.

  Args:
    argv: ["-c", PARENT_PID, MODULE...]: the modules are imported before
      the first request is read (a pool's `preload`).
  """
  import importlib

  parent = int(argv[1])
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  _die_with_parent(parent)
  replies = os.dup(1)
  os.dup2(2, 1)  # stray native writes to stdout go to the log
  for module in argv[2:]:
    try:
      importlib.import_module(module)
    except Exception:  # the request that needs it raises it again
      pass
  while (request := _read_request(0)) is not None:
    function, kwargs = request
    module, attr = _FUNCTIONS[function]
    try:
      result = getattr(importlib.import_module(module), attr)(**kwargs)
    except Exception as e:  # sent back and re-raised in the parent
      _reply(replies, "raise", e)
    else:
      _reply(replies, "ok", result)
