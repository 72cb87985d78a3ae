"""hloprobe from Python without compiling: the names the README shows
(`hloprobe.CASES`, `hloprobe.sweep` a plain function),
a function made a `Case`, `Results`' forms on recorded compiles, and a
site's frames cut to the program's own. One test compiles (marked):
`hloprobe.explain(f, x, w, only="invariance")`, the bitwise answer alone
(issue 38), on a program exact in float32 (integer inputs in [-4, 4], 16
products of at most 16 summed, plus 1: every partial sum an integer below
2**24), whose rows have numpy's integer bits at every batch size, however
XLA sums: one class by construction."""

from __future__ import annotations

import os
import sys
import types
from unittest import mock

import numpy as np
import pytest
import recorded
import testutil
from absl.testing import absltest

import hloprobe
from hloprobe import api
from hloprobe.api import calls, results
from hloprobe.errors import InvalidArgumentError
from hloprobe.sites import frames as site_frames

_PACKAGE = os.path.dirname(os.path.abspath(hloprobe.__file__))


def _results() -> results.Results:
  rec = recorded.load("seed_a100_n2_bfloat16")
  return results.Results((recorded.config_result(rec),), text="words")


class NamesTest(absltest.TestCase):
  def test_cases_is_the_builtin_mapping(self):
    # README "Reliability": `hloprobe.CASES`, read only.
    self.assertIn("seed_mlp", hloprobe.CASES)
    self.assertIs(hloprobe.CASES["seed_mlp"], hloprobe.get_case("seed_mlp"))
    with self.assertRaises(TypeError):
      hloprobe.CASES["x"] = None

  def test_sweep_is_the_api_function(self):
    from hloprobe import sweep as imported

    self.assertIs(imported, calls.sweep)
    self.assertIs(hloprobe.sweep, calls.sweep)
    self.assertIsInstance(hloprobe.sweep, types.FunctionType)
    self.assertNotIn("hloprobe.sweep", sys.modules)
    self.assertTrue(callable(hloprobe.explain))
    with self.assertRaisesRegex(InvalidArgumentError, "needs example arg"):
      hloprobe.sweep(lambda x: x)


class PluginEntryPointTest(absltest.TestCase):
  def test_pytest11_names_the_plugin_module(self):
    import importlib
    import tomllib

    with open(
      os.path.join(os.path.dirname(_PACKAGE), "pyproject.toml"), "rb"
    ) as f:
      entry = tomllib.load(f)["project"]["entry-points"]["pytest11"]
    plugin = importlib.import_module(entry["hloprobe"])
    self.assertTrue(callable(plugin.hloprobe_golden))
    self.assertTrue(callable(plugin.pytest_addoption))


class AsCaseTest(absltest.TestCase):
  def test_function_and_arguments_make_a_case(self):
    def mlp(x, w):
      return x @ w

    x, w = np.ones((5, 3), np.float32), np.ones((3, 2), np.float32)
    case = calls.as_case(mlp, x, w, in_axes=(0, None))
    self.assertEqual(case.name, "mlp")
    self.assertEqual(case.in_axes, (0, None))
    self.assertEqual(case.full_size(case.full_inputs()), 5)
    self.assertEqual(calls.as_case(lambda x: x, x).name, "lambda")

  def test_bad_input_is_one_line(self):
    with self.assertRaisesRegex(InvalidArgumentError, "expected a function"):
      calls.as_case(3, np.ones(2))
    with self.assertRaisesRegex(InvalidArgumentError, r"hloprobe.explain\(f"):
      calls.as_case(lambda x: x)


