"""A user case's shell: the `Case` record loaded in a worker, its program
left there.

A user's case (`module:factory`) is the user's code: its module and
factory may loop forever, abort, call `sys.exit`/`os._exit` or print. The
sweep's process plans with the record's fields only (`CaseShellRequest`,
under the case timeout). The worker that loaded it keeps the `Case` and
goes on to make its inputs and references (`case_loader`, `guarded`):
one process starts and imports jax for both; the compile workers load it
again by its words (`compiled`).

Private in intent: use the package, `hloprobe.engine`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import sys

from hloprobe.compile import Case, get_case
from hloprobe.errors import CaseError
from hloprobe.runtime import Request, WorkerError, WorkerPool

__all__ = [
  "CaseShellRequest",
  "RunsInWorkers",
  "case_loader",
  "loaded_case",
  "loaded_in_worker",
  "source_folder",
  "with_search_path",
]


@dataclasses.dataclass(frozen=True)
class CaseShellRequest(Request):
  """Loads a case by its words in a worker; returns its shell.

  `search_path` is the sweep process's `sys.path` (`with_search_path`).
  The shell is the `Case` record with `fn` and `make_inputs` replaced by
  a `RunsInWorkers` (they may not pickle, and they are the user's code)
  that keeps the folder of the file defining `fn` (`_case_folder`, for
  the cache's relocatable paths):
  the sweep's process plans with its fields (name, axes, mesh) and never
  runs the program; this worker keeps the `Case` (`loaded_case`), the
  compile workers load it again by `source`.
  """

  source: str
  search_path: tuple[str, ...] = ()

  def run(self, memo: dict) -> Case:
    with_search_path(self.search_path)
    case = loaded_case(memo, self.source)
    stub = RunsInWorkers(_case_folder(case))
    return dataclasses.replace(case, fn=stub, make_inputs=stub)


def loaded_case(memo: dict, source: str) -> Case:
  """`get_case(source)` in a worker, once per worker (kept in its memo)."""
  key = ("case", source)
  if key not in memo:
    memo[key] = get_case(source)
  return memo[key]


def with_search_path(paths: tuple[str, ...]) -> None:
  """Puts the sweep process's `sys.path` entries this worker lacks in
  front of its own, in their order: a case module found there (a folder a
  program added at run time) is found here too."""
  missing = [p for p in paths if p not in sys.path]
  sys.path[:0] = missing


@dataclasses.dataclass(frozen=True)
class RunsInWorkers:
  """A case shell's `fn` and `make_inputs` (see `CaseShellRequest`).

  Attributes:
    folder: the folder of the file defining the case's `fn`, or None.
  """

  folder: str | None

  def __call__(self, *args, **kwargs):
    del args, kwargs
    raise CaseError(
      "a user case's program runs in hloprobe's worker processes only"
    )


def source_folder(case: Case) -> str | None:
  """The folder of the file defining the case's `fn` (`_case_folder`), as
  the worker that loaded a user case's shell found it."""
  if isinstance(case.fn, RunsInWorkers):
    return case.fn.folder
  return _case_folder(case)


def _case_folder(case: Case) -> str | None:
  """The folder of the file defining the case's function, or None when
  it has none (a builtin, a C function)."""
  try:
    path = inspect.getsourcefile(inspect.unwrap(case.fn))
  except (TypeError, ValueError):
    return None
  return os.path.dirname(os.path.abspath(path)) if path else None


# What the server of a sweep's forked workers imports once for them all
# (`runtime.Forker`; `WorkerPool`'s `forked`): this stage, whose modules
# the case's worker (this loader's) and the compile lanes (`executor`)
# run, jax and the stages below with it. `hloprobe.__main__` starts the
# server with the same, before the command line is imported.
FORK_PRELOAD = ("hloprobe.engine",)


@contextlib.contextmanager
def case_loader():
  """A `WorkerPool` to load user cases in (`loaded_in_worker`).

  Closed (its worker killed) on an exception, and at once when it
  started no worker. Else it is left running for the sweep: its worker
  keeps the cases it loaded and makes their inputs, references and
  predictions (`guarded.setup_for`, `SweptCase.loader`), so a user case
  costs no second worker start and jax import. It ends when the plan
  holding it is collected (the pool's finalizer), at exit at the latest,
  or when an interrupt stops one of its calls (`guarded`).
  """
  pool = WorkerPool(forked=FORK_PRELOAD)
  try:
    yield pool
  except BaseException:
    pool.close(kill=True)
    raise
  if not pool.started:
    pool.close()


def loaded_in_worker(
  pool: WorkerPool,
  words: str,
  timeout_s: float,
  inputs: str | None,
  batch_arg: str | None = None,
):
  """`get_case(words, inputs, batch_arg)`; a user case's (`module:factory`) shell
  loaded in a worker of `pool`.

  Raises:
    CaseError: loading it failed, or its worker died or ran past
      `timeout_s` (one line naming the case).
  """
  if ":" not in words:
    return get_case(words, inputs, batch_arg)
  try:
    request = CaseShellRequest(words, tuple(sys.path))
    return pool.call(request, timeout_s=timeout_s)
  except WorkerError as e:
    how = (
      f"ran past --case_timeout={timeout_s:g} s"
      if e.timed_out
      else f"ended hloprobe's worker: {e}"
    )
    raise CaseError(f"case {words!r}: loading it {how}") from None
