"""The package layout's rules: a stage imports only stages below it, and
only `report` formats tables (imports tabulate).

Stages, lowest first (a module's stage is its subpackage under hloprobe/,
or its own name for a top-level module):

  errors < startup < private_api < ir < execute < compile < runtime < sites
         < kernels < numerics < records < engine < golden < invariance
         < verify < report < pictures < versions < api < pytest_plugin
         < commands < cli, tools
         < __main__, __init__

`verify` sits below `report`, which words its evidence records; the
command layer (`commands`) sits above every library stage and below the
flags.

Inside `engine` (the sweep stage), its modules follow the data flow too:
spec < plan < compiled < measure < engine < __init__ (a module imports only
those before it); inside `cli`, _rules < _flags < _help < _main <
__init__.

A stage reaches another stage package only through its face, the
package's `__init__` (its `__all__`): `from hloprobe.sites import SiteFate`,
not `from hloprobe.sites.dot_sites import SiteFate` nor `from hloprobe.sites
import dot_sites`. The modules behind a face are private to their package
(tests may read them). Top-level modules (`errors`, `records`, ...) are
their own faces. The command dispatch goes through `commands`' face too
(`COMMANDS`). The one exception is `tools`: benchmarks and maintainers'
checks measure the internals, as tests do, and may import modules behind
a face (nothing imports a tool).

No module names another stage's module in a string: a string table of
"hloprobe.<stage>.<module>" paths (as worker requests once were) or an
`importlib.import_module` of a literal hloprobe name is an import the rules
above cannot see. Only the package's lazy top-level face
(`hloprobe/__init__.py`) maps names to modules.

Only the command layer prints: `print(` and `sys.stdout.write` /
`sys.stderr.write` appear in `commands`, `cli` and `tools` alone (the
library returns data or lines; a command prints them), besides the
exemptions in `_MAY_WRITE` (each with its reason).

`execute` (an executor of HLO records in numpy) sits right above `ir` and
imports no JAX at all: it must share nothing with XLA:CPU.

`ir` is lowest after `errors` and `private_api`: it reads compiler text
into records and needs nothing that compiles. It must not import the JAX
runtime (`jax`, `jaxlib`); the MLIR Python bindings jaxlib ships
(`jaxlib.mlir`) are allowed there, as they only parse and walk text, and
XLA's HLO parser comes through `private_api` (below it). Imports are read
with `ast`, function-level (lazy) imports included, so the rule holds for
what a module can ever load.

No two modules of hloprobe/ import each other, directly or through
others (an import circle), function-level imports included: modules that
need each other share a lower module, or are one module. `from pkg import
name` counts as importing `pkg.name` where that is a module, else `pkg`
(its face). A relative import (`from . import x`) fails: these rules and
the circle check read absolute names only.

Private jax/jaxlib API (`jax._src`, `jax.interpreters`, `jax.lib`, any
`_name`, and every jaxlib module but `jaxlib` and the public `jaxlib.mlir`
bindings) is `private_api`'s alone: it is the one adapter to it. An import,
an `importlib.import_module("jaxlib._x...")` or a `jax._src` attribute
anywhere else fails.
"""

from __future__ import annotations

import ast
import functools
import os
import re

import testutil
from absl.testing import absltest

