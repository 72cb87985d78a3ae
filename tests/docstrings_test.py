"""Public functions say what they raise (review findings 24 and 25).

An AST scan of hloprobe/, no import: a public function or method (a
module's `__all__` names it, or, without `__all__`, its name has no
leading underscore; a method of such a class, not underscored) whose own
body raises an exception (`raise X`, not a bare re-raise; nested
functions are their own) has a `Raises:` section in its docstring, or,
for a request's `run`, its class docstring says "Raises (from `run`)".
Every public module-level function has a docstring (shapes, dtypes,
units and errors are STYLE's to ask; this checks that there is one).
"""

from __future__ import annotations

import ast
import os

import testutil
from absl.testing import absltest

_SOURCE = os.path.join(testutil.ROOT, "hloprobe")


def _public_names(tree: ast.Module) -> set[str] | None:
  """The module's `__all__`, or None without one."""
  for node in tree.body:
    if isinstance(node, ast.Assign) and any(
      isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
    ):
      try:
        return set(ast.literal_eval(node.value))
      except ValueError:
        return None
  return None


def _raises(fn: ast.FunctionDef) -> bool:
  """Whether `fn`'s own body raises an exception (nested defs aside)."""
  stack = list(fn.body)
  while stack:
    node = stack.pop()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
      continue
    if isinstance(node, ast.ClassDef):
      continue
    if isinstance(node, ast.Raise) and node.exc is not None:
      return True
    stack.extend(ast.iter_child_nodes(node))
  return False


def scan(text: str, where: str) -> list[str]:
  """What the rules above find in one module's text: "WHERE:LINE NAME: why"."""
  tree = ast.parse(text)
  names = _public_names(tree)
  public = lambda n: not n.startswith("_") and (names is None or n in names)
  found = []
  for node in tree.body:
    funcs = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
      if public(node.name):
        funcs.append((node, node.name, ""))
        if not ast.get_docstring(node):
          found.append(f"{where}:{node.lineno} {node.name}: no docstring")
    elif isinstance(node, ast.ClassDef) and public(node.name):
      class_doc = ast.get_docstring(node) or ""
      funcs += [
        (m, f"{node.name}.{m.name}", class_doc)
        for m in node.body
        if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
        and not m.name.startswith("_")
      ]
    for fn, name, class_doc in funcs:
      doc = ast.get_docstring(fn) or ""
      said = "Raises" in doc or f"Raises (from `{fn.name}`)" in class_doc
      if _raises(fn) and not said:
        found.append(f"{where}:{fn.lineno} {name}: raises, no Raises:")
  return found


class ScanTest(absltest.TestCase):
  def test_planted_module(self):
    text = (
      "__all__ = ['a', 'b', 'C']\n"
      "def a(x):\n  '''A.'''\n  raise ValueError(x)\n"
      "def b(x):\n  '''B.\n\n  Raises:\n    ValueError: x.\n  '''\n"
      "  raise ValueError(x)\n"
      "def c():\n  raise ValueError\n"  # not in __all__
      "class C:\n"
      "  '''C.\n\n  Raises (from `run`):\n    E: e.\n  '''\n"
      "  def run(self):\n    raise ValueError\n"
      "  def go(self):\n    try:\n      pass\n    except E:\n      raise\n"
      "  def nested(self):\n    def f():\n      raise ValueError\n"
      "  def bad(self):\n    '''Bad.'''\n    raise ValueError\n"
    )
    self.assertEqual(
      scan(text, "m.py"),
      ["m.py:2 a: raises, no Raises:", "m.py:30 C.bad: raises, no Raises:"],
    )

  def test_undocumented_public_function(self):
    self.assertEqual(
      scan("def f():\n  return 1\n", "m.py"), ["m.py:1 f: no docstring"]
    )


class PackageTest(absltest.TestCase):
  def test_every_public_function_documents_its_raises(self):
    found = []
    for folder, _, files in sorted(os.walk(_SOURCE)):
      for name in sorted(files):
        if name.endswith(".py"):
          path = os.path.join(folder, name)
          with open(path, encoding="utf-8") as f:
            found += scan(f.read(), os.path.relpath(path, testutil.ROOT))
    self.assertEqual(found, [])


if __name__ == "__main__":
  absltest.main()
