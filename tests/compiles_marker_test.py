"""The `compiles` marker check of tests/conftest.py, tested: it fails an
unmarked test phase that compiles with XLA or starts a Python process, and
passes a marked one or one that starts only a non-Python program."""

from __future__ import annotations

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


if __name__ == "__main__":
  absltest.main()
