"""The golden folder: where it is, its files, and its MANIFEST.json.

`default_golden_dir` finds the folder, `list_golden_files` and
`read_golden_file` read it, `read_manifest` and `manifest_sweep` read its
MANIFEST.json (whose text `format` writes and parses), and the sweep a
manifest records goes to and from a `SweepSpec` (`sweep_record`,
`spec_from_record`, `golden_spec`). Nothing here writes: `update` does.

Paths in a manifest (a case file `path/to/file.py:factory`, a module file,
a target config file) are relative to the golden folder from schema
version 3 on (`manifest_words` writes them so), so `golden check` works
from any folder; a version 2 manifest's are relative to the current
folder, as it was written. `read_manifest` and `manifest_sweep` give
either's words as this process reaches them (`sweep_words`), so a sweep
read from a manifest and one given on the command line compare word for
word.

A manifest is data a checkout receives (issue 27 item 3): the cases and
target configs it names are confined (`manifest_sweep`). A case is a
built-in name, or a file (`path/to/file.py:factory`, a module file) or an
importable module (`package.module:factory`: the file or folder its
top-level package is found at, nothing imported) inside the golden folder
or the repository that holds it (the nearest folder above it with a
`.git`; not an installed package's folder in it, such as a .venv's
site-packages), symlinks resolved; hloprobe's own modules are built in
too.
Anything else is refused with one line before any case loads.

Private in intent: use the package, `hloprobe.golden`.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from collections.abc import Iterable, Mapping
from importlib.machinery import PathFinder

from hloprobe.compile import CASES, is_config_path
from hloprobe.engine import SweepPlan, SweepSpec, plan_sweep
from hloprobe.errors import GoldenError
from hloprobe.golden import format as fmt
from hloprobe.ir import InputFile

__all__ = [
  "MANIFEST",
  "confine_sweep",
  "default_golden_dir",
  "golden_spec",
  "list_golden_files",
  "manifest_sweep",
  "manifest_words",
  "own_checkout",
  "read_golden_file",
  "read_manifest",
  "spec_from_record",
  "sweep_configs",
  "sweep_record",
  "sweep_words",
]

MANIFEST = "MANIFEST.json"
# Folders of installed packages: not the repository's code, even inside it
# (a .venv in the checkout).
_INSTALLED = frozenset({"site-packages", "dist-packages"})


def own_checkout() -> str | None:
  """hloprobe's own source checkout (the folder above the `hloprobe`
  package when it holds `pyproject.toml`: an editable install, as `make`
  gives), real path; None for an installed hloprobe."""
  package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
  root = os.path.dirname(package)
  return root if os.path.isfile(os.path.join(root, "pyproject.toml")) else None


def default_golden_dir(cwd: str | None = None) -> str:
  """The golden folder when none is named (--golden_dir): the user's, never
  hloprobe's own unless run from its checkout's root (issue 39 item 5).

  `./golden` when it exists; else `golden/` of the nearest folder at or
  above `cwd` (default: the current folder) that holds `pyproject.toml` or
  `.git`, the walk ending below hloprobe's own checkout (an editable
  install's source folder); else `./golden`. From the checkout's root itself (`make golden`, CI): its
  `golden/`.

  Returns:
    an absolute path (the folder may not exist yet).
  """
  here = os.path.abspath(cwd or os.getcwd())
  if os.path.isdir(os.path.join(here, "golden")):
    return os.path.join(here, "golden")
  own = own_checkout()
  folder = here
  while own is None or os.path.realpath(folder) != own or folder == here:
    if any(
      os.path.exists(os.path.join(folder, name))
      for name in ("pyproject.toml", ".git")
    ):
      return os.path.join(folder, "golden")
    parent = os.path.dirname(folder)
    if parent == folder:
      break
    folder = parent
  return os.path.join(here, "golden")


def sweep_record(spec: SweepSpec | SweepPlan) -> dict[str, list]:
  """A sweep as MANIFEST.json records it (keys as in `manifest_sweep`);
  a spec in words is planned first (a plan looks nothing up again)."""
  spec = plan_sweep(spec)
  return {
    "cases": list(spec.case_names),
    "targets": list(spec.target_names),
    "batch_sizes": list(spec.batch_sizes),
    "precisions": list(spec.precisions),
  }


def spec_from_record(record: Mapping[str, Iterable]) -> SweepPlan:
  """The sweep a MANIFEST.json record describes, as goldens are made,
  planned (`plan_sweep`: its names looked up here, once).

  Goldens always name the pass that rewrote each site, so the sweep runs
  with explain_passes.
  """
  return plan_sweep(
    SweepSpec(
      cases=tuple(record["cases"]),
      batch_sizes=tuple(record["batch_sizes"]),
      precisions=tuple(record["precisions"]),
      targets=tuple(record["targets"]),
      explain_passes=True,
    )
  )


def list_golden_files(directory: str) -> list[str]:
  """Relative paths of the files under `directory`, manifest excluded."""
  out = []
  for root, dirs, names in os.walk(directory):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    for name in names:
      rel = os.path.relpath(os.path.join(root, name), directory)
      if rel != MANIFEST and not name.startswith("."):
        out.append(rel.replace(os.sep, "/"))
  return sorted(out)


def read_golden_file(directory: str, rel: str) -> str:
  """The text of one file; GoldenError naming it when it cannot be read."""
  path = os.path.join(directory, rel)
  return InputFile(
    path, f"[hloprobe] golden file {path}", GoldenError
  ).read_text()


def _interrupted_update(golden_dir: str) -> str | None:
  """The previous goldens an interrupted update left aside, or None."""
  parent, base = os.path.split(os.path.abspath(golden_dir))
  if not os.path.isdir(parent):
    return None
  for name in sorted(os.listdir(parent)):
    if name.startswith(f".{base}.update-") and name.endswith(".old"):
      return os.path.join(parent, name)
  return None


def _require_dir(golden_dir: str) -> None:
  """Raises a clear GoldenError when the folder is absent."""
  if os.path.isdir(golden_dir):
    return
  left = _interrupted_update(golden_dir)
  hint = (
    f"{left} holds the previous goldens of an interrupted update: move it back"
    if left
    else "create it with `hloprobe golden update`"
  )
  raise GoldenError(f"[hloprobe] no golden folder at {golden_dir}; {hint}")


def read_manifest(golden_dir: str) -> dict:
  """The folder's MANIFEST.json as a dict.

  Raises:
    GoldenError: the folder or manifest is missing or malformed.
  """
  _require_dir(golden_dir)
  path = os.path.join(golden_dir, MANIFEST)
  # Any MANIFEST.json is read as input files are: a FIFO or a folder in
  # its place is one line (read_golden_file), not "missing".
  if not os.path.lexists(path):
    foreign = [r for r in list_golden_files(golden_dir) if not fmt.path_key(r)]
    if foreign:  # e.g. tests/golden of a project: `update` refuses it too
      raise GoldenError(
        f"[hloprobe] {golden_dir} is not a golden folder: no {MANIFEST}, and "
        f"{foreign[0]} is not a golden file; give --golden_dir=DIR"
      )
    raise GoldenError(
      f"[hloprobe] {path} is missing; recreate the goldens with `hloprobe golden update`"
    )
  doc = fmt.parse_manifest(path, read_golden_file(golden_dir, MANIFEST))
  return doc | {"sweep": sweep_words(golden_dir, doc)}


def manifest_sweep(golden_dir: str) -> dict[str, list] | None:
  """The sweep recorded in the folder's manifest, or None without one.

  An older manifest schema's sweep is read too, so `golden update` can
  remake an older folder in the current layout.

  Returns:
    {"cases": [str], "targets": [str], "batch_sizes": [int],
     "precisions": [str]}.
  """
  path = os.path.join(golden_dir, MANIFEST)
  if not os.path.lexists(path):
    return None
  text = read_golden_file(golden_dir, MANIFEST)
  sweep = sweep_words(
    golden_dir, fmt.parse_manifest(path, text, sweep_only=True)
  )
  confine_sweep(golden_dir, sweep)
  return sweep


def confine_sweep(
  golden_dir: str, sweep: Mapping[str, list], writing: bool = False
) -> None:
  """Refuses a sweep whose manifest `golden check` would refuse: a case
  that runs code, or a target config, outside the golden folder and its
  repository (see the module docstring).

  Args:
    golden_dir: the golden folder (it may not exist yet).
    sweep: keys as in `manifest_sweep`; paths as this process reaches them.
    writing: the refusal is `golden update`'s, before it sweeps: the line
      says so and how to make the manifest acceptable.

  Raises:
    GoldenError: one line naming the case or config.
  """
  _confine_targets(golden_dir, sweep["targets"], writing)
  _confine_cases(golden_dir, sweep["cases"], writing)


def _refusal(golden_dir: str, what: str, writing: bool, fix: str) -> str:
  """The one line of a confinement refusal, as check or update says it."""
  if writing:
    return (
      f"[hloprobe] golden update would write a {MANIFEST} that `golden "
      f"check` refuses: {what}; {fix}"
    )
  return f"[hloprobe] {os.path.join(golden_dir, MANIFEST)}: {what}; {fix}"


def _case_path(word: str, base: str = "") -> tuple[str, str] | None:
  """(file path, ":factory" or "") of a case word naming a file
  (`path/to/file.py:factory`, or a module file: a word with no factory that
  is not a built-in name and names a path: a folder in it, or a file in
  `base`), None for a built-in name, an importable `package.module:factory`
  or another name (a function's case, `hloprobe.as_case`'s, written by the
  pytest plugin: no file to relocate)."""
  where, colon, attr = word.rpartition(":")
  if colon:
    return (where, colon + attr) if where.endswith(".py") else None
  if word in CASES:
    return None
  is_path = "/" in word or os.sep in word
  return (
    (word, "")
    if is_path or os.path.exists(os.path.abspath(os.path.join(base, word)))
    else None
  )


def _reached(golden_dir: str, path: str) -> str:
  """A manifest's `path` (relative to `golden_dir`) as this process
  reaches it: relative to the current folder when under it, else absolute."""
  full = os.path.normpath(os.path.join(os.path.abspath(golden_dir), path))
  here = os.getcwd()
  if os.path.commonpath([here, full]) == here:
    return os.path.relpath(full, here)
  return full


def _map_paths(
  sweep: Mapping[str, list], change, base: str = ""
) -> dict[str, list]:
  """`sweep` with `change(path)` applied to each case file and target
  config path of it; `base`: the folder its relative paths start from."""
  cases = []
  for word in sweep["cases"]:
    found = _case_path(word, base)
    cases.append(word if found is None else change(found[0]) + found[1])
  targets = [change(w) if is_config_path(w) else w for w in sweep["targets"]]
  return dict(sweep) | {"cases": cases, "targets": targets}


def sweep_words(golden_dir: str, manifest: Mapping) -> dict[str, list]:
  """A parsed manifest's sweep, its paths as this process reaches them.

  Schema version 3 and later keep paths relative to the golden folder;
  older manifests, relative to the folder they were written from (the
  current one is assumed, as before).
  """
  sweep = manifest["sweep"]
  if manifest.get("schema_version", 0) < 3:
    return dict(sweep)
  return _map_paths(sweep, lambda p: _reached(golden_dir, p), golden_dir)


def manifest_words(golden_dir: str, sweep: Mapping[str, list]) -> dict:
  """A sweep's words as MANIFEST.json keeps them (schema version 3): case
  files and target configs relative to `golden_dir`, with "/" between
  folders, so the manifest reads the same from any current folder and in
  any checkout. E.g. "convnet.py:make_case" with golden_dir "golden" ->
  "../convnet.py:make_case"."""
  root = os.path.abspath(golden_dir)

  def relative(path: str) -> str:
    rel = os.path.relpath(os.path.abspath(path), root)
    return rel.replace(os.sep, "/")

  return _map_paths(sweep, relative)


def _confine_targets(
  golden_dir: str, words: Iterable[str], writing: bool = False
) -> None:
  """A committed manifest reads config files only inside its folder.

  Raises:
    GoldenError: a config-file target resolves (symlinks too) outside the
      golden folder.
  """
  root = os.path.realpath(golden_dir)
  for word in words:
    if not is_config_path(word):
      continue
    where = os.path.realpath(word)
    if os.path.commonpath([root, where]) != root:
      raise GoldenError(
        _refusal(
          golden_dir,
          f"target config {word!r} is outside the golden folder",
          writing,
          "keep the configs a manifest names inside it",
        )
      )


def _repository(folder: str) -> str | None:
  """The nearest folder at or above `folder` (a real path) holding `.git`
  (a folder, or a worktree's file), or None."""
  while True:
    if os.path.exists(os.path.join(folder, ".git")):
      return folder
    parent = os.path.dirname(folder)
    if parent == folder:
      return None
    folder = parent


def _case_location(word: str) -> str | None:
  """The file or folder a case word runs code from ("" where it has none:
  a built-in or frozen module), or None for a built-in case, hloprobe's
  own module, or a module Python cannot find (loading it fails then)."""
  if word in CASES:
    return None
  where, colon, _ = word.rpartition(":")
  if not colon:  # a module file (HLO, StableHLO, ...), or an unknown name
    return word if os.sep in word or os.path.exists(word) else None
  if where.endswith(".py") or os.sep in where:
    return where
  top = where.split(".")[0]
  if top == "hloprobe":
    return None
  try:  # a top-level name: found, not imported; the current folder last,
    # as `cases.load_user_case` looks there last
    spec = importlib.util.find_spec(top) or PathFinder.find_spec(
      top, [*sys.path, os.getcwd()]
    )
  except (ImportError, ValueError):
    return ""
  if spec is None:
    return None
  if spec.submodule_search_locations:
    return next(iter(spec.submodule_search_locations), "")
  return spec.origin if spec.has_location and spec.origin else ""


def _confine_cases(
  golden_dir: str, words: Iterable[str], writing: bool = False
) -> None:
  """A manifest runs case code only from the golden folder or its
  repository (see the module docstring).

  Raises:
    GoldenError: a case resolves (symlinks too) outside both.
  """
  folder = os.path.realpath(golden_dir)
  roots = [folder]
  repository = _repository(folder)
  if repository is not None:
    roots.append(repository)
  for word in words:
    where = _case_location(word)
    if where is None:
      continue
    real = os.path.realpath(where) if where else ""
    parts = set(real.split(os.sep))
    if (
      real
      and not parts & _INSTALLED
      and any(os.path.commonpath([r, real]) == r for r in roots)
    ):
      continue
    source = f"code from {real}" if real else "a module with no file"
    fix = (
      "put the case's file inside the golden folder, or both in one git "
      "repository (`git init` in the project folder)"
      if writing
      else "a manifest names built-in cases or cases inside its golden "
      "folder or repository (installed packages excluded)"
    )
    raise GoldenError(
      _refusal(
        golden_dir,
        f"case {word!r} runs {source}, not inside {' or '.join(roots)}",
        writing,
        fix,
      )
    )


def sweep_configs(sweep: Mapping[str, list]) -> set[tuple]:
  """The (target, case, n, precision) configs of a sweep record."""
  return set(
    itertools.product(
      sweep["targets"],
      sweep["cases"],
      sweep["batch_sizes"],
      sweep["precisions"],
    )
  )


def golden_spec(golden_dir: str | None = None) -> SweepPlan:
  """The sweep MANIFEST.json records in `golden_dir` (default: `golden/`).

  Raises:
    GoldenError: the folder or its manifest is missing or corrupt.
  """
  golden_dir = golden_dir or default_golden_dir()
  recorded = manifest_sweep(golden_dir)
  if recorded is None:
    raise GoldenError(f"{golden_dir}: MANIFEST.json records no sweep")
  return spec_from_record(recorded)
