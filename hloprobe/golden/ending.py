"""A golden check that a case's code ends is a failure, never exit 0.

Issue 27 item 3: a case whose factory, function or inputs called
`os._exit(0)` (or `sys.exit(0)`) while it ran in hloprobe's own process
ended `golden check` with status 0 and no output: a false CI pass. Two
things stop that:

  - the check counts: `snapshot.sweep_snapshot` knows the configs it
    planned, and a config that reports nothing, or a sweep of none, is
    not ok (`CheckResult.planned`, `unreported`);
  - `case_cannot_end`: while a golden command runs case code in this
    process (loading the cases, the float64 reference), `os._exit` raises
    instead of ending it, and a `SystemExit` that reaches it becomes a
    `GoldenError`: one line, exit status 1. Worker processes are not
    touched: a worker that ends fails its configs (`WorkerError`), which
    the count sees.

`os._exit` is patched for the block's length and restored in `finally`
(the one way to stop a Python-level call of it in this process; a C
`exit()` or a signal is not stopped, but never exits 0 unnoticed by the
count either when it happens in a worker).

Private in intent: use the package, `hloprobe.golden`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from hloprobe.errors import GoldenError

__all__ = ["CaseEndedError", "case_cannot_end"]


class CaseEndedError(GoldenError):
  """Raised where a case's code called `os._exit` during a golden command
  (in place of ending the process)."""


@contextlib.contextmanager
def case_cannot_end(what: str) -> Iterator[None]:
  """Inside, case code cannot end this process silently.

  Args:
    what: the command, for the one line, e.g. "golden check".

  Raises:
    CaseEndedError: from `os._exit(status)` called inside (where it is
      called: a case loader or the reference may turn it into that
      config's failure, which fails the check).
    GoldenError: a `SystemExit` raised inside and not caught there.
  """
  real = os._exit

  def refused(status: int) -> None:
    raise CaseEndedError(
      f"[hloprobe] {what}: a case called os._exit({status}); it cannot end "
      "the check"
    )

  os._exit = refused
  try:
    yield
  except SystemExit as e:
    raise GoldenError(
      f"[hloprobe] {what}: a case called sys.exit({e.code!r}); the check "
      "has no verdict: FAILED"
    ) from None
  finally:
    os._exit = real
