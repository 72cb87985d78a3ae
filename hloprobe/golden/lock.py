"""One `golden update` at a time per golden folder, and its leftovers.

The lock is `filelock.FileLock` on `.<folder>.lock` next to the golden
folder (not inside it: an update renames the folder away): an exclusive
`flock` the kernel releases when the holder ends, however it ends. A
holder that ends normally removes the file before releasing it; a waiter
that then locks the removed file tries the path again (filelock checks
that the file it locked is still linked; hloprobe did this by hand with
fcntl before). The
holder writes its pid and start time into the file as it acquires
(filelock's `on_acquired`), so a waiting update can name it. An update
killed between staging and swapping leaves `.<folder>.update-*` folders
beside it; the next update, holding the lock, removes them (a `.old`
folder is put back first when the golden folder itself is missing) and
says so. Both names are git-ignored.

Private in intent: use the package, `hloprobe.golden`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from collections.abc import Iterator

import filelock

from hloprobe.errors import GoldenError, file_kind
from hloprobe.ir import InputFile

__all__ = ["clean_leftovers", "golden_lock", "lock_path"]

# How often a waiting update tries the lock again, in seconds.
_POLL_S = 0.2


def lock_path(golden_dir: str) -> str:
  """`.<folder>.lock` next to the golden folder."""
  parent, base = os.path.split(os.path.abspath(golden_dir))
  return os.path.join(parent, f".{base}.lock")


def _holder(path: str) -> str:
  """What the holder wrote into the lock file, e.g. "process 123 since
  2026-12-02 07:00:00"; "another process" when it cannot be read (read
  as input files are, `ir.InputFile`: a FIFO put in its place is
  not waited on)."""
  try:
    data = InputFile(path, path, GoldenError, 4096).read_bytes()
  except GoldenError:
    data = b""
  return data.decode("utf-8", "replace").strip()[:200] or "another process"


def _write_holder(fd: int) -> None:
  """filelock's `on_acquired`: this process's pid and the time, into the
  lock file it now holds."""
  stamp = time.strftime("%Y-%m-%d %H:%M:%S")
  os.ftruncate(fd, 0)
  os.pwrite(fd, f"process {os.getpid()} since {stamp}".encode(), 0)


@contextlib.contextmanager
def golden_lock(golden_dir: str, timeout_s: float = 120.0) -> Iterator[None]:
  """Holds the golden folder's update lock for a block.

  Waits up to `timeout_s` seconds for another holder to finish.

  Raises:
    GoldenError: still held after `timeout_s`; names the holder (pid and
      start time) and the lock file. The lock file is something other
      than a regular file (a FIFO, a link, a folder: filelock's lock and
      the holder's line fail on it).
  """
  path = lock_path(golden_dir)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with contextlib.suppress(FileNotFoundError):
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
      raise GoldenError(
        f"[hloprobe] the golden lock {path} is {file_kind(mode)}, not a regular "
        "file; remove it"
      )
  lock = filelock.FileLock(
    path, poll_interval=_POLL_S, on_acquired=_write_holder
  )
  try:
    lock.acquire(timeout=timeout_s)
  except filelock.Timeout:
    raise GoldenError(
      f"[hloprobe] {golden_dir} is being updated by {_holder(path)} "
      f"(lock {path}); waited {timeout_s:.0f} s, try again when it ends"
    ) from None
  try:
    yield
  finally:
    # filelock keeps a Unix lock file after release; this one goes, still
    # held (a waiter that then locks the removed file sees it unlinked and
    # opens the path again: filelock's `_finalize_locked_fd`).
    with contextlib.suppress(FileNotFoundError):
      os.unlink(path)
    lock.release()


def clean_leftovers(golden_dir: str) -> list[str]:
  """Removes what killed updates left; call holding `golden_lock`.

  Returns one line per folder dealt with, e.g. "removed .golden.update-x1
  (left by an interrupted update)".
  """
  parent, base = os.path.split(os.path.abspath(golden_dir))
  if not os.path.isdir(parent):
    return []
  left = sorted(
    n for n in os.listdir(parent) if n.startswith(f".{base}.update-")
  )
  done = []
  for name in left:
    path = os.path.join(parent, name)
    if name.endswith(".old") and not os.path.exists(golden_dir):
      os.rename(path, golden_dir)
      done.append(f"restored {name} as {base} (an update died mid-swap)")
    else:
      shutil.rmtree(path, ignore_errors=True)
      done.append(f"removed {name} (left by an interrupted update)")
  return done
