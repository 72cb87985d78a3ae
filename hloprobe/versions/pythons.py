"""Which Python makes each jaxlib release's venv.

A release's wheels exist only for some Pythons (jaxlib 0.4.34: 3.10 to
3.13; 0.11.0 on: 3.12 and newer), so each venv is made with a Python that
the release supports and that this machine has:

* the interpreters found here (`find_pythons`): this one (its base
  interpreter when it runs in a venv), each `python3.N` on PATH, and
  `$PYENV_ROOT/versions/*/bin/python3` (else `~/.pyenv/versions/...`);
  one that does not run, or lacks `venv` or `ensurepip`, is left out (a
  pyenv shim of a version not selected fails this way);
* the releases with a wheel for each of their versions, from the package
  index through pip's own query (`pip index versions jaxlib
  --python-version 3.N`: seconds), asked only when needed, once per
  version;
* `Pythons.choose`: the running interpreter when the release has a wheel
  for it, else the newest version found that has one.

`--python=PATH` names the one interpreter to use instead.

Private in intent: use the package, `hloprobe.versions`.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Sequence

from hloprobe.versions import venvs

__all__ = [
  "Interpreter",
  "Pythons",
  "candidate_paths",
  "find_pythons",
  "probe",
  "running_python",
  "survey",
]

# Run by each candidate: its version, then its own sys.executable (a pyenv
# shim execs the real interpreter, which reports its own path).
_PROBE = (
  "import sys, venv, ensurepip; "
  "print('%d.%d' % sys.version_info[:2]); print(sys.executable)"
)
_NAME_RE = re.compile(r"python3\.\d+")


@dataclasses.dataclass(frozen=True, slots=True)
class Interpreter:
  """A Python that can make venvs.

  Attributes:
    path: the interpreter to run `-m venv` with (the path it reports as
      its `sys.executable`, so a pyenv shim is resolved).
    version: its "major.minor", e.g. "3.13".
  """

  path: str
  version: str


class Pythons:
  """The Pythons that can make venvs here, and what the index has for each.

  The index is asked about a Python version only when needed, once
  (`wheels`): `choose` asks in its order of preference and stops at the
  first version with a wheel, so the common case costs one query. Ask from
  one thread (it keeps the answers).

  Attributes:
    found: the usable interpreters, this process's first; `--python`'s
      alone when given.
    running: this process's interpreter when it is among `found`, else None.
    problems: what went wrong finding them, one line each (a `--python`
      that is no usable Python).
    forced: whether `found` is `--python`'s interpreter.
  """

  def __init__(
    self,
    found: Sequence[Interpreter],
    running: Interpreter | None,
    wheels_for: Callable[[str], Iterable[str]],
    problems: Sequence[str] = (),
    forced: bool = False,
  ):
    """See the attributes; `wheels_for(python_version)` gives the jaxlib
    releases with a wheel for that Python ("3.13"), or raises
    `venvs.VenvError` when it cannot say."""
    self.found = tuple(found)
    self.running = running
    self.problems = tuple(problems)
    self.forced = forced
    self._wheels_for = wheels_for
    self._wheels: dict[str, frozenset[str]] = {}
    self._failed: dict[str, str] = {}

  def wheels(self, version: str) -> frozenset[str]:
    """The jaxlib releases with a wheel for Python `version`; empty when
    the index could not be asked (`failed` says why)."""
    if version not in self._wheels:
      try:
        self._wheels[version] = frozenset(self._wheels_for(version))
      except venvs.VenvError as e:
        self._wheels[version] = frozenset()
        self._failed[version] = str(e)
    return self._wheels[version]

  def failed(self) -> tuple[str, ...]:
    """The index queries that failed so far, one line each."""
    return tuple(f"Python {v}: {why}" for v, why in self._failed.items())

  def versions(self) -> tuple[str, ...]:
    """The Python versions found, oldest first, each once."""
    found = {p.version for p in self.found}
    return tuple(sorted(found, key=venvs.version_key))

  def choose(self, jaxlib: str) -> Interpreter:
    """The interpreter to make `jaxlib`'s venv with: the running one when
    the release has a wheel for it, else the first found of the newest
    version that has one.

    Raises:
      venvs.VenvError: no interpreter here has a wheel of that release;
        the message names the Python versions found.
    """
    running = self.running
    if running is not None and jaxlib in self.wheels(running.version):
      return running
    for version in reversed(self.versions()):
      if jaxlib in self.wheels(version):
        return next(p for p in self.found if p.version == version)
    raise venvs.VenvError(self._none_fits(jaxlib))

  def _none_fits(self, jaxlib: str) -> str:
    if not self.found:
      return "; ".join(self.problems) or "no Python found here"
    if self.forced:
      where = f"{self.found[0].version} (--python={self.found[0].path})"
    else:
      where = (
        f"{', '.join(self.versions())} (the Pythons found here; "
        "--python=PATH names another)"
      )
    words = f"the package index has no jaxlib {jaxlib} wheel for Python {where}"
    return "; ".join([words, *self.failed()])

  def releases(self) -> tuple[str, ...]:
    """Every release with a wheel for some Python found, oldest first
    (asks the index about every version found)."""
    every = set().union(*(self.wheels(v) for v in self.versions()))
    return tuple(sorted(every, key=venvs.version_key))


def running_python() -> Interpreter:
  """This process's interpreter; its base one when it runs in a venv (a
  venv is made from the base interpreter)."""
  import sys

  base = getattr(sys, "_base_executable", None) or sys.executable
  return Interpreter(base, venvs.this_python())


def probe(path: str, timeout_s: float = 60.0) -> Interpreter:
  """The interpreter at `path`, if it runs and has `venv` and `ensurepip`.

  Raises:
    venvs.VenvError: it does not, with the reason in one line.
  """
  try:
    proc = subprocess.run(
      [path, "-I", "-c", _PROBE],
      capture_output=True,
      text=True,
      timeout=timeout_s,
      check=False,
    )
  except (OSError, subprocess.TimeoutExpired) as e:
    raise venvs.VenvError(f"{path} does not run: {e}") from None
  said = proc.stdout.split("\n")
  if proc.returncode != 0 or not re.fullmatch(r"3\.\d+", said[0]):
    why = venvs.last_line(proc.stderr or proc.stdout)
    raise venvs.VenvError(
      f"{path} is no Python 3 with venv and ensurepip "
      f"(exit status {proc.returncode}: {why})"
    )
  reported = said[1].strip() if len(said) > 1 else ""
  return Interpreter(reported or path, said[0])


def candidate_paths(
  path_env: str, pyenv_root: str | None, home: str
) -> list[str]:
  """The interpreters to try, in order: each `python3.N` on `path_env`
  (a PATH value), then `<pyenv_root or home/.pyenv>/versions/*/bin/python3`,
  by version. They are only paths; `probe` says which run."""
  found = []
  for folder in path_env.split(os.pathsep):
    if not folder:
      continue
    for path in sorted(glob.glob(os.path.join(folder, "python3.*"))):
      if _NAME_RE.fullmatch(os.path.basename(path)):
        found.append(path)
  root = pyenv_root or os.path.join(home, ".pyenv")
  pyenv = glob.glob(os.path.join(root, "versions", "*", "bin", "python3"))
  found += sorted(pyenv, key=_version_in_path)
  return found


def _version_in_path(path: str) -> tuple[int, ...]:
  """The numbers in a pyenv version folder's name, to order them. Not
  `packaging.version`: pyenv names are not PEP 440 versions
  ("pypy3.10-7.3.12", "miniconda3-latest")."""
  name = os.path.basename(os.path.dirname(os.path.dirname(path)))
  return tuple(int(x) for x in re.findall(r"\d+", name))


def find_pythons(
  paths: Iterable[str],
  running: Interpreter,
  probe_one: Callable[[str], Interpreter] = probe,
) -> tuple[Interpreter, ...]:
  """`running` first, then each of `paths` that `probe_one` accepts; one
  per real interpreter (the path it reports, symbolic links resolved)."""
  found, seen = [running], {os.path.realpath(running.path)}
  for path in paths:
    if os.path.realpath(path) in seen:
      continue
    try:
      interpreter = probe_one(path)
    except venvs.VenvError:
      continue
    real = os.path.realpath(interpreter.path)
    if real not in seen:
      seen.add(real)
      found.append(interpreter)
  return tuple(found)


def survey(python: str | None) -> Pythons:
  """The Pythons here (or `--python`'s); the index is asked later, per
  version (`venvs.index_versions("jaxlib", python_version=...)`).

  Args:
    python: `--python`, a path, or None to look for interpreters.

  Never raises: a `--python` that is no usable Python is in
  `Pythons.problems` (and `found` is then empty).
  """

  def wheels_for(version: str) -> Sequence[str]:
    return venvs.index_versions("jaxlib", python_version=version)

  running = running_python()
  problems: list[str] = []
  if python is not None:
    try:
      found: tuple[Interpreter, ...] = (probe(python),)
    except venvs.VenvError as e:
      found, problems = (), [f"--python={python}: {e}"]
  else:
    paths = candidate_paths(
      os.environ.get("PATH", ""),
      os.environ.get("PYENV_ROOT"),
      os.path.expanduser("~"),
    )
    found = find_pythons(paths, running)
  mine = os.path.realpath(running.path)
  same = [p for p in found if os.path.realpath(p.path) == mine]
  return Pythons(
    found, same[0] if same else None, wheels_for, problems, python is not None
  )
