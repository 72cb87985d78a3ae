"""tests/conftest.py's own rules, tested.

The `compiles` marker check fails an unmarked test phase that compiles
with XLA or starts a Python process, and passes a marked one or one that
starts only a non-Python program. `LONGEST_FIRST` orders the files. The
suite's clock (tests/suite_clock.py) prints the slowest files and fails a
whole-suite run over its load-scaled budget, and only such a run: checked
on pytest's own `pytester` running a two-file suite in process.
"""

from __future__ import annotations

import os
import subprocess
import sys

import conftest
import jax
import numpy as np
import pytest
import suite_clock
from absl.testing import absltest

pytest_plugins = ["pytester"]


class _Item:
  """What `conftest._watched` reads of a pytest item."""

  def __init__(self, marked: bool):
    self.nodeid = "fake_test.py::FakeTest::test_it"
    self._marked = marked

  def get_closest_marker(self, name: str):
    return object() if self._marked and name == "compiles" else None


def _phase(marked: bool, body) -> None:
  """Runs `body` as one phase of a fake test, under the check."""
  watch = conftest._watched(_Item(marked))
  next(watch)  # the phase starts
  body()
  with pytest.raises(StopIteration):
    watch.send(None)  # the phase ended: the check runs


def _compile_something_new() -> None:
  # A function jax has not compiled in this process: a fresh lambda.
  jax.jit(lambda x: x * 3 + 1)(np.float32(2)).block_until_ready()


def _python() -> None:
  subprocess.run([sys.executable, "-c", "pass"], check=True)


def _not_python() -> None:
  subprocess.run(["true"], check=True)


# This test itself compiles and starts a Python, on purpose.
@pytest.mark.compiles
class CompilesMarkerTest(absltest.TestCase):
  def test_unmarked_compile_fails(self):
    with self.assertRaisesRegex(
      pytest.fail.Exception, r"not marked `compiles` but started an XLA"
    ):
      _phase(False, _compile_something_new)

  def test_marked_compile_passes(self):
    _phase(True, _compile_something_new)

  def test_unmarked_python_process_fails(self):
    with self.assertRaisesRegex(
      pytest.fail.Exception, r"not marked `compiles` but started a process"
    ):
      _phase(False, _python)

  def test_unmarked_other_program_passes(self):
    _phase(False, _not_python)

  def test_nothing_started_passes(self):
    _phase(False, lambda: np.float32(1) + 1)


class LongestFirstTest(absltest.TestCase):
  """conftest.LONGEST_FIRST, which `make test` hands out first."""

  def test_names_test_files_once(self):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for path in conftest.LONGEST_FIRST:
      self.assertTrue(os.path.isfile(os.path.join(root, path)), path)
      self.assertTrue(path.startswith("tests/") and path.endswith("_test.py"))
    self.assertLen(set(conftest.LONGEST_FIRST), len(conftest.LONGEST_FIRST))

  def test_sorts_those_files_first_and_keeps_the_rest_in_order(self):
    class Item:
      def __init__(self, nodeid):
        self.nodeid = nodeid

    first, second = conftest.LONGEST_FIRST[:2]
    names = ["tests/a_test.py::T::test_1", f"{second}::test_x"]
    names += [f"{first}::T::test_y", "tests/b_test.py::test_2"]
    names += [f"{first}::T::test_z"]
    items = [Item(n) for n in names]
    conftest.pytest_collection_modifyitems(None, None, items)
    self.assertEqual(
      [i.nodeid for i in items],
      [
        f"{first}::T::test_y",
        f"{first}::T::test_z",
        f"{second}::test_x",
        "tests/a_test.py::T::test_1",
        "tests/b_test.py::test_2",
      ],
    )


