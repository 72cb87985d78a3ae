"""Cached virtualenvs, one per jaxlib version, for cross-version sweeps.

Each version gets `<cache_dir>/jaxlib-<V>-py<3.N>/` (or
`jaxlib-<V>-py<3.N>-cpu/` for CPU-only sweeps: no plugin, no nvcc), a
virtualenv made by a Python 3.N that the release has wheels for
(`pythons.Pythons.choose`), holding jax==V and jaxlib==V, the CUDA 12 PJRT
plugin of the same version where the package index has one
(`jax-cuda12-plugin`, `jax-cuda12-pjrt`; compile-only GPU targets need it),
the `nvidia-cuda-nvcc-cu12` wheel (its ptxas builds GPU kernels) and
hloprobe's own run-time needs (`_RUNTIME`: absl-py, tabulate, packaging,
platformdirs, tqdm, filelock). hloprobe itself is not
installed: it runs from this source tree (`run.py`).

The venv is made by uv (`uv venv`, then `uv pip install`; the `uv` PyPI
package's binary, `uv.find_uv_bin`): it resolves and downloads in
parallel and links wheels out of its one cache, shared by every venv (and
the user's other uv projects), where `venv` + `pip` copied each venv's
1 GiB of wheels, minutes each (`make bench`'s `venv` line measures the
two). uv reads its own configuration (`UV_INDEX_URL`, `uv.toml`), not
pip's; `PIP_INDEX_URL`, `PIP_EXTRA_INDEX_URL` and `PIP_FIND_LINKS` in the
environment are passed on as their uv names, unless those are set. Without
the uv package (an environment that did not install hloprobe's
dependencies) the venv is made by `venv` + `pip` as before; the venv is the
same either way (its marker says which made it).

A venv is built in a temporary folder beside its final place and renamed
into place only after the install succeeded and `hloprobe-venv.json` (what
was installed) is written, so a folder with that file is complete and is
reused as is; nothing else is ever written into it. A failed install leaves
nothing behind and says why in one line (e.g. "no jaxlib==0.4.1 wheel for
Python 3.11").

The jaxlib of the running interpreter needs no venv: `running_venv`.

Which versions exist comes from the package index, through pip's own query
(`pip index versions NAME [--python-version 3.N]`): uv has no command that
lists a package's versions for a given Python, so that stays pip's.

Private in intent: use the package, `hloprobe.versions`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import sys
import tempfile

from packaging.version import Version

from hloprobe.versions.children import Children
from hloprobe.versions.install import (
  INSTALLERS,
  NO_MATCH_RE,
  VenvError,
  build,
  last_line,
  pip,
  unreachable_index,
  uv_binary,
)
from hloprobe.versions.stages import clean_stages, python_intact, stage_prefix

__all__ = [
  "INSTALLERS",
  "MARKER",
  "RECIPE",
  "Venv",
  "VenvError",
  "cached_venvs",
  "default_cache_dir",
  "ensure_venv",
  "find_venv",
  "index_versions",
  "last_line",
  "requirements_for",
  "running_venv",
  "this_python",
  "uv_binary",
  "version_key",
]

MARKER = "hloprobe-venv.json"
_PLUGIN = ("jax-cuda12-plugin", "jax-cuda12-pjrt")
# jaxlib wheels before 0.4.26 were built against NumPy 1 and fail to import
# under NumPy 2 ("A module that was compiled using NumPy 1.x cannot be run
# in NumPy 2"); measured here with jaxlib 0.4.23.
_NUMPY2_FROM = "0.4.26"
# jax before 0.4.36 finds ptxas by `nvidia.cuda_nvcc.__file__`, which is
# None from nvidia-cuda-nvcc-cu12 12.9 on (a namespace package), and fails
# at import (jax/_src/lib/__init__.py `_try_cuda_nvcc_import`, measured
# with jax 0.4.35); 12.8 still has the __init__.py.
_NVCC_FILE_FROM = "0.4.36"
# Bumped whenever `requirements_for` or the folder's layout changes: a
# venv made by another recipe is made again. 3: the folder and marker name
# the Python that made the venv; 4: hloprobe's own run-time needs grew
# (`_RUNTIME`).
RECIPE = 4
# What hloprobe's source needs to run as a worker in a release's venv,
# beside jax and jaxlib (pyproject.toml's dependencies that it imports
# there: the flags, tables, the record cache's folder, release numbers,
# the progress bar and the golden lock), unpinned: the installer picks
# versions that fit the venv's Python.
_RUNTIME = (
  "absl-py",
  "tabulate",
  "packaging",
  "platformdirs",
  "tqdm",
  "filelock",
)
_VERSIONS_RE = re.compile(r"^Available versions:\s*(.*)$", re.M)


@dataclasses.dataclass(frozen=True, slots=True)
class Venv:
  """A ready virtualenv for one jaxlib version.

  Attributes:
    jaxlib: the jaxlib version, e.g. "0.4.38".
    path: the venv folder.
    python: its interpreter.
    python_version: that interpreter's "major.minor", e.g. "3.13".
    packages: the pip requirements it was made with.
    cuda_plugin: whether the CUDA PJRT plugin is installed (compile-only
      GPU targets need it).
    created: whether this call created it (False: reused from the cache).
  """

  jaxlib: str
  path: str
  python: str
  python_version: str
  packages: tuple[str, ...]
  cuda_plugin: bool
  created: bool = False


def default_cache_dir() -> str:
  """venvs/ under hloprobe's one cache folder (`RecordCache.default_dir`):
  `$XDG_CACHE_HOME/hloprobe/venvs`, else `~/.cache/hloprobe/venvs`, as the
  CLI's `<--cache_dir>/venvs`."""
  from hloprobe.runtime import RecordCache  # lazy: it imports jax

  return os.path.join(RecordCache.default_dir(), "venvs")