class PlanWordsTest(absltest.TestCase):
  """Keyword arguments a new user gets wrong, planned without compiling."""

  _X = np.ones((4, 8), np.float32)

  def _plan(self, **kw):
    f = lambda x: x * 2.0
    return api.plan_case(f, self._X, cache=False, jobs=1, **kw)

  def test_a_string_of_targets_is_the_command_lines_words(self):
    # `targets="cpu"` once read as the targets "c", "p", "u".
    plan = self._plan(targets="cpu", precisions="float32,bfloat16")
    self.assertEqual(tuple(t.name for t in plan.targets), ("cpu",))
    self.assertEqual(
      tuple(str(p) for p in plan.precisions), ("float32", "bfloat16")
    )

  def test_a_batch_size_above_the_rows_names_the_function(self):
    # Not the shipped case file's temporary path, nor --batch_sizes.
    with self.assertRaisesRegex(
      InvalidArgumentError,
      r"^batch size 9 exceeds the 4 example rows of 'lambda'; ",
    ) as e:
      self._plan(batch_sizes=[1, 9])
    self.assertIn("; use batch_sizes up to 4", str(e.exception))
    self.assertNotIn("/tmp", str(e.exception))

  def test_only_invariance_sweeps_without_numerics(self):
    self.assertTrue(self._plan().numerics)
    self.assertFalse(self._plan(only="invariance").numerics)

  def test_only_an_unknown_question_or_from_sweep_is_refused(self):
    with self.assertRaisesRegex(InvalidArgumentError, r"^only='accuracy'"):
      self._plan(only="accuracy")
    with self.assertRaisesRegex(InvalidArgumentError, r"is explain's"):
      hloprobe.sweep(lambda x: x, self._X, only="invariance")

  def test_invariance_takes_answer_or_off_and_only_from_explain(self):
    self.assertEqual(api.DEFAULTS.invariance, "answer")
    self._plan(invariance="off")  # planned alike: no error
    with self.assertRaisesRegex(InvalidArgumentError, r"^invariance='pin'"):
      self._plan(invariance="pin")
    with self.assertRaisesRegex(InvalidArgumentError, r"nothing would be"):
      self._plan(invariance="off", only="invariance")
    with self.assertRaisesRegex(InvalidArgumentError, r"is explain's"):
      hloprobe.sweep(lambda x: x, self._X, invariance="answer")


@pytest.mark.compiles
class OnlyInvarianceTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    # The two functions' sweeps share warm workers (each worker keeps a
    # case by its shipped file's words: the two are apart).
    cls.enterClassContext(testutil.shared_workers())

  def test_a_functions_rows_run_in_the_workers(self):
    g = np.random.default_rng(7)
    x = g.integers(-4, 5, (8, 16)).astype(np.float32)
    w = g.integers(-4, 5, (16, 4)).astype(np.float32)
    r = hloprobe.explain(
      lambda x, w: x @ w + 1.0,
      x,
      w,
      targets="cpu",
      precisions="float32",
      batch_sizes=[1, 2, 8],
      cache=False,
      only="invariance",
    )
    self.assertEqual(r.explanations, ())
    self.assertEqual(r.answer.findings, ())
    (a,) = r.answer.invariance
    self.assertIs(a.invariant, True, a.why)
    self.assertEqual(a.basis, "run")
    # Row 0 and the anchor: run in the workers (the shipped function).
    self.assertEqual([c.classes for c in a.rows], [((1, 2, 8),)] * 2)
    self.assertEqual(r.answer.pins, ())
    for rec in r.records:
      self.assertEqual(rec.execution.leaf_stats, ())
    lines = str(r).splitlines()
    self.assertTrue(
      lines[0].startswith("row 0 is batch-invariant on cpu under float32"),
      lines[0],
    )
    self.assertTrue(lines[-1].startswith("Bits only"), lines[-1])

  def test_a_functions_untried_pin_names_no_gone_file(self):
    # On the compile-only a100, n = 1 is a vector-matrix product (XLA's
    # DotStrengthReduction, xla/service/gpu/transforms/
    # dot_strength_reduction.cc: multiply+reduce), n = 2 a Triton gemm:
    # not invariant, so its pins are listed untried. The function's case
    # file is shipped to the workers and removed after: the words say how
    # to search instead of naming it.
    g = np.random.default_rng(7)
    x = g.standard_normal((2, 16)).astype(np.float32)
    w = g.standard_normal((16, 16)).astype(np.float32)
    r = hloprobe.explain(
      lambda x, w: x @ w,
      x,
      w,
      in_axes=(0, None),
      targets="a100",
      precisions="float32",
      batch_sizes=[1, 2],
      cache=False,
      only="invariance",
    )
    self.assertTrue(r.answer.pins)
    self.assertNotIn("hloprobe-case-", str(r))
    self.assertIn("on a case file of this function", str(r))