_ORDER = (
  ("errors",),
  ("startup",),
  ("private_api",),
  ("ir",),
  ("execute",),
  ("compile",),
  ("runtime",),
  ("sites",),
  ("kernels",),
  ("numerics",),
  ("records",),
  ("engine",),
  ("golden",),
  ("invariance",),
  ("verify",),
  ("report",),
  ("pictures",),
  ("versions",),
  ("api",),
  ("pytest_plugin",),
  ("commands",),
  ("cli", "tools"),
  ("__main__", "__init__"),
)
RANK = {stage: rank for rank, names in enumerate(_ORDER) for stage in names}
# Packages that must not import the JAX runtime, and what they may import of it.
_NO_JAX = ("ir", "execute")
_JAX_ALLOWED = ("jaxlib.mlir",)
# The one module that may use private jax/jaxlib API, and the jax modules
# that are private without a leading underscore.
_PRIVATE_ADAPTER = "private_api"
_PRIVATE_JAX = ("jax._src", "jax.interpreters", "jax.lib")
# A package's modules in data-flow order: each imports only earlier ones.
# A string naming a module inside a stage: "hloprobe.engine.compiled".
_MODULE_PATH_RE = re.compile(r"hloprobe(\.[A-Za-z_]\w*){2,}")
# Calls that import a module named by a string.
_IMPORTERS = ("import_module", "__import__")
# The lazy face: it maps each public name to the module defining it.
_FACE = "__init__.py"
_WITHIN = {
  "invariance": (
    "rows",
    "runs",
    "kernel_identity",
    "model_bits",
    "answer",
    "in_workers",
    "pin_file",
    "pin",
    "words",
    "__init__",
  ),
  "cli": ("_rules", "_flags", "_help", "_main", "__init__"),
  "engine": (
    "spec",
    "shell",
    "shard",
    "plan",
    "compiled",
    "measure",
    "guarded",
    "executor",
    "engine",
    "__init__",
  ),
}
# The one package that formats tables (issue 10: "only the report package
# formats tables").
_TABLES = ("report",)
# The stages that print (issue 22: "only the command modules print").
_PRINTERS = ("commands", "cli", "tools")
# Module file name -> why it may write to stderr although a library module.
_MAY_WRITE = {
  "_stderr.py": "startup.quiet_startup writes back the stderr lines it does not "
  "drop (it filters what native code printed; it says nothing itself)",
}