def this_python() -> str:
  """This interpreter's "major.minor", e.g. "3.13"."""
  return f"{sys.version_info.major}.{sys.version_info.minor}"


def version_key(version: str) -> Version:
  """ "0.4.38" -> Version("0.4.38"), ordered as releases are ("0.9.0.1" <
  "0.10.0"): `packaging.version`, PEP 440's order. Release numbers only.

  Raises:
    VenvError: not a dotted release number (e.g. "0.4.38rc1", "latest"):
      hloprobe installs and compares releases, never pre-releases.
  """
  if not re.fullmatch(r"\d+(\.\d+)+", version):
    raise VenvError(
      f"{version!r} is not a release version; expected e.g. 0.4.38"
    )
  return Version(version)


def index_versions(
  package: str, timeout: float = 120.0, python_version: str | None = None
) -> tuple[str, ...]:
  """The released versions the package index serves, oldest first.

  Uses `pip index versions PACKAGE` (pip's own query; its "Available
  versions:" line). Pre-releases are not listed by pip.

  Args:
    package: e.g. "jaxlib".
    timeout: limit for pip, in seconds.
    python_version: "3.N": the versions with a wheel (or a source
      distribution) for that Python (pip's `--python-version`), () when
      there is none; None: for this Python.

  Raises:
    VenvError: pip cannot reach the index or knows no such package.
  """
  args = ["index", "versions", package]
  if python_version is not None:
    args += ["--python-version", python_version]
  proc = pip(sys.executable, *args, timeout=timeout)
  unreachable = unreachable_index(proc.stderr)
  if unreachable is not None and proc.returncode != 0:
    raise unreachable
  if python_version is not None and NO_MATCH_RE.search(proc.stderr):
    return ()  # no release of it for that Python
  m = _VERSIONS_RE.search(proc.stdout)
  if proc.returncode != 0 or not m:
    raise VenvError(
      f"cannot list {package} versions from the package index: "
      f"{last_line(proc.stderr or proc.stdout)}"
    )
  found = [v.strip() for v in m.group(1).split(",") if v.strip()]
  return tuple(sorted(found, key=version_key))


