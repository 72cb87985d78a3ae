"""Reading a user's text file (a regular file of bounded size, UTF-8), and
the mode files hloprobe writes get.

Every file hloprobe reads as input (a target config, an experiments file,
a golden folder's files and MANIFEST.json) goes through `InputFile`,
so a FIFO never blocks, `/dev/zero` is never read without end and a huge
file is refused before it is read.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import secrets
import stat
from collections.abc import Callable
from typing import BinaryIO

from hloprobe.errors import HloprobeError, file_kind

__all__ = [
  "MAX_INPUT_BYTES",
  "InputFile",
  "path_part",
  "write_whole",
]

# Larger than any target config, experiments file or golden file
# (the largest golden .hlo is under 100 KiB).
MAX_INPUT_BYTES = 16 << 20


# What a path part may not hold: separators, NUL and other controls.
_NOT_IN_PART_RE = re.compile(r"[/\\\x00-\x1f\x7f]")


def path_part(name: str) -> str:
  """`name` (a case or target name) as one folder or file name part that
  stays inside the folder it is joined to: separators and control
  characters become `_`, and "", "." and ".." become "_", "_" and "__"
  (a name "../x" or "/abs" would otherwise climb out of --output_dir).
  An ordinary name ("seed_mlp", "a100") is returned as it is."""
  part = _NOT_IN_PART_RE.sub("_", name)
  if part in ("", ".", ".."):
    return part.replace(".", "_") or "_"
  return part


@dataclasses.dataclass(frozen=True)
class InputFile:
  """A file hloprobe reads as input, and how its messages name it.

  Both reads open the file without blocking and check it on its
  descriptor, so a FIFO or device is refused, never read, and at most
  `max_bytes` + 1 bytes are read.

  Attributes:
    path: the file.
    what: how messages name it, e.g. "--experiments_file='x.txt'".
    error: the HloprobeError subclass raised (InvalidArgumentError,
      TargetError, ...).
    max_bytes: the size limit in bytes.
    limit_for: what the limit is for, in the message ("module files").
  """

  path: str
  what: str
  error: type[HloprobeError]
  max_bytes: int = MAX_INPUT_BYTES
  limit_for: str = "input files"

  def read_bytes(self) -> bytes:
    """The bytes of the file, a regular file of at most `max_bytes` bytes.

    Raises:
      error: cannot open it; not a regular file; larger than `max_bytes`.
        One line, naming `what`.
    """
    what, error = self.what, self.error
    try:
      fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
      raise error(f"{what}: cannot read it ({e.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
      os.close(fd)
      raise error(
        f"{what}: {file_kind(mode)}, not a regular file; hloprobe reads input "
        "only from regular files"
      )
    with os.fdopen(fd, "rb") as f:
      data = f.read(self.max_bytes + 1)
    if len(data) > self.max_bytes:
      raise error(
        f"{what}: larger than the {self.max_bytes}-byte limit for "
        f"{self.limit_for}"
      )
    return data

  def read_text(self) -> str:
    """The UTF-8 text of the file (`read_bytes`, decoded).

    Raises:
      error: what `read_bytes` raises; not UTF-8 text. One line, naming
        `what`.
    """
    data = self.read_bytes()
    try:
      return data.decode("utf-8")
    except UnicodeDecodeError as e:
      raise self.error(
        f"{self.what}: not UTF-8 text (byte 0x{data[e.start]:02x} at "
        f"offset {e.start})"
      ) from None


def write_whole(
  path: str, write: Callable[[BinaryIO], None], prefix: str = ".tmp-"
) -> None:
  """Writes the file `path` whole or not at all, even when interrupted.

  `write(f)` fills a new file beside `path` (named `prefix` + 16 random hex
  digits, mode as `open()` makes it), which is then renamed to `path`. The
  name is drawn before the file is created (`open` mode "x", in C), inside
  the `try` that removes it, so an exception or KeyboardInterrupt at any
  point leaves no temporary file (`tempfile.mkstemp` creates the file
  before its caller can note the name).

  Raises:
    OSError: the folder cannot be written (nothing is left there).
  """
  directory = os.path.dirname(os.path.abspath(path))
  tmp = os.path.join(directory, prefix + secrets.token_hex(8))
  f = None
  try:
    f = open(tmp, "xb")  # noqa: SIM115 (closed here also when interrupted)
    write(f)
    f.close()
    os.replace(tmp, path)
  except BaseException:
    if f is not None:
      f.close()
    with contextlib.suppress(FileNotFoundError):
      os.unlink(tmp)
    raise