@functools.lru_cache(maxsize=4)
def _walk(tree: ast.AST) -> tuple[ast.AST, ...]:
  """`ast.walk(tree)`'s nodes, in its order: listed once for the rules
  below, which each read every node of one module's tree in turn (a
  Python-level walk of hloprobe's trees was most of `violations`' time)."""
  return tuple(ast.walk(tree))


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
  """(line, dotted name) of every absolute import in `tree`.

  `from hloprobe import a, b` yields hloprobe.a and hloprobe.b (and
  `from hloprobe.engine import spec` hloprobe.engine.spec), since the names
  may be submodules.
  """
  found = []
  for node in _walk(tree):
    if isinstance(node, ast.Import):
      found += [(node.lineno, a.name) for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
      found.append((node.lineno, node.module))
      if node.module.split(".")[0] in ("hloprobe", "jax", "jaxlib"):
        found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
  return found


def _prints(tree: ast.AST) -> list[int]:
  """Lines of every `print(...)` and `sys.stdout/sys.stderr.write(...)`."""
  found = []
  for node in _walk(tree):
    if not isinstance(node, ast.Call):
      continue
    f = node.func
    if isinstance(f, ast.Name) and f.id == "print":
      found.append(node.lineno)
    elif (
      isinstance(f, ast.Attribute)
      and f.attr == "write"
      and isinstance(f.value, ast.Attribute)
      and f.value.attr in ("stdout", "stderr")
      and isinstance(f.value.value, ast.Name)
      and f.value.value.id == "sys"
    ):
      found.append(node.lineno)
  return found


def _private_uses(tree: ast.AST) -> list[tuple[int, str]]:
  """(line, name) of every private jax/jaxlib name `tree` reaches: imports,
  `importlib.import_module` of a literal (an f-string's leading text) and
  `jax._x` / `getattr(jax, "_x")` attributes."""
  found = [(line, n) for line, n in _imported(tree) if _is_private_jax(n)]
  for node in _walk(tree):
    if not isinstance(node, (ast.Call, ast.Attribute)):
      continue
    if isinstance(node, ast.Attribute):
      base, attr = node.value, node.attr
    elif _call_name(node) == "getattr" and len(node.args) >= 2:
      base, attr = node.args[0], _literal_prefix(node.args[1])
    elif _call_name(node) == "import_module" and node.args:
      name = _literal_prefix(node.args[0]).rstrip(".")
      if _is_private_jax(name):
        found.append((node.lineno, name))
      continue
    else:
      continue
    if (
      isinstance(base, ast.Name)
      and base.id in ("jax", "jaxlib")
      and attr.startswith("_")
      and not attr.startswith("__")
    ):
      found.append((node.lineno, f"{base.id}.{attr}"))
  return found


def _call_name(node: ast.Call) -> str:
  func = node.func
  if isinstance(func, ast.Attribute):
    return func.attr
  return func.id if isinstance(func, ast.Name) else ""


def _literal_prefix(node: ast.AST) -> str:
  """A string literal's text, an f-string's leading text, else ""."""
  if isinstance(node, ast.JoinedStr) and node.values:
    node = node.values[0]
  if isinstance(node, ast.Constant) and isinstance(node.value, str):
    return node.value
  return ""


def _is_private_jax(name: str) -> bool:
  """Whether `name` (dotted) is private jax/jaxlib API (module docstring)."""
  parts = name.split(".")
  if parts[0] not in ("jax", "jaxlib"):
    return False
  if any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
    return True
  if parts[0] == "jax":
    return any(name == p or name.startswith(p + ".") for p in _PRIVATE_JAX)
  return len(parts) > 1 and parts[1] != "mlir"


def _stage(rel: str) -> str:
  """The stage of a module path relative to the package folder."""
  first = rel.split(os.sep)[0]
  return first[: -len(".py")] if first.endswith(".py") else first


def _upward_within(stage: str, rel: str, parts: list[str]) -> bool:
  """`rel` (in package `stage`) imports a later module of its package."""
  order = _WITHIN.get(stage)
  if order is None or len(parts) < 3 or parts[1] != stage:
    return False
  mine = os.path.splitext(os.path.basename(rel))[0]
  return parts[2] in order and order.index(parts[2]) > order.index(mine)


def _named_by_string(tree: ast.AST, stage: str) -> list[tuple[int, str]]:
  """(line, what) of every module of another stage named in a string, and
  of every import of a literal hloprobe name by `importlib`."""
  found = []
  for node in _walk(tree):
    if isinstance(node, ast.Call):
      f = node.func
      name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
      arg = node.args[0] if node.args else None
      if (
        name in _IMPORTERS
        and isinstance(arg, ast.Constant)
        and isinstance(arg.value, str)
        and arg.value.split(".")[0] == "hloprobe"
      ):
        found.append((node.lineno, f"imports {arg.value!r} by name"))
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
      m = _MODULE_PATH_RE.fullmatch(node.value)
      if m and node.value.split(".")[1] != stage:
        found.append((node.lineno, f"names module {node.value!r} in a string"))
  return sorted(found)


def _is_jax_runtime(name: str) -> bool:
  if any(name == a or name.startswith(a + ".") for a in _JAX_ALLOWED):
    return False
  return name.split(".")[0] in ("jax", "jaxlib")


# Stages that may import modules behind another stage's face: the
# developer tools, which measure the internals as tests do.
_READS_INTERNALS = ("tools",)


def _past_face(package_dir: str, stage: str, parts: list[str]) -> bool:
  """Whether `parts` (hloprobe, pkg, name, ...) reaches a module behind the
  face of another stage package `pkg`."""
  if len(parts) < 3 or parts[1] == stage:
    return False
  if stage in _READS_INTERNALS:
    return False
  folder = os.path.join(package_dir, parts[1])
  if not os.path.isdir(folder):
    return False  # a top-level module is its own face
  name = os.path.join(folder, parts[2])
  return os.path.exists(name + ".py") or os.path.isdir(name)


def violations(package_dir: str) -> list[str]:
  """Every upward import, every JAX runtime import in `ir` and every print
  outside the command layer, under `package_dir` (a folder laid out like
  hloprobe/), as readable lines."""
  out = []
  for dirpath, _, files in os.walk(package_dir):
    for f in sorted(files):
      if not f.endswith(".py"):
        continue
      path = os.path.join(dirpath, f)
      rel = os.path.relpath(path, package_dir)
      stage = _stage(rel)
      if stage not in RANK:
        out.append(f"{rel}: stage {stage!r} has no place in the order")
        continue
      with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
      if stage not in _PRINTERS and f not in _MAY_WRITE:
        out += [f"{rel}:{line}: {stage} prints" for line in _prints(tree)]
      # The rules below (and `circles`) read absolute imports only.
      out += [
        f"{rel}:{n.lineno}: relative import; write it from hloprobe."
        for n in _walk(tree)
        if isinstance(n, ast.ImportFrom) and n.level
      ]
      if rel != _FACE:
        for line, what in _named_by_string(tree, stage):
          out.append(f"{rel}:{line}: {stage} {what}")
      if stage != _PRIVATE_ADAPTER:
        out += [
          f"{rel}:{line}: private jax/jaxlib API {name} outside "
          f"{_PRIVATE_ADAPTER}"
          for line, name in _private_uses(tree)
        ]
      for line, name in _imported(tree):
        parts = name.split(".")
        if parts[0] == "hloprobe" and len(parts) > 1:
          target = parts[1]
          if target in RANK and RANK[target] > RANK[stage]:
            found = f"{stage} imports higher stage hloprobe.{target}"
            out.append(f"{rel}:{line}: {found}")
          elif _upward_within(stage, rel, parts):
            found = "imports later module " + ".".join(parts[:3])
            out.append(f"{rel}:{line}: {found}")
          elif _past_face(package_dir, stage, parts):
            found = "imports " + ".".join(parts[:3]) + " past its face"
            out.append(f"{rel}:{line}: {stage} {found}")
        elif stage in _NO_JAX and _is_jax_runtime(name):
          out.append(f"{rel}:{line}: {stage} imports the JAX runtime {name}")
        elif stage not in _TABLES and parts[0] == "tabulate":
          out.append(f"{rel}:{line}: {stage} formats tables ({name})")
  return list(dict.fromkeys(out))  # `from m import a` reads as m and m.a


def _module_graph(package_dir: str) -> dict[str, set[str]]:
  """Module (dotted, a package as its name) -> the package's modules it
  imports, function-level imports included."""
  parent = os.path.dirname(os.path.abspath(package_dir))
  top = os.path.basename(os.path.abspath(package_dir))
  paths = {}
  for dirpath, _, files in os.walk(package_dir):
    for f in files:
      if f.endswith(".py"):
        path = os.path.join(dirpath, f)
        name = os.path.relpath(path, parent)[: -len(".py")]
        name = name.replace(os.sep, ".").removesuffix(".__init__")
        paths[name] = path
  graph = {}
  for name, path in paths.items():
    with open(path, encoding="utf-8") as fh:
      tree = ast.parse(fh.read(), path)
    found = set()
    for node in ast.walk(tree):
      if isinstance(node, ast.Import):
        found.update(a.name for a in node.names)
      elif (
        isinstance(node, ast.ImportFrom)
        and node.level == 0
        and (node.module or "").split(".")[0] == top
      ):
        for a in node.names:
          sub = f"{node.module}.{a.name}"
          found.add(sub if sub in paths else node.module)
    graph[name] = {m for m in found if m in paths and m != name}
  return graph


def circles(package_dir: str) -> list[list[str]]:
  """Every import circle among the modules under `package_dir`: the
  strongly connected components of more than one module (Tarjan), each
  sorted, in sorted order."""
  graph = _module_graph(package_dir)
  index, low, stack, on_stack, found = {}, {}, [], set(), []

  def visit(v: str) -> None:
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in sorted(graph[v]):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      component = []
      while True:
        w = stack.pop()
        on_stack.discard(w)
        component.append(w)
        if w == v:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for v in sorted(graph):
    if v not in index:
      visit(v)
  return sorted(found)


def _write(root: str, rel: str, text: str) -> None:
  path = os.path.join(root, rel)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)


