"""The one family of errors hloprobe raises for domain failures."""

from __future__ import annotations

import difflib
import stat
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

__all__ = [
  "CaseError",
  "EmulationError",
  "ExecutionError",
  "GoldenError",
  "HloParseError",
  "HloprobeError",
  "ModuleFileError",
  "TargetError",
  "ToolchainError",
  "TraceError",
  "XlaFlagsError",
  "InvalidArgumentError",
  "counted",
  "did_you_mean",
  "file_kind",
  "first_line",
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


class ModuleFileError(CaseError):
  """Raised when a module file given as a case cannot be read: its message
  is one line naming the file and what is wrong (a truncated proto, HLO text
  with a syntax error, over the size limit, not a module at all)."""


class TargetError(InvalidArgumentError):
  """Raised when a target name or target config cannot be used."""


class XlaFlagsError(InvalidArgumentError):
  """Raised when XLA rejects an XLA_FLAGS word (an unknown flag, or a value
  it cannot read); the message names the flag and the XLA_FLAGS."""


class ToolchainError(HloprobeError):
  """Raised when the CUDA toolchain cannot build a target's kernels (ptxas)
  or trace its program (cuDNN's library, for cuDNN attention)."""


class HloParseError(HloprobeError):
  """Raised when HLO or StableHLO text is malformed."""


class GoldenError(HloprobeError):
  """Raised when a golden file is missing, corrupt or cannot be written."""


class EmulationError(HloprobeError):
  """Raised when a case or dot cannot be emulated (unsupported primitive)."""


class TraceError(HloprobeError):
  """Raised when jax cannot trace the program: its function raised while
  jax made its jaxpr (`jax.jit(fn).trace`), before any lowering or XLA
  pass. The function's own error is `__cause__`, and the message its first
  line.

  No candidate fix is tried on such an error (`verify.candidate_fixes`):
  jax's tracing reads a matmul precision (`jax.default_matmul_precision`)
  only as the dots' precision parameters in the jaxpr, and rejects a
  DotAlgorithmPreset the platform lacks while lowering, not while tracing
  (dot_general's CPU lowering: "The precision 'F16_F16_F32' is not
  supported by dot_general on CPU", jax 0.12.0.1 and 0.10.2); XLA_FLAGS
  are read by XLA alone. Only a function that reads the precision itself, and raises
  under one but not another, could trace under a fix's (`verify --fix=...`
  tries one).
  """


class ExecutionError(HloprobeError):
  """Raised when an HLO module cannot be executed with the arguments given
  (wrong count, shape or dtype); an op the executor cannot compute is no
  error but a `NotExecuted` record (`hloprobe.execute`)."""


def counted(n: int, noun: str, plural: str | None = None) -> str:
  """A count and its noun, the noun plural unless the count is 1: "1
  config", "0 configs", "2 configs" (`plural`: the plural where it is not
  noun + "s")."""
  return f"{n} {noun if n == 1 else plural or noun + 's'}"


def file_kind(mode: int) -> str:
  """What a file that is not a regular one is, in words for a message:
  "a FIFO", "a symbolic link" (from `os.lstat`), "a directory", "a
  socket", "a character device", "a block device"; "another kind of
  file" otherwise.

  Args:
    mode: an `st_mode` (`os.stat`, `os.lstat` or `os.fstat`).
  """
  for test, words in (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
  ):
    if test(mode):
      return words
  return "another kind of file"


def did_you_mean(
  word: str, choices: Iterable[str], aliases: Mapping[str, str] | None = None
) -> str:
  """The words an unknown name's error puts first: "did you mean 'x'? "
  for the nearest choice, or "" where none is near.

  The nearest is, in order: an alias of the word (`aliases`, compared in
  lower case: "tf32" -> "tensorfloat32"), a choice equal in lower case
  ("A100" -> "a100"), else difflib's closest at a ratio of 0.75 or more
  ("explian" -> "explain", "seed-mlp" -> "seed_mlp").
  """
  choices = list(choices)
  low = word.lower()
  alias = (aliases or {}).get(low)
  if alias is None:
    alias = next((c for c in choices if c.lower() == low), None)
  if alias is None:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.75)
    alias = close[0] if close else None
  return f"did you mean {alias!r}? " if alias and alias != word else ""


def first_line(e: BaseException, *, with_type: bool = True) -> str:
  """An exception in one line, for error fields and one-line messages.

  Args:
    e: any exception; its `str` may span many lines (XLA's status messages
      and tracebacks of a failed compile do).
    with_type: prefix the exception's class name, e.g. "ValueError: bad".

  Returns:
    The first line of `str(e)`, stripped, as "Type: line" (with_type) or
    "line"; when the message is empty, just the class name, e.g.
    "KeyboardInterrupt"; a `TraceError`'s, its cause's (the function's own
    error), or without one (pickled from a worker) its message, which is
    that line. Never raises: where `str(e)` does (a user's exception), the
    class name and "(its message cannot be read)".
  """
  if isinstance(e, TraceError):
    if e.__cause__ is not None:
      return first_line(e.__cause__, with_type=with_type)
    with_type = False  # its message is its cause's line, type and all
  name = type(e).__name__
  try:
    lines = str(e).strip().splitlines()
  except Exception:  # a user's __str__ that raises
    return f"{name} (its message cannot be read)"
  text = lines[0].strip() if lines else ""
  if not text:
    return name
  return f"{name}: {text}" if with_type else text


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