class SuiteClockTest(absltest.TestCase):
  def test_within_and_over_budget_on_an_idle_machine(self):
    over, line = suite_clock.budget_verdict(599, 480, load=0.0, ncpu=2)
    self.assertFalse(over, line)
    self.assertEndsWith(line, "= 600 s: within")
    over, line = suite_clock.budget_verdict(601, 480, load=0.0, ncpu=2)
    self.assertTrue(over)
    self.assertIn("load factor 1.00 (one-minute load 0.00 on 2 cpus", line)

  def test_a_loaded_machine_scales_the_budget(self):
    # Others keeping both cpus busy: the suite gets half the machine.
    self.assertEqual(suite_clock.load_factor(2.0, 2), 2.0)
    self.assertEqual(suite_clock.load_factor(0.5, 2), 1.25)
    over, line = suite_clock.budget_verdict(1100, 480, load=2.0, ncpu=2)
    self.assertFalse(over, line)
    self.assertIn("load factor 2.00 (one-minute load 2.00 on 2 cpus", line)

  def test_slowest_files_first_ten_at_most(self):
    seconds = {f"tests/f{i:02}_test.py": float(i) for i in range(12)}
    lines = suite_clock.slowest_files(seconds)
    self.assertLen(lines, 10)
    self.assertEqual(lines[0], "    11.0 s  tests/f11_test.py")
    self.assertEqual(lines[-1], "     2.0 s  tests/f02_test.py")


_SUITE_CONFTEST = """
import suite_clock

def pytest_addoption(parser):
  parser.addoption("--suite-budget", action="store_true")

def pytest_configure(config):
  if not hasattr(config, "workerinput"):
    config.pluginmanager.register(
      suite_clock.SuiteClock(config, BUDGET), "suite_clock")
"""


def _suite(pytester, budget_s: float) -> None:
  """A two-file suite under tests/, its clock's budget `budget_s`."""
  tests = pytester.mkdir("tests")
  (tests / "conftest.py").write_text(
    _SUITE_CONFTEST.replace("BUDGET", repr(budget_s))
  )
  (tests / "a_test.py").write_text("def test_a():\n  pass\n")
  (tests / "b_test.py").write_text("def test_b():\n  pass\n")


# Hypothesis's plugin left out of the inner sessions (their tests use
# none): its terminal summary imports hypothesis whole in each (dropped
# when the session ends), some 2 CPU-s a session.
_NO_HYPOTHESIS = ("-p", "no:hypothesispytest")


def test_whole_suite_over_budget_fails(pytester):
  _suite(pytester, budget_s=0.0)
  result = pytester.runpytest_inprocess(
    "--suite-budget",
    *_NO_HYPOTHESIS,
    "-p",
    "no:cacheprovider",
    "-o",
    "python_files=*_test.py",
    "tests",
  )
  assert result.ret == pytest.ExitCode.TESTS_FAILED
  result.stdout.fnmatch_lines(
    ["*ten slowest test files*", "*tests/a_test.py", "*: OVER BUDGET"]
  )
  result.assert_outcomes(passed=2)


def test_selected_or_unflagged_runs_are_not_checked(pytester):
  _suite(pytester, budget_s=0.0)
  flags = (
    *_NO_HYPOTHESIS,
    "-p",
    "no:cacheprovider",
    "-o",
    "python_files=*_test.py",
  )
  result = pytester.runpytest_inprocess(
    "--suite-budget", *flags, "-k", "test_a", "tests"
  )
  assert result.ret == pytest.ExitCode.OK
  result.stdout.fnmatch_lines(
    ["budget check off: not the whole suite (-k 'test_a')"]
  )
  result = pytester.runpytest_inprocess(
    "--suite-budget", *flags, "tests/a_test.py"
  )
  assert result.ret == pytest.ExitCode.OK
  result.stdout.fnmatch_lines(["budget check off: not the whole suite (paths*"])
  result = pytester.runpytest_inprocess(*flags, "tests")
  assert result.ret == pytest.ExitCode.OK
  assert "suite budget" not in result.stdout.str()


if __name__ == "__main__":
  absltest.main()
