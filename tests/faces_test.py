"""The public faces of the stage packages (sites, numerics, golden,
pictures): each `__init__` re-exports its interface in a sorted `__all__`,
and the modules behind it say they are private in intent."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pkgutil
import sys
import types

from absl.testing import absltest, parameterized

_PACKAGES = (
  "ir",
  "execute",
  "compile",
  "runtime",
  "sites",
  "numerics",
  "sweep",
  "golden",
  "invariance",
  "verify",
  "report",
  "pictures",
  "versions",
  "api",
)
# Modules inside a stage package that are not behind its face (none since
# the command layer moved to hloprobe.commands).
_NOT_BEHIND: frozenset[str] = frozenset()


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
    path = os.path.join(package.__path__[0], f"{mod}.py")
    with open(path, encoding="utf-8") as f:
      doc = ast.get_docstring(ast.parse(f.read())) or ""
    if "use the package" not in " ".join(doc.split()):
      out.append(f"{full}: docstring does not say 'use the package'")
  return out


class FacesTest(parameterized.TestCase):
  @parameterized.named_parameters((p, p) for p in _PACKAGES)
  def test_face(self, package):
    module = importlib.import_module(f"hloprobe.{package}")
    self.assertEqual(face_problems(module), [])

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
