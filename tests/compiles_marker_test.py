"""The `compiles` marker check of tests/conftest.py, tested: it fails an
unmarked test phase that compiles with XLA or starts a Python process, and
passes a marked one or one that starts only a non-Python program."""

from __future__ import annotations

import os
import subprocess
import sys

import conftest
import jax
import numpy as np
import pytest
from absl.testing import absltest


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


if __name__ == "__main__":
  absltest.main()