def requirements_for(
  jaxlib: str, plugin_versions: tuple[str, ...], cuda: bool = True
) -> tuple[str, ...]:
  """The pip requirements of one version's venv.

  Args:
    jaxlib: e.g. "0.4.38".
    plugin_versions: the versions the index has of `jax-cuda12-plugin`
      (with `jax-cuda12-pjrt` beside it); the plugin is added where it has
      `jaxlib`.
    cuda: False for a CPU-only venv (no plugin, no nvcc wheel): enough for
      `--targets=cpu`, and a fraction of the download.
  """
  reqs = [f"jax=={jaxlib}", f"jaxlib=={jaxlib}"]
  if cuda and jaxlib in plugin_versions:
    reqs += [f"{p}=={jaxlib}" for p in _PLUGIN]
  if cuda:
    nvcc = "nvidia-cuda-nvcc-cu12"
    if version_key(jaxlib) < version_key(_NVCC_FILE_FROM):
      nvcc += "<12.9"
    reqs.append(nvcc)
  reqs += _RUNTIME
  if version_key(jaxlib) < version_key(_NUMPY2_FROM):
    reqs.append("numpy<2")
  return tuple(reqs)


def _read_marker(path: str) -> dict | None:
  try:
    with open(os.path.join(path, MARKER), encoding="utf-8") as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def _folder(
  cache_dir: str, jaxlib: str, python_version: str, cuda: bool
) -> str:
  name = f"jaxlib-{jaxlib}-py{python_version}{'' if cuda else '-cpu'}"
  return os.path.join(cache_dir, name)


def _cached_pythons(cache_dir: str, jaxlib: str) -> list[str]:
  """The Python versions of `jaxlib`'s venv folders: this process's first,
  then the newest first."""
  pattern = re.compile(rf"jaxlib-{re.escape(jaxlib)}-py(3\.\d+)(-cpu)?")
  try:
    names = os.listdir(cache_dir)
  except FileNotFoundError:
    return []
  found = {m.group(1) for m in map(pattern.fullmatch, names) if m}
  mine = this_python()
  newest_first = sorted(found, key=version_key, reverse=True)
  return sorted(newest_first, key=lambda v: v != mine)  # stable


def find_venv(
  jaxlib: str,
  cache_dir: str,
  cuda: bool = True,
  python_versions: tuple[str, ...] | None = None,
) -> Venv | None:
  """The complete cached venv of a version, or None.

  With `cuda=False` the full venv serves too (preferred), else the
  CPU-only one (`jaxlib-<V>-py<3.N>-cpu`).

  Args:
    jaxlib: e.g. "0.4.38".
    cache_dir: where venvs live.
    cuda: whether the venv must have the CUDA plugin and nvcc.
    python_versions: the Python versions accepted, in order of preference;
      None: any, this process's first, then the newest.
  """
  if python_versions is None:
    python_versions = tuple(_cached_pythons(cache_dir, jaxlib))
  for version in python_versions:
    for with_cuda in (True,) if cuda else (True, False):
      path = _folder(cache_dir, jaxlib, version, with_cuda)
      marker = _read_marker(path)
      python = os.path.join(path, "bin", "python")
      if (
        marker is not None
        and marker.get("recipe") == RECIPE
        and python_intact(path, python)
      ):
        return Venv(
          jaxlib,
          path,
          python,
          version,
          tuple(marker.get("packages", ())),
          bool(marker.get("cuda_plugin")),
        )
  return None


def cached_venvs(cache_dir: str) -> tuple[tuple[str, int], ...]:
  """(folder name, size in bytes) of each complete venv under `cache_dir`,
  by name; () when there is none. Venvs are not bounded by --cache_max_mb:
  each takes minutes to make, so only the user removes one (rm -r)."""
  try:
    names = sorted(os.listdir(cache_dir))
  except FileNotFoundError:
    return ()
  found = []
  for name in names:
    path = os.path.join(cache_dir, name)
    if name.startswith("jaxlib-") and _read_marker(path) is not None:
      found.append((name, _tree_bytes(path)))
  return tuple(found)


