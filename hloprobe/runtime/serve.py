"""A worker process's side: the request records it runs and its main loop.

A request is a frozen record (a subclass of `Request`) that the parent
pickles whole; pickle names its class by module and qualified name, so the
worker imports the caller's module as it unpickles it, and the runtime
needs no table of function names (and imports no stage above it). The
worker calls `request.run(memo)`: `memo` is one dict per worker process,
for what a request makes once per process (e.g. a user case resolved from
its source words), owned by `serve`'s loop, not by a module global.

Requests and replies travel as length-prefixed pickles on the worker's
stdin and on a private copy of its stdout (native writes to fd 1 go to its
stderr log). Before each stage of its work a worker notes the stage's name
in a file of its folder (`Request.note_stage`), so its death names the stage it
died in.

Private in intent: use the package, `hloprobe.runtime`.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pickle
import signal
import struct
import threading
import time

from hloprobe.runtime.worker_error import WorkerError

__all__ = [
  "CheckXlaFlagsRequest",
  "Request",
  "main_code",
  "serve",
]

HEADER = struct.Struct(">Q")
# Where a worker notes the stage it is in (a file in its own folder).
STAGE_FILE_ENV = "HLOPROBE_WORKER_STAGE_FILE"


class Request:
  """Work a worker process does: a picklable record with a `run` method.

  Subclasses are frozen dataclasses defined at module level in the
  caller's stage (e.g. `sweep.compiled.CompileRequest`), so that pickle
  finds them by name in the worker.
  """

  def run(self, memo: dict):
    """Does the work in the worker; returns a picklable value.

    Args:
      memo: the worker process's own dict, kept between requests.

    Raises:
      NotImplementedError: here; each subclass defines its own.
    """
    raise NotImplementedError(type(self).__name__)

  @staticmethod
  def note_stage(name: str) -> None:
    """In a worker, records that the request's stage `name` starts (read
    if the worker dies: its `WorkerError` names the stage).

    A no-op outside a worker process.
    """
    path = os.environ.get(STAGE_FILE_ENV)
    if path:
      with open(path, "w") as f:
        f.write(name)


@dataclasses.dataclass(frozen=True, slots=True)
class CheckXlaFlagsRequest(Request):
  """Starts the CPU backend, so XLA parses XLA_FLAGS (aborting if bad)."""

  def run(self, memo: dict) -> None:
    del memo
    from hloprobe.compile import start_backends

    start_backends("cpu")


def main_code() -> str:
  """The `python -c` program of a worker: `serve(sys.argv)` of this module."""
  return f"import sys, {__name__} as m; m.serve(sys.argv)"


# Seconds between two looks at this worker's parent (`_die_with_parent`).
_PARENT_POLL_S = 0.5


def _die_with_parent(parent: int) -> None:
  """Ends this process (`os._exit(1)`) once its parent process has ended,
  busy or not: a daemon thread looks every `_PARENT_POLL_S` seconds
  whether the parent is still `os.getppid()` (a child whose parent ends
  is given another: init or a subreaper). An idle worker also ends as its
  stdin closes.

  Not Linux's `prctl(PR_SET_PDEATHSIG)`: that is sent when the *thread*
  that forked the child ends, not its process (prctl(2)), and a pool
  starts workers from whatever thread asks (a lane's, a rows request's,
  explain's answer thread): a worker was SIGKILLed as that thread ended,
  and its next call failed (2026-12-06, calls_same_results_test). A
  thread of the pool's own that started every worker, tried before, was
  ended by `concurrent.futures` as the main thread returned, while
  another thread still used the pool."""
  if os.getppid() != parent:  # the parent ended already
    os._exit(1)

  def watch():
    while os.getppid() == parent:
      time.sleep(_PARENT_POLL_S)
    os._exit(1)

  threading.Thread(target=watch, name="hloprobe-parent", daemon=True).start()


def _read_frame(fd: int) -> bytes | None:
  """One length-prefixed frame from `fd`; None once it closes."""
  header = os.read(fd, HEADER.size)
  while 0 < len(header) < HEADER.size:
    more = os.read(fd, HEADER.size - len(header))
    if not more:
      return None
    header += more
  if not header:
    return None
  size, chunks = HEADER.unpack(header)[0], []
  while size:
    chunk = os.read(fd, size)
    if not chunk:
      return None
    chunks.append(chunk)
    size -= len(chunk)
  return b"".join(chunks)


def _reply(fd: int, status: str, value, error_type: type) -> None:
  """Sends (status, value) to the parent as one frame.

  An exception pickle cannot rebuild (one whose __init__ takes other
  arguments than its args, a local class) goes as an `error_type` saying
  `Type: message` of it; an unpicklable result as one naming the error.
  """
  try:
    payload = pickle.dumps((status, value))
    if status == "raise":
      pickle.loads(payload)
  except Exception as e:
    what = value if status == "raise" else e
    error = error_type(f"{type(what).__name__}: {what}")
    payload = pickle.dumps(("raise", error))
  data = HEADER.pack(len(payload)) + payload
  while data:
    data = data[os.write(fd, data) :]


def serve(argv: list[str]) -> None:
  """A worker's main: answers `Request`s from stdin until it closes.

  Args:
    argv: ["-c", PARENT_PID, MODULE...]: the modules (a pool's `preload`,
      named by the parent from its request classes) are imported before
      the first request is read, so the worker imports jax while the
      parent works.
  """
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
  memo: dict = {}
  while (frame := _read_frame(0)) is not None:
    try:
      result = pickle.loads(frame).run(memo)
    except Exception as e:  # sent back and re-raised in the parent
      _reply(replies, "raise", e, WorkerError)
    else:
      _reply(replies, "ok", result, WorkerError)
