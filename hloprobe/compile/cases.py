"""Cases by name: the built-in ones, and a user's `module:factory`.

`get_case` reads a name four ways:
  `seed_mlp`                 a built-in case (`CASES`, see `builtin_cases`);
  `package.module:factory`   `factory()` from an importable module (the
                             current directory is searched last);
  `path/to/file.py:factory`  `factory()` from that file;
  `path/to/module_file`      a module file, by its contents (HLO text or
                             proto, HloSnapshot, StableHLO, a jax.export
                             artifact; see `module_case`).
The factory takes no arguments and returns a `Case`. Worker processes
resolve the same name, so every command works with a user case. Every
failure is one `CaseError` line naming the module, the attribute and the
underlying error.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

from hloprobe.compile.builtin_cases import CASES
from hloprobe.compile.case_model import Case, ReportedError
from hloprobe.compile.int_dots import INT32_DOTS_FIX
from hloprobe.compile.module_case import is_module_case, module_case
from hloprobe.errors import CaseError, did_you_mean, first_line

__all__ = [
  "CASES",
  "absolute_case_word",
  "resolvable_elsewhere",
  "Case",
  "ReportedError",
  "get_case",
  "load_user_case",
  "seed_mlp",
]

seed_mlp = CASES["seed_mlp"]


def _module_name(path: str) -> str:
  """A stable module name for a case file, the same in every process."""
  real = os.path.realpath(path)
  stem = "".join(c if c.isalnum() else "_" for c in real)
  return f"hloprobe_user_case_{stem}"


def _load_file(path: str):
  """Imports a case file; its folder goes on `sys.path` (after what is
  there, so it shadows no installed module) so that it can import the
  modules beside it, as `python path/to/file.py` could."""
  name = _module_name(path)
  if name in sys.modules:
    return sys.modules[name]
  if not os.path.isfile(path):
    raise CaseError(f"case module {path!r}: no such file")
  folder = os.path.dirname(os.path.realpath(path))
  if folder not in sys.path:
    sys.path.append(folder)
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  sys.modules[name] = module  # so pickle and dataclasses can find it
  try:
    spec.loader.exec_module(module)
  except BaseException as e:
    del sys.modules[name]
    if isinstance(e, KeyboardInterrupt):  # SIGINT/SIGTERM stop hloprobe
      raise
    raise CaseError(f"case module {path!r} failed to import: {_what(e)}") from e
  return module


def _what(e: BaseException) -> str:
  """One line on what user code raised; `sys.exit(n)` says so."""
  if isinstance(e, SystemExit):
    return f"SystemExit: sys.exit({e.code!r})"
  return first_line(e)


def _load_module(name: str):
  try:
    return importlib.import_module(name)
  except ModuleNotFoundError as e:
    if e.name is None or not name.startswith(e.name):
      raise CaseError(
        f"case module {name!r} failed to import: {first_line(e)}"
      ) from e
    if os.getcwd() in sys.path:
      raise CaseError(f"case module {name!r} not found ({e})") from e
  except KeyboardInterrupt:  # SIGINT/SIGTERM stop hloprobe
    raise
  except BaseException as e:
    raise CaseError(f"case module {name!r} failed to import: {_what(e)}") from e
  sys.path.append(os.getcwd())  # as `python -m` would have it
  try:
    return importlib.import_module(name)
  except ModuleNotFoundError as e:
    raise CaseError(f"case module {name!r} not found ({e})") from e
  except KeyboardInterrupt:
    raise
  except BaseException as e:
    raise CaseError(f"case module {name!r} failed to import: {_what(e)}") from e


def load_user_case(spec: str) -> Case:
  """`factory()` of `module:factory` or `path.py:factory`.

  Raises:
    CaseError: the module is not found or fails to import, the attribute is
      missing, the factory raises, or it returns something not a `Case`.
  """
  where, _, attr = spec.rpartition(":")
  if not where or not attr:
    raise CaseError(
      f"bad case {spec!r}; expected a built-in name, package.module:factory "
      "or path/to/file.py:factory"
    )
  module = _load_file(where) if where.endswith(".py") else _load_module(where)
  factory = getattr(module, attr, None)
  if factory is None:
    raise CaseError(f"case module {where!r} has no attribute {attr!r}")
  try:
    case = factory()
  except KeyboardInterrupt:  # SIGINT/SIGTERM stop hloprobe
    raise
  except BaseException as e:  # sys.exit, GeneratorExit: one line too
    raise CaseError(f"case factory {where}:{attr} raised {_what(e)}") from e
  if not isinstance(case, Case):
    raise CaseError(
      f"case factory {where}:{attr} returned {type(case).__name__}, "
      "not a hloprobe.Case"
    )
  _check_name(case.name, f"case factory {where}:{attr}")
  return case


def _check_name(name, who: str) -> None:
  """A case name is a non-empty string of printable characters: it names
  output folders, table rows and worker lookups.

  Raises:
    CaseError: it is not a string (None, an int), is empty, or holds a
      control character (NUL, an ANSI escape).
  """
  if not isinstance(name, str) or not name:
    raise CaseError(
      f"{who} returned a Case whose name is {name!r}; give a non-empty "
      "string, e.g. 'my_case'"
    )
  if not name.isprintable():
    raise CaseError(
      f"{who} returned a Case whose name {name!r} holds a control "
      "character; e.g. 'my_case'"
    )


def resolvable_elsewhere(name: str, case: Case | None = None) -> bool:
  """Whether a fresh process (a worker) finds case `name` by that name:
  a user's `module:factory`, or a built-in -- and, when `case` is given,
  that built-in is this very record (not another `Case` that reuses a
  built-in's name). A module file is found by its path (relative to the
  current directory, which a worker shares)."""
  if INT32_DOTS_FIX.is_fixed(name):  # a fixed case: its program's word
    return resolvable_elsewhere(INT32_DOTS_FIX.unfixed(name))
  if ":" in name or is_module_case(name):
    return True
  shipped = CASES.get(name)
  return shipped is not None and (case is None or case is shipped)


def get_case(
  name: str, inputs: str | None = None, batch_arg: str | None = None
) -> Case:
  """A built-in case by name, a user case `module:factory`, or a module
  file by its path.

  A name ending in `+preferred_element_type=int32` is the case before it
  with that fix applied (`int_dots.INT32_DOTS_FIX.fixed_case`).

  Args:
    name: the case's words, as --case gives them.
    inputs: an `.npz`/`.npy` file of a module case's arguments
      (--inputs); ignored for other cases (the command line refuses it
      without a module case).
    batch_arg: a module case's batch parameter (--batch_arg: number or
      name), or None to choose by the output's leading axis.

  Raises:
    CaseError: the name is unknown, a path names no file, or loading a
      user case or a module file failed (`ModuleFileError` is a
      `CaseError`).
  """
  if INT32_DOTS_FIX.is_fixed(name) and name != INT32_DOTS_FIX.case_suffix:
    return INT32_DOTS_FIX.fixed_case(
      get_case(INT32_DOTS_FIX.unfixed(name), inputs)
    )
  if name not in CASES and ":" not in name and os.path.isfile(name):
    return module_case(name, inputs, batch_arg)  # what is wrong, by name
  if ":" in name:
    return load_user_case(name)
  if name not in CASES and (os.path.exists(name) or set("/.") & set(name)):
    # A path (no built-in name has "/" or "."): say what is wrong with it.
    what = "is a folder" if os.path.isdir(name) else "does not exist"
    raise CaseError(
      f"module file {name!r} {what}; give a module file, e.g. an XLA "
      "dump's dump/module_0000.jit_f.before_optimizations.txt"
    )
  if name not in CASES:
    raise CaseError(
      f"unknown case {name!r}; {did_you_mean(name, sorted(CASES))}"
      f"choose from {', '.join(sorted(CASES))}, or "
      "give package.module:factory, path/to/file.py:factory or a module "
      "file (HLO, StableHLO, HloSnapshot, jax.export)"
    )
  return CASES[name]


def absolute_case_word(word: str) -> str:
  """A --case word resolved against this process's folder, for a command
  run in another folder (`hloprobe versions`' and `bisect`'s workers, and
  the `verify` commands explain prints): the path of
  `path/to/file.py:factory` and of a module file made absolute; a
  built-in name and `package.module:factory` as they are (a module on
  `PYTHONPATH` is found from any folder). `+preferred_element_type=int32`
  is kept.

  It reads this process's current folder (`os.path.abspath`) on purpose,
  rather than taking a folder from the command layer: `get_case` loads a
  relative case word against that same folder in this process (`_load_file`
  opens `path/to/file.py` as Python's `open` finds it; `_load_module` puts
  the folder on `sys.path`, as `python -m` would), so resolving here names
  the file that was loaded. A folder passed down could differ from the one
  the load used (a notebook's `os.chdir` between calls), and the Python
  API (`hloprobe.explain`) and the pytest plugin, which have no command
  layer, would each have to pass the same folder. Only the printed
  commands carry the absolute path; the case's name in the output stays
  the word the user gave."""
  base, suffix = word, ""
  if INT32_DOTS_FIX.is_fixed(word):
    base, suffix = INT32_DOTS_FIX.unfixed(word), INT32_DOTS_FIX.case_suffix
  where, sep, attr = base.rpartition(":")
  if sep and where.endswith(".py"):
    return f"{os.path.abspath(where)}:{attr}{suffix}"
  if base not in CASES and not sep and is_module_case(base):
    return os.path.abspath(base) + suffix
  return word