class LayeringTest(absltest.TestCase):
  def test_hloprobe_imports_only_downward(self):
    self.assertEqual(violations(os.path.join(testutil.ROOT, "hloprobe")), [])

  def test_hloprobe_has_no_import_circle(self):
    self.assertEqual(circles(os.path.join(testutil.ROOT, "hloprobe")), [])

  def test_planted_circle_fails(self):
    root = os.path.join(self.create_tempdir().full_path, "hloprobe")
    _write(root, "__init__.py", "")
    _write(root, "runtime/__init__.py", "from hloprobe.runtime.pool import P\n")
    _write(root, "runtime/pool.py", "from hloprobe.runtime import serve\n")
    _write(root, "runtime/serve.py", "import os\n")
    self.assertEqual(circles(root), [])
    # A function-level import closes a circle too.
    _write(
      root,
      "runtime/serve.py",
      "def f():\n  from hloprobe.runtime.pool import P\n  return P\n",
    )
    _write(root, "sites/a.py", "from hloprobe.sites import b\n")
    _write(root, "sites/b.py", "from hloprobe.sites import c\n")
    _write(root, "sites/c.py", "import hloprobe.sites.a\n")
    self.assertEqual(
      circles(root),
      [
        ["hloprobe.runtime.pool", "hloprobe.runtime.serve"],
        ["hloprobe.sites.a", "hloprobe.sites.b", "hloprobe.sites.c"],
      ],
    )

  def test_every_stage_is_in_the_order(self):
    package = os.path.join(testutil.ROOT, "hloprobe")
    stages = {_stage(n) for n in os.listdir(package) if n != "__pycache__"}
    self.assertEqual(stages - set(RANK), set())

  def test_planted_upward_import_fails(self):
    root = self.create_tempdir().full_path
    _write(root, "ir/hlo.py", "from hloprobe.errors import HloParseError\n")
    _write(root, "sites/dot_sites.py", "from hloprobe.ir import HloModule\n")
    self.assertEqual(violations(root), [])
    # A lazy import inside a function counts too.
    _write(
      root,
      "sites/passes.py",
      "def f():\n  from hloprobe import engine\n  return engine\n",
    )
    self.assertEqual(
      violations(root),
      ["sites/passes.py:2: sites imports higher stage hloprobe.engine"],
    )

  def test_planted_relative_import_fails(self):
    # Neither the order nor `circles` would see `from . import serve`.
    root = self.create_tempdir().full_path
    _write(root, "runtime/pool.py", "from . import serve\n")
    _write(root, "runtime/serve.py", "def f():\n  from .pool import P\n")
    self.assertEqual(
      violations(root),
      [
        "runtime/pool.py:1: relative import; write it from hloprobe.",
        "runtime/serve.py:2: relative import; write it from hloprobe.",
      ],
    )

  def test_import_past_a_face_fails(self):
    root = self.create_tempdir().full_path
    _write(root, "ir/hlo.py", "def parse_hlo_module(text): ...\n")
    _write(
      root, "ir/__init__.py", "from hloprobe.ir.hlo import parse_hlo_module\n"
    )
    _write(root, "commands/sweep.py", "def main(args): ...\n")
    _write(root, "tools/bench.py", "from hloprobe.commands import sweep\n")
    _write(root, "errors.py", "X = 1\n")
    _write(
      root,
      "sites/dot_sites.py",
      "from hloprobe.ir import parse_hlo_module\n"
      "from hloprobe.errors import X\n"
      "from hloprobe.sites import passes\n",
    )
    self.assertEqual(violations(root), [])
    _write(
      root,
      "sites/passes.py",
      "from hloprobe.ir.hlo import parse_hlo_module\n"
      "def f():\n  from hloprobe.ir import hlo\n  return hlo\n",
    )
    # The command dispatch uses `commands`' face (`COMMANDS`) too.
    _write(root, "cli/_main.py", "from hloprobe.commands import sweep\n")
    self.assertEqual(
      violations(root),
      [
        "sites/passes.py:1: sites imports hloprobe.ir.hlo past its face",
        "sites/passes.py:3: sites imports hloprobe.ir.hlo past its face",
        "cli/_main.py:1: cli imports hloprobe.commands.sweep past its face",
      ],
    )

  def test_engine_modules_import_only_earlier_ones(self):
    root = self.create_tempdir().full_path
    _write(root, "engine/measure.py", "from hloprobe.engine import compiled\n")
    _write(root, "engine/spec.py", "from hloprobe.compile import cases\n")
    self.assertEqual(violations(root), [])
    _write(root, "engine/spec.py", "from hloprobe.engine.engine import run\n")
    _write(root, "engine/compiled.py", "from hloprobe.engine import measure\n")
    self.assertEqual(
      violations(root),
      [
        "engine/compiled.py:1: imports later module hloprobe.engine.measure",
        "engine/spec.py:1: imports later module hloprobe.engine.engine",
      ],
    )

  def test_worker_request_naming_a_function_by_string_fails(self):
    root = self.create_tempdir().full_path
    # A request record whose class the worker finds by pickle is fine, and
    # so is a stage naming its own modules (a `python -m` of its own).
    _write(
      root,
      "engine/compiled.py",
      "from hloprobe.runtime.serve import Request\n"
      "class CompileRequest(Request):\n  pass\n"
      "_SELF = 'hloprobe.engine.compiled'\n",
    )
    _write(root, "__init__.py", "_WHERE = {'x': 'hloprobe.engine.compiled'}\n")
    self.assertEqual(violations(root), [])
    _write(
      root,
      "runtime/pool.py",
      "import importlib\n"
      "_FUNCTIONS = {'run': ('hloprobe.engine.compiled', 'compile_and_run')}\n"
      "def f():\n  return importlib.import_module('hloprobe.engine')\n",
    )
    self.assertEqual(
      violations(root),
      [
        "runtime/pool.py:2: runtime names module 'hloprobe.engine.compiled' "
        "in a string",
        "runtime/pool.py:4: runtime imports 'hloprobe.engine' by name",
      ],
    )

  def test_ir_may_use_mlir_bindings_but_not_jax(self):
    root = self.create_tempdir().full_path
    _write(root, "ir/stablehlo.py", "from jaxlib.mlir import ir\n")
    self.assertEqual(violations(root), [])
    _write(root, "ir/hlo.py", "import jax.numpy as jnp\nimport jaxlib\n")
    self.assertEqual(
      violations(root),
      [
        "ir/hlo.py:1: ir imports the JAX runtime jax.numpy",
        "ir/hlo.py:2: ir imports the JAX runtime jaxlib",
      ],
    )

  def test_private_jax_api_only_in_the_adapter(self):
    root = self.create_tempdir().full_path
    adapter = (
      "import importlib\n"
      "from jax._src import lib\n"
      "from jaxlib import _hlo, version\n"
      "def f(n):\n"
      "  return importlib.import_module(f'jaxlib.mlir._mlir_libs.{n}')\n"
    )
    _write(root, "private_api.py", adapter)
    _write(
      root,
      "compile/lowering.py",
      "import jax, jaxlib\nfrom jax.experimental import topologies\n"
      "from jaxlib.mlir import ir\nfrom hloprobe import private_api\n",
    )
    _write(root, "ir/hlo.py", "from hloprobe import private_api\n")
    self.assertEqual(violations(root), [])
    _write(root, "compile/compat.py", adapter)
    _write(
      root,
      "compile/lowering.py",
      "import jax\nimport jax.interpreters.mlir\n"
      "path = getattr(jax, '_src').lib\nlib = jax._src.lib\n",
    )
    self.assertEqual(
      violations(root),
      [
        "compile/compat.py:2: private jax/jaxlib API jax._src outside "
        "private_api",
        "compile/compat.py:2: private jax/jaxlib API jax._src.lib outside "
        "private_api",
        "compile/compat.py:3: private jax/jaxlib API jaxlib._hlo outside "
        "private_api",
        "compile/compat.py:3: private jax/jaxlib API jaxlib.version outside "
        "private_api",
        "compile/compat.py:5: private jax/jaxlib API jaxlib.mlir._mlir_libs "
        "outside private_api",
        "compile/lowering.py:2: private jax/jaxlib API jax.interpreters.mlir "
        "outside private_api",
        "compile/lowering.py:3: private jax/jaxlib API jax._src outside "
        "private_api",
        "compile/lowering.py:4: private jax/jaxlib API jax._src outside "
        "private_api",
      ],
    )

  def test_only_report_formats_tables(self):
    root = self.create_tempdir().full_path
    _write(root, "report/listings.py", "from tabulate import tabulate\n")
    self.assertEqual(violations(root), [])
    _write(root, "cli.py", "def f():\n  import tabulate\n")
    self.assertEqual(
      violations(root), ["cli.py:2: cli formats tables (tabulate)"]
    )

  def test_only_the_command_layer_prints(self):
    root = self.create_tempdir().full_path
    _write(
      root,
      "commands/sweep.py",
      "import sys\ndef main():\n  print('x')\n  sys.stderr.write('y')\n",
    )
    _write(root, "cli.py", "def f():\n  print('usage', file=sys.stderr)\n")
    _write(root, "report/tables.py", "def f(out):\n  out.write('x')\n")
    self.assertEqual(violations(root), [])
    _write(root, "report/tables.py", "def f():\n  print('a table')\n")
    _write(
      root,
      "pictures/outputs.py",
      "import sys\nsys.stdout.write('x')\nsys.stderr.flush()\n",
    )
    self.assertEqual(
      violations(root),
      [
        "pictures/outputs.py:2: pictures prints",
        "report/tables.py:2: report prints",
      ],
    )


if __name__ == "__main__":
  absltest.main()
