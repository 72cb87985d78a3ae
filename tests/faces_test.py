"""The public faces of the packages: each `__init__` re-exports its
interface in a sorted, non-empty `__all__`, and the modules behind it say
they are private in intent; the faces together stay small (issue 36: what
another stage or a user calls, no more)."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pkgutil
import sys
import types

from absl.testing import absltest, parameterized

import hloprobe

_PACKAGES = (
  "startup",
  "private_api",
  "ir",
  "execute",
  "compile",
  "runtime",
  "sites",
  "kernels",
  "numerics",
  "engine",
  "golden",
  "invariance",
  "verify",
  "report",
  "pictures",
  "versions",
  "api",
  "commands",
  "cli",
  "tools",
)
# Modules inside a stage package that are not behind its face (none since
# the command layer moved to hloprobe.commands).
_NOT_BEHIND: frozenset[str] = frozenset()
# Packages whose modules need not say "use the package": each is run as a
# script (`python -m hloprobe.tools.bench`, `... commands.gpu_check`) or
# is one command's page; and cli's `_main`, whose docstring is `--help`.
_OWN_DOCSTRINGS = ("hloprobe.commands", "hloprobe.tools")
_HELP_TEXT = frozenset({"hloprobe.cli._main"})
# The sum of the names of every face's `__all__` (every package's
# `__init__` and hloprobe's own): 409 over the 14 faces issue 36 counted,
# 435 once private_api, startup and cli became packages; 328 after the
# faces kept only what another stage or a user calls (the top level the
# Python API's 15; `numerics.kernel_model_run` and
# `report.schema_document`, which the README gives users), with commands'
# and tools' faces new. It may fall, not grow: a new name needs a caller in
# another stage, and a lower cap here.
# 413 with the kernels and invariance stages, api.DEFAULTS, findings and
# cuDNN; then names only tests or the package itself used left the faces
# (tests import them from the defining module, as layering_test allows);
# `versions` and `golden` give their commands one library call each
# (`versions_runs`, `bisect_between`; `planned_sweep`, `check_sweep`;
# `verify_fix` with `recorded=` for --results) instead of the steps.
# 352: verify's evidence records left its face (report reads them by field
# and dispatches on their `evidence_kind`; `verify.Evidence`,
# `EvidenceKind` name them).
# 346: report's output vocabulary is one record (`OUTPUT_FORMS`: formats,
# columns, first screen, width, stream name) and its listings one call
# (`listing`). 336: both lines of work together.
# Beside it (counted from 352): 351: pictures.write_files returns the
# "wrote ..." line (`wrote_line` left the face).
# 350: versions.render_versions also renders --format=json (`versions_json`
# left the face; commands/versions prints one text).
# 348: engine.check_shards is merge's check that shards are a plan's, whole
# (`Shard`, `shard_identity`, `without_batch_consistency` left the face;
# `SweepPlan.fingerprint()` is this process's).
# 346: invariance.batch_invariance is explain --invariance's one call (the
# answer and its pins, untried or searched); `invariance_of_sweep`,
# `search_pins` and `untried_pins` left the face.
# Then kernels.core_count back (invariance reads it), and compile's
# sweep_experiments for parse_experiments_file and autotune_experiment.
# 257 (2026-12-05, fourth session): commands make one call per stage
# (versions, golden, pictures, verify's fix tries, engine's shard word),
# records answer what callers asked a function (PtxKernel.algorithm_for,
# HloModule.partition_count, SiteFate.tf32_optional, ...), and compile's
# autotune and report steps fold into their calls.
_PUBLIC_NAMES_CAP = 204


def _modules(package: types.ModuleType) -> list[str]:
  return [m.name for m in pkgutil.iter_modules(package.__path__)]


def face_problems(package: types.ModuleType) -> list[str]:
  """What is wrong with `package`'s face, one line each ([] when nothing).

  A face's `__all__` is sorted and public, each name exists and is
  defined (for classes and functions) in one of the package's modules, no
  name hides one of its modules (`from pkg import mod` would give the
  name), and every module behind it says "use the package".
  """
  name, out = package.__name__, []
  names = getattr(package, "__all__", None)
  if not names:
    return [f"{name}: no __all__"]
  if names != sorted(names):
    out.append(f"{name}: __all__ is not sorted")
  for n in names:
    obj = getattr(package, n, None)
    where = getattr(obj, "__module__", None)
    if n.startswith("_") or obj is None:
      out.append(f"{name}.{n}: private or missing")
    elif (inspect.isfunction(obj) or inspect.isclass(obj)) and not (
      where or ""
    ).startswith(f"{name}."):
      out.append(f"{name}.{n}: defined in {where}, not behind the face")
  for mod in _modules(package):
    full = f"{name}.{mod}"
    if full in _NOT_BEHIND:
      continue
    importlib.import_module(full)  # a lazy face has not imported it yet
    if not isinstance(getattr(package, mod, None), types.ModuleType):
      out.append(f"{full}: hidden by a name of the face")
    if name in _OWN_DOCSTRINGS or full in _HELP_TEXT:
      continue
    path = os.path.join(package.__path__[0], f"{mod}.py")
    with open(path, encoding="utf-8") as f:
      doc = ast.get_docstring(ast.parse(f.read())) or ""
    if "use the package" not in " ".join(doc.split()):
      out.append(f"{full}: docstring does not say 'use the package'")
  return out


def _package_dir() -> str:
  return os.path.dirname(os.path.abspath(hloprobe.__file__))


def face_names(package_dir: str) -> dict[str, list[str]]:
  """Package (dotted, relative to `package_dir`'s parent) -> its face's
  `__all__`, for every package under `package_dir`, read with `ast` (a
  package without a literal `__all__` maps to [])."""
  out = {}
  parent = os.path.dirname(package_dir)
  for dirpath, _, files in os.walk(package_dir):
    if "__init__.py" not in files:
      continue
    path = os.path.join(dirpath, "__init__.py")
    with open(path, encoding="utf-8") as f:
      tree = ast.parse(f.read(), path)
    names = []
    for node in tree.body:
      if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = getattr(node, "targets", None) or [node.target]
        if any(getattr(t, "id", "") == "__all__" for t in targets):
          value = node.value
          names = [e.value for e in getattr(value, "elts", [])]
    rel = os.path.relpath(dirpath, parent).replace(os.sep, ".")
    out[rel] = names
  return out


class FacesTest(parameterized.TestCase):
  @parameterized.named_parameters((p, p) for p in _PACKAGES)
  def test_face(self, package):
    module = importlib.import_module(f"hloprobe.{package}")
    self.assertEqual(face_problems(module), [])

  def test_every_package_is_checked(self):
    found = {
      p.split(".", 1)[1]
      for p in face_names(_package_dir())
      if p.count(".") == 1 and p != "hloprobe.pictures.templates"
    }
    self.assertEqual(found - set(_PACKAGES), set())

  def test_tools_lists_every_tool(self):
    from hloprobe import tools

    self.assertEqual(list(tools.TOOLS), sorted(_modules(tools)))

  def test_every_face_exports_something(self):
    empty = [p for p, n in face_names(_package_dir()).items() if not n]
    self.assertEqual(empty, [])

  def test_faces_stay_small(self):
    faces = face_names(_package_dir())
    total = sum(len(n) for n in faces.values())
    self.assertLessEqual(
      total, _PUBLIC_NAMES_CAP, {p: len(n) for p, n in faces.items()}
    )
    self.assertLessEqual(len(faces["hloprobe"]), 16)  # the Python API

  def test_a_planted_package_without_names_is_found(self):
    root = self.create_tempdir()
    root.create_file("pkg/__init__.py", '"""x"""\n__all__: list[str] = []\n')
    root.create_file("pkg/a/__init__.py", '"""x"""\n__all__ = ["f", "g"]\n')
    self.assertEqual(
      face_names(os.path.join(root.full_path, "pkg")),
      {"pkg": [], "pkg.a": ["f", "g"]},
    )

  def test_planted_faults_are_found(self):
    root = self.create_tempdir()
    root.create_file(
      "planted_face/__init__.py",
      '"""A face."""\n'
      "from planted_face.snap import snap as snap\n"
      "from os.path import join as join\n"
      '__all__ = ["snap", "join"]\n',
    )
    root.create_file(
      "planted_face/snap.py", '"""No word."""\ndef snap(): ...\n'
    )
    sys.path.insert(0, root.full_path)
    try:
      problems = face_problems(importlib.import_module("planted_face"))
    finally:
      sys.path.remove(root.full_path)
      sys.modules.pop("planted_face.snap", None)
      sys.modules.pop("planted_face", None)
    self.assertEqual(
      problems,
      [
        "planted_face: __all__ is not sorted",
        "planted_face.join: defined in posixpath, not behind the face",
        "planted_face.snap: hidden by a name of the face",
        "planted_face.snap: docstring does not say 'use the package'",
      ],
    )


if __name__ == "__main__":
  absltest.main()
