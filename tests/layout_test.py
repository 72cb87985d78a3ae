"""Tests mirror the source tree (issue 36 item 4).

The module hloprobe/PACKAGE/MODULE.py is tested in
tests/PACKAGE/MODULE_test.py; a second file for one aspect of it is
tests/PACKAGE/MODULE_ASPECT_test.py (numerics/emulate_test.py,
numerics/emulate_orders_test.py). A private module `_name.py` maps to
`name_test.py` (cli/_main.py -> tests/cli/main_test.py), and so does
`__main__.py` (tests/main_test.py). The top-level modules map to tests/
itself, hloprobe/__init__.py to tests/hloprobe_test.py. A package's
`__init__.py` is its face, tested for every package at once by
faces_test.py and layering_test.py.

No other test file sits at tests/ root: only the cross-cutting ones in
`_CROSS_CUTTING`, each with its reason. Helpers (conftest.py, testutil.py,
recorded.py, ...) and testdata folders are not test files (pytest collects
`*_test.py` only: pyproject.toml's `python_files`).

A module with no test file of its own yet is listed in `_NOT_YET`, with
why; the list may only shrink (`_NOT_YET_CAP`), and an entry whose test
file now exists, or whose module is gone, fails until it is removed.
"""

from __future__ import annotations

import os

import testutil
from absl.testing import absltest

_SOURCE = os.path.join(testutil.ROOT, "hloprobe")
_TESTS = os.path.join(testutil.ROOT, "tests")

# Test files at tests/ root that test no one module.
_CROSS_CUTTING = {
  # The package layering: which stage imports which, through faces only.
  "layering_test.py",
  # Every package's face (`__init__` and `__all__`) at once.
  "faces_test.py",
  # The repository's and the package's top level.
  "toplevel_test.py",
  # tests/conftest.py's own rules (the `compiles` marker check, the
  # file order, the suite's clock and budget): the suite's, not a module's.
  "conftest_test.py",
  # This file: the test tree's own layout.
  "layout_test.py",
  # Every public function's docstring: one there, and a Raises: section
  # where it raises (review findings 24, 25): every module at once.
  "docstrings_test.py",
}

# Modules without a test file of their own yet, "PACKAGE/NAME" as in
# tests/PACKAGE/NAME_test.py. What tests them meanwhile, or why nothing
# needs to, beside each group. Add a real test and remove the entry;
# never add one (the cap below is today's length).
_NOT_YET = {
  # `make bench`'s lines: measurements printed, not assertions; the
  # parts other tests use (bench.big_hlo_module, bench_shards.comparable)
  # run in compile/module_files_test.py and commands/merge_test.py.
  "tools/bench",
  "tools/bench_clock",
  "tools/bench_memory",
  "tools/bench_models",
  "tools/bench_ray",
  "tools/bench_shards",
  "tools/bench_venv",
  # Run through compile/autotune_replay_test.py (it writes the template).
  "tools/autotune_template",
  # Command modules: flags to one library call and printing; run end to
  # end by cli/main_test.py, golden/update_test.py, commands/*_test.py.
  "commands/bisect",
  "commands/golden",
  "commands/gpu_check",
  "commands/sweep",
  "commands/view",
  # compile/: through compile/cases_test.py, module_case_test.py,
  # module_files_test.py, builtin_cases_test.py and the recorded compiles.
  "compile/invariance_cases",
  "compile/issue_cases",
  "compile/lowering",
  # Through kernels/kernel_reader_test.py's PinTest (recorded pinned
  # compiles) and invariance/answer_test.py.
  "kernels/autotune_pin",
  # pictures/: through pictures/outputs_test.py, html_report_test.py and
  # explorer_server_test.py.
  "pictures/explorer_view",
  # The private-API adapter: through ir/hlo_text_test.py (XLA's parser)
  # and every compile.
  "private_api/adapter",
  # Through numerics/rows_judged_test.py and verdicts_headline_test.py.
  "report/explain_rows",
  # verify/: records and the verify call, through verify/fix_test.py,
  # report/verification_test.py and sites/rejection_test.py.
  "verify/outcome",
}
_NOT_YET_CAP = 23


def _modules() -> dict[str, str]:
  """Each module's expected test file, by its "PACKAGE/NAME" key."""
  want = {}
  for folder, _, files in os.walk(_SOURCE):
    package = os.path.relpath(folder, _SOURCE)
    for f in files:
      if not f.endswith(".py"):
        continue
      name = f[: -len(".py")]
      if package == ".":
        test = "hloprobe" if name == "__init__" else name.strip("_")
        want[test] = f"{test}_test.py"
      elif name != "__init__":
        key = f"{package}/{name.strip('_')}"
        want[key] = f"{key}_test.py"
  return want


def _test_files() -> list[str]:
  """Every `*_test.py` under tests/, relative to tests/."""
  found = []
  for folder, dirs, files in os.walk(_TESTS):
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    for f in files:
      if f.endswith("_test.py"):
        found.append(os.path.relpath(os.path.join(folder, f), _TESTS))
  return sorted(found)


class MirrorTest(absltest.TestCase):
  def test_every_module_has_its_test_file(self):
    missing = [
      f"hloprobe/{key}.py: no tests/{path}"
      for key, path in sorted(_modules().items())
      if key not in _NOT_YET and not os.path.isfile(os.path.join(_TESTS, path))
    ]
    self.assertEqual(missing, [])

  def test_not_yet_lists_only_modules_still_without_a_test(self):
    modules = _modules()
    stale = sorted(
      key
      for key in _NOT_YET
      if key not in modules
      or os.path.isfile(os.path.join(_TESTS, modules[key]))
    )
    self.assertEqual(stale, [], "remove these from _NOT_YET")

  def test_not_yet_only_shrinks(self):
    self.assertLessEqual(len(_NOT_YET), _NOT_YET_CAP)

  def test_every_test_file_names_its_module(self):
    modules = _modules()
    stray = []
    for path in _test_files():
      stem = path[: -len("_test.py")]
      package = stem.rpartition("/")[0]
      if path in _CROSS_CUTTING:
        continue
      owners = [
        key
        for key in modules
        if key.rpartition("/")[0] == package
        and (stem == key or stem.startswith(key + "_"))
      ]
      if not owners:
        stray.append(path)
    self.assertEqual(stray, [], "name each after the module it tests")

  def test_root_holds_only_top_level_modules_and_cross_cutting_tests(self):
    top = {
      path for key, path in _modules().items() if "/" not in key
    } | _CROSS_CUTTING
    at_root = [p for p in _test_files() if "/" not in p]
    extra = [
      p
      for p in at_root
      if p not in top
      and not any(p.startswith(t[: -len("_test.py")] + "_") for t in top)
    ]
    self.assertEqual(extra, [])
    self.assertLessEqual(_CROSS_CUTTING, set(at_root))


if __name__ == "__main__":
  absltest.main()
