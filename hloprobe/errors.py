"""The one family of errors hloprobe raises for domain failures."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = [
  "CaseError",
  "EmulationError",
  "GoldenError",
  "HloParseError",
  "HloprobeError",
  "TargetError",
  "ToolchainError",
  "InvalidArgumentError",
  "write_or_fail",
]

_T = TypeVar("_T")


class HloprobeError(Exception):
  """Raised for any failure hloprobe can name; the base of the family."""


class InvalidArgumentError(HloprobeError):
  """Raised when a user-supplied value (precision, batch size, flag) is bad.

  The command line exits 2 for it. Named apart from absl's `app.UsageError`,
  which the command line also handles.
  """


class CaseError(InvalidArgumentError):
  """Raised when a case name is unknown."""


class TargetError(InvalidArgumentError):
  """Raised when a target name or target config cannot be used."""


class ToolchainError(HloprobeError):
  """Raised when the CUDA toolchain (ptxas) cannot build a target's kernels."""


class HloParseError(HloprobeError):
  """Raised when HLO or StableHLO text is malformed."""


class GoldenError(HloprobeError):
  """Raised when a golden file is missing, corrupt or cannot be written."""


class EmulationError(HloprobeError):
  """Raised when a case or dot cannot be emulated (unsupported primitive)."""


def write_or_fail(what: str, write: Callable[[], _T]) -> _T:
  """Returns `write()`; an OSError becomes one `cannot write` error.

  The command line calls it after results are printed, so they stay
  printed, and exits 1 for the error.

  Args:
    what: the thing written, as a user names it ("--plot=row0.png").
    write: writes the file(s) and returns what the caller wants back.

  Raises:
    HloprobeError: "cannot write <what>: <the OSError>", from the OSError.
  """
  try:
    return write()
  except OSError as e:
    raise HloprobeError(f"cannot write {what}: {e}") from e
