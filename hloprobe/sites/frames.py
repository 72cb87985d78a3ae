"""A dot site's source stack, the user's program only.

JAX records the Python stack of each equation it traces, leaving out its
own frames (`jax._src.source_info_util`: `user_frames` skips the files
under jax's own folders), so a StableHLO location's call stack
(`ir.StableHloDot.frames`, innermost first) holds the program's frames,
then every frame of whoever called `jax.jit(fn).trace`: hloprobe's
lowering, its sweep, a worker's loop, and the caller of `hloprobe.sweep`.
`program_frames` keeps the frames inside the traced program: those before
the first frame of hloprobe's own machinery.

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

import os

__all__ = ["program_frames"]

# hloprobe's package folder: a frame in a file under it is hloprobe's own,
# but for the built-in cases' programs (`compile/*_cases.py`).
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CASE_FILE_SUFFIX = "_cases.py"


def _file_of(frame: str) -> str:
  """The file of a `file:line:column` frame (the file may hold ':')."""
  return frame.rsplit(":", 2)[0]


def _is_machinery(frame: str) -> bool:
  """Whether `frame` is hloprobe's own code (not a built-in case's)."""
  path = _file_of(frame)
  if not os.path.isabs(path):
    return False
  inside = os.path.commonpath([_PACKAGE, os.path.normpath(path)]) == _PACKAGE
  return inside and not path.endswith(_CASE_FILE_SUFFIX)


def program_frames(frames: tuple[str, ...]) -> tuple[str, ...]:
  """`frames` (innermost first) up to the first of hloprobe's machinery.

  E.g. ("/u/model.py:6:18", ".../hloprobe/compile/compat.py:139:11", ...,
  "/u/notebook.py:11:5") -> ("/u/model.py:6:18",). A stack with no frame
  of hloprobe (a recorded fixture, another checkout's paths) is kept
  whole; the innermost frame is always kept (a site's location).
  """
  for i, frame in enumerate(frames):
    if i and _is_machinery(frame):
      return frames[:i]
  return tuple(frames)
