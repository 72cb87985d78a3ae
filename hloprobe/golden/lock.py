"""One `golden update` at a time per golden folder, and its leftovers.

The lock is an exclusive `fcntl.flock` on `.<folder>.lock` next to the
golden folder (not inside it: an update renames the folder away). It holds
the holder's pid and start time, so a waiting update can name it; the
kernel releases it when the holder ends, however it ends, and a holder
that ends normally removes the file. An update
killed between staging and swapping leaves `.<folder>.update-*` folders
beside it; the next update, holding the lock, removes them (a `.old`
folder is put back first when the golden folder itself is missing) and
says so. Both names are git-ignored.

Private in intent: use the package, `hloprobe.golden`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Iterator

from hloprobe.errors import GoldenError

__all__ = ["clean_leftovers", "golden_lock", "lock_path"]


def lock_path(golden_dir: str) -> str:
  """`.<folder>.lock` next to the golden folder."""
  parent, base = os.path.split(os.path.abspath(golden_dir))
  return os.path.join(parent, f".{base}.lock")


def _holder(fd: int) -> str:
  try:
    text = os.pread(fd, 200, 0).decode("utf-8", errors="replace").strip()
  except OSError:
    text = ""
  return text or "another process"


@contextlib.contextmanager
def golden_lock(golden_dir: str, timeout_s: float = 120.0) -> Iterator[None]:
  """Holds the golden folder's update lock for a block.

  Waits up to `timeout_s` seconds for another holder to finish.

  Raises:
    GoldenError: still held after `timeout_s`; names the holder (pid and
      start time) and the lock file.
  """
  path = lock_path(golden_dir)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  deadline = time.monotonic() + timeout_s
  fd = _acquire(path, golden_dir, deadline, timeout_s)
  try:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"process {os.getpid()} since {stamp}".encode(), 0)
    yield
  finally:
    os.unlink(path)  # still ours: a waiter re-checks the inode it locked
    os.close(fd)  # releases the lock


def _acquire(path: str, golden_dir: str, deadline: float, timeout_s: float):
  """An fd of `path` holding its flock, where `path` is still that file."""
  while True:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      holder = _holder(fd)
      os.close(fd)
      if time.monotonic() >= deadline:
        raise GoldenError(
          f"[hloprobe] {golden_dir} is being updated by {holder} "
          f"(lock {path}); waited {timeout_s:.0f} s, try again when it ends"
        ) from None
      time.sleep(0.2)
      continue
    try:
      same = os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:  # its holder removed it on release
      same = False
    if same:
      return fd
    os.close(fd)


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