class ResultsTest(absltest.TestCase):
  def test_table_and_html_show_the_configs(self):
    r = _results()
    self.assertLen(r, 1)
    self.assertIn("seed_mlp", r.table())
    self.assertIn("a100", r.table("markdown"))
    html = r._repr_html_()
    self.assertIn("<table", html)
    self.assertIn("seed_mlp", html)
    self.assertNotIn("<pre>", html)  # no explanation: sweep's results
    self.assertEqual(str(r), "words")
    with self.assertRaisesRegex(ValueError, "unknown fmt 'json'"):
      r.table("json")

  def test_dataframe_or_one_import_error_line(self):
    with mock.patch.dict(sys.modules, {"pandas": None}):
      with self.assertRaisesRegex(ImportError, "^Results.to_dataframe needs"):
        _results().to_dataframe()


class ManifestPathsTest(absltest.TestCase):
  def test_paths_are_kept_relative_to_the_golden_folder(self):
    from hloprobe.golden import folder

    root = self.create_tempdir().full_path
    self.create_tempfile(os.path.join(root, "x.hlo"))  # a module file is one
    sweep = {
      "cases": ["seed_mlp", "cases/m.py:make", "pkg.mod:make", "x.hlo"],
      "targets": ["cpu", "configs/a.txtpb"],
    }
    with mock.patch("os.getcwd", return_value=root):
      kept = folder.manifest_words(os.path.join(root, "golden"), sweep)
    self.assertEqual(
      kept["cases"],
      ["seed_mlp", "../cases/m.py:make", "pkg.mod:make", "../x.hlo"],
    )
    self.assertEqual(kept["targets"], ["cpu", "../configs/a.txtpb"])
    # Read back from another folder: absolute (outside the current one).
    doc = {"schema_version": 3, "sweep": kept}
    read = folder.sweep_words(os.path.join(root, "golden"), doc)
    self.assertEqual(read["cases"][1], os.path.join(root, "cases/m.py:make"))
    self.assertEqual(read["targets"][1], os.path.join(root, "configs/a.txtpb"))

  def test_schema_2_paths_stay_relative_to_the_current_folder(self):
    from hloprobe.golden import folder

    doc = {"schema_version": 2, "sweep": {"cases": ["m.py:f"], "targets": []}}
    self.assertEqual(folder.sweep_words("/g", doc)["cases"], ["m.py:f"])


class FramesTest(absltest.TestCase):
  def test_hloprobes_own_frames_are_dropped(self):
    lowering = os.path.join(_PACKAGE, "compile", "compat.py")
    engine = os.path.join(_PACKAGE, "engine", "engine.py")
    stack = (
      "/u/model.py:6:18",
      "/u/layers.py:2:1",
      f"{lowering}:139:11",
      f"{engine}:374:11",
      "/u/notebook.py:11:5",
    )
    self.assertEqual(
      site_frames.program_frames(stack),
      ("/u/model.py:6:18", "/u/layers.py:2:1"),
    )

  def test_a_builtin_cases_program_is_kept(self):
    case = os.path.join(_PACKAGE, "compile", "builtin_cases.py")
    lowering = os.path.join(_PACKAGE, "compile", "lowering.py")
    stack = (f"{case}:40:3", f"{case}:55:9", f"{lowering}:210:13")
    self.assertEqual(site_frames.program_frames(stack), stack[:2])

  def test_a_stack_without_hloprobe_stays_whole(self):
    stack = ("/elsewhere/hloprobe/compile/compat.py:1:1", "/u/m.py:3:1")
    self.assertEqual(site_frames.program_frames(stack), stack)


if __name__ == "__main__":
  absltest.main()
