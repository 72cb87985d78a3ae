"""A venv build's staging folders, and whether a cached venv's python
can start: what `venvs` checks so that an interrupted or killed build
(SIGINT, SIGKILL of the parent) leaves nothing the next run does not
clean, and a venv whose python is broken is rebuilt, not reused.

Private in intent: use the package, `hloprobe.versions`.
"""

from __future__ import annotations

import os
import re
import shutil

__all__ = ["clean_stages", "python_intact", "stage_prefix"]


def python_intact(path: str, python: str) -> bool:
  """Whether venv `path`'s `python` can start, as far as files tell: it
  exists (a link to a removed interpreter does not) and is executable, and
  the interpreter folder its pyvenv.cfg names (`home = ...`, written by
  `venv` and uv) still exists. A venv that fails this is rebuilt
  (`venvs.ensure_venv`), never reused. Runs nothing."""
  if not (os.path.isfile(python) and os.access(python, os.X_OK)):
    return False
  try:
    with open(os.path.join(path, "pyvenv.cfg"), encoding="utf-8") as f:
      lines = f.read(65536).splitlines()
  except (OSError, UnicodeDecodeError):
    return True  # no cfg to check (made by hand)
  homes = [
    l.partition("=")[2].strip()
    for l in lines
    if l.split("=")[0].strip() == "home"
  ]
  return all(os.path.isdir(h) for h in homes)


def stage_prefix(final: str) -> str:
  """The name prefix of `final`'s staging folders: `.<name>-<pid>-`."""
  return f".{os.path.basename(final)}-{os.getpid()}-"


# `.jaxlib-<V>-py<3.N>[-cpu]-<pid>-<random>[.tmp]`: a staging folder (and
# the installer's temporary folder beside it) of the process <pid>.
_STAGE_RE = re.compile(r"\.jaxlib-.+-(\d+)-[^-]+(?:\.tmp)?")


def _pid_alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:  # another user's
    return True
  return True


def clean_stages(cache_dir: str) -> list[str]:
  """Removes the staging folders of venv builds whose process is gone (a
  build killed with SIGKILL cannot remove its own); returns their names.
  A live process's folders (a build running now) are left alone."""
  try:
    names = os.listdir(cache_dir)
  except OSError:
    return []
  removed = []
  for name in names:
    m = _STAGE_RE.fullmatch(name)
    if m and not _pid_alive(int(m.group(1))):
      shutil.rmtree(os.path.join(cache_dir, name), ignore_errors=True)
      removed.append(name)
  return removed
