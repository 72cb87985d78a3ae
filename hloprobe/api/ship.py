"""A case's way to the worker processes, and their environment.

`ship` writes a `Case` pickled by value with cloudpickle into a temporary
folder, beside a `case.py` whose `make_case` loads it, so a worker finds it
as the case `<folder>/case.py:make_case` (`compile.cases`' file form). The
function's own module is pickled by value too, unless installed
(site-packages, the standard library): a test module pytest imported from
its rootdir is not importable in a worker. `worker_environment` gives the
workers the folders this process added to `sys.path` (PYTHONPATH), so what
the function imports by name imports there too, and
JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 (see the README's "From Python and
pytest"), for one sweep.

Private in intent: use the package, `hloprobe.api`.
"""

from __future__ import annotations

import collections
import contextlib
import io
import os
import pickle
import shutil
import site
import sys
import sysconfig
import tempfile
import types
from collections.abc import Iterator

from hloprobe.compile import Case
from hloprobe.engine import SweepPlan
from hloprobe.errors import CaseError, first_line

__all__ = ["ship", "worker_environment"]

_SKIP_CHECK = "JAX_SKIP_CUDA_CONSTRAINTS_CHECK"

_LOADER = '''"""A case hloprobe.api sent to its worker processes (removed after)."""

import os
import pickle


def make_case():
  here = os.path.dirname(os.path.abspath(__file__))
  with open(os.path.join(here, "case.pkl"), "rb") as f:
    return pickle.load(f)
'''


def ship(case: Case) -> tuple[str, str]:
  """Writes `case` pickled by value (cloudpickle) and a file that loads it.

  Returns:
    (the case's words, `<folder>/case.py:make_case`; the folder), which
    the caller removes.

  Raises:
    CaseError: the case does not pickle (names why).
  """
  import cloudpickle

  folder = tempfile.mkdtemp(prefix="hloprobe-case-")
  buffer = io.BytesIO()
  try:
    with _by_value(getattr(case.fn, "__module__", None)):
      _pickler(cloudpickle)(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(case)
  except Exception as e:
    shutil.rmtree(folder, ignore_errors=True)
    raise CaseError(
      f"case {case.name!r} cannot be sent to the worker processes that "
      f"compile it (cloudpickle: {first_line(e)}); define the function at "
      "a module's top level, without open files, locks or devices in its "
      "closure"
    ) from None
  with open(os.path.join(folder, "case.pkl"), "wb") as f:
    f.write(buffer.getvalue())
  loader = os.path.join(folder, "case.py")
  with open(loader, "w", encoding="utf-8") as f:
    f.write(_LOADER)
  return f"{loader}:make_case", folder


def _pickler(cloudpickle) -> type:
  """cloudpickle's Pickler, but code pickled by value keeps its file name.

  cloudpickle writes "<dynamic-code>" as every such code object's
  `co_filename` (cloudpickle.py `_code_reduce`, 3.1: for deterministic
  payloads); the program's source locations (a site's `frames`) would
  then name no file. Its reduction is kept, with the file name put back.
  """
  base = cloudpickle.Pickler.dispatch_table
  reduce_code = base[types.CodeType]

  def code_with_file(code: types.CodeType):
    make, args = reduce_code(code)
    dynamic = "<dynamic-code>"
    return make, tuple(code.co_filename if a == dynamic else a for a in args)

  table = collections.ChainMap({types.CodeType: code_with_file}, base)
  return type("_Pickler", (cloudpickle.Pickler,), {"dispatch_table": table})


def _installed_folders() -> tuple[str, ...]:
  """The interpreter's own folders: the standard library, site-packages."""
  paths = sysconfig.get_paths()
  found = [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")]
  found += site.getsitepackages() + [site.getusersitepackages()]
  return tuple(os.path.realpath(p) for p in found if p)


def _is_installed(path: str) -> bool:
  real = os.path.realpath(path)
  return any(os.path.commonpath([real, f]) == f for f in _installed_folders())


@contextlib.contextmanager
def _by_value(module_name: str | None) -> Iterator[None]:
  """cloudpickle pickles `module_name`'s functions by value in the block
  (unless the module is `__main__`, which it always does, or installed),
  then forgets it again (its registry is process-wide)."""
  import cloudpickle

  module = sys.modules.get(module_name or "")
  file = getattr(module, "__file__", None)
  if (
    module is None
    or module_name == "__main__"
    or not file
    or _is_installed(file)
    or module_name in cloudpickle.list_registry_pickle_by_value()
  ):
    yield
    return
  cloudpickle.register_pickle_by_value(module)
  try:
    yield
  finally:
    cloudpickle.unregister_pickle_by_value(module)


@contextlib.contextmanager
def worker_environment(plan: SweepPlan) -> Iterator[None]:
  """The environment the sweep's workers start with, for the block only:
  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 (see the module docstring) unless an
  attached GPU is swept or the user set it, and PYTHONPATH with the
  folders this process added to `sys.path`. Restored in `finally`."""
  saved = {k: os.environ.get(k) for k in (_SKIP_CHECK, "PYTHONPATH")}
  attached = any(
    t.platform == "cuda" and not t.compile_only for t in plan.targets
  )
  own = _installed_folders()
  added = [
    p or os.getcwd()
    for p in sys.path
    if os.path.isdir(p or ".") and os.path.realpath(p or ".") not in own
  ]
  try:
    if not attached and not saved[_SKIP_CHECK]:  # "" is unset to the plugin
      os.environ[_SKIP_CHECK] = "1"
    given = [p for p in (saved["PYTHONPATH"] or "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(given + added))
    yield
  finally:
    for key, value in saved.items():
      if value is None:
        os.environ.pop(key, None)
      else:
        os.environ[key] = value