def _tree_bytes(path: str) -> int:
  total = 0
  for dirpath, _, files in os.walk(path):
    for f in files:
      try:
        total += os.lstat(os.path.join(dirpath, f)).st_size
      except FileNotFoundError:
        pass
  return total


def running_venv() -> Venv:
  """This interpreter as the venv of its own jaxlib (nothing to install)."""
  import jaxlib

  return Venv(
    jaxlib.__version__, sys.prefix, sys.executable, this_python(), (), True
  )


def ensure_venv(
  jaxlib: str,
  cache_dir: str,
  base_python: str,
  python_version: str,
  plugin_versions: tuple[str, ...] | None = None,
  timeout_s: float = 1800.0,
  cuda: bool = True,
  children: Children | None = None,
  installer: str | None = None,
) -> Venv:
  """The venv of `jaxlib`, from the cache or made now (uv: seconds with its
  cache warm; pip: minutes).

  Args:
    jaxlib: a jaxlib release, e.g. "0.4.38".
    cache_dir: where venvs live (`default_cache_dir()` by default).
    base_python: the interpreter that makes the venv
      (`pythons.Pythons.choose`).
    python_version: its "major.minor", e.g. "3.13".
    plugin_versions: `index_versions("jax-cuda12-plugin",
      python_version=python_version)`, or None to ask the index (only when
      a venv with CUDA must be made).
    timeout_s: limit for the pip install, in seconds.
    cuda: with the CUDA plugin and nvcc wheel (compile-only GPU targets);
      False makes or reuses a CPU-only venv (a full one serves too).
    installer: "uv" or "pip" (`venv` + `pip`, as hloprobe did before uv);
      None: uv when its package is installed, else pip.

  Raises:
    VenvError: the version is malformed, or venv/pip failed (e.g. "no
      jaxlib==0.4.1 wheel for Python 3.11 on the package index").
  """
  version_key(jaxlib)
  found = find_venv(jaxlib, cache_dir, cuda, (python_version,))
  if found is not None:
    return found
  if plugin_versions is None and cuda:
    try:
      plugin_versions = index_versions(
        _PLUGIN[0], python_version=python_version
      )
    except VenvError:
      plugin_versions = ()
  reqs = requirements_for(jaxlib, plugin_versions or (), cuda)
  os.makedirs(cache_dir, exist_ok=True)
  final = _folder(cache_dir, jaxlib, python_version, cuda)
  clean_stages(cache_dir)
  tmp = tempfile.mkdtemp(prefix=stage_prefix(final), dir=cache_dir)
  # The installer's temporary files (pip's unpacked wheels: 100 MB) go
  # beside the stage and with it, also when interrupted.
  tmp_dir = tmp + ".tmp"
  try:
    os.mkdir(tmp_dir)
    marker = {
      "recipe": RECIPE,
      "packages": list(reqs),
      "cuda_plugin": any(r.startswith(_PLUGIN[0]) for r in reqs),
      "python": python_version,
      "base_python": base_python,
    }
    build(
      tmp,
      reqs,
      (base_python, python_version),
      timeout_s,
      children,
      installer or ("uv" if uv_binary() else "pip"),
      marker,
      MARKER,
      tmp_dir,
    )
    if os.path.lexists(final):  # another recipe, incomplete or broken
      if os.path.isdir(final) and not os.path.islink(final):
        shutil.rmtree(final)
      else:
        os.remove(final)
    os.rename(tmp, final)
  except BaseException:
    shutil.rmtree(tmp, ignore_errors=True)
    raise
  finally:
    shutil.rmtree(tmp_dir, ignore_errors=True)
  venv = find_venv(jaxlib, cache_dir, cuda, (python_version,))
  return dataclasses.replace(venv, created=True)
