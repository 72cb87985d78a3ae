"""The public API: every name in __all__ exists; importing registers no flags,
imports no JAX and leaves stderr alone."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest
from absl.testing import absltest

import hloprobe

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fresh(code: str) -> subprocess.CompletedProcess:
  """Runs `python -c code` in a fresh process with this checkout first."""
  return subprocess.run(
    [sys.executable, "-c", code],
    capture_output=True,
    text=True,
    check=True,
    env=dict(os.environ, PYTHONPATH=_ROOT),
  )


class ApiTest(absltest.TestCase):
  def test_all_names_exist_and_sorted(self):
    self.assertEqual(hloprobe.__all__, sorted(hloprobe.__all__))
    for name in hloprobe.__all__:
      self.assertTrue(hasattr(hloprobe, name), name)

  @pytest.mark.compiles  # a fresh Python process
  def test_import_registers_no_flags(self):
    # In a fresh process: other tests in this one may import hloprobe.cli.
    code = (
      "import hloprobe; from absl import flags; "
      "print(sorted(n for n in flags.FLAGS if n in ('case', 'batch_sizes')))"
    )
    out = _fresh(code)
    self.assertEqual(out.stdout.strip(), "[]")

  def test_no_private_names_exported(self):
    self.assertEqual([n for n in hloprobe.__all__ if n.startswith("_")], [])

  def test_the_top_level_is_the_python_api(self):
    # Issue 36: the top level exports the Python API, about 15 names.
    self.assertLessEqual(len(hloprobe.__all__), 16)
    self.assertIsInstance(hloprobe.sweep, types.FunctionType)
    with self.assertRaises(AttributeError):
      hloprobe.parse_ptx  # noqa: B018 (a stage's name, not the API's)

  @pytest.mark.compiles  # a fresh Python process
  def test_import_and_ir_load_no_jax(self):
    # The text parsers work without the JAX runtime; nothing at import time
    # captures stderr (only the command line silences the CUDA plugin).
    code = (
      "import sys, hloprobe, hloprobe.ir; "
      "hloprobe.ir.parse_hlo_module; hloprobe.ir.parse_ptx; "
      "print(sorted(m for m in ('jax', 'jaxlib') if m in sys.modules))"
    )
    out = _fresh(code)
    self.assertEqual(out.stdout.strip(), "[]")
    self.assertEqual(out.stderr, "")

  def test_api_functions_for_each_command(self):
    for name in (
      "explain",
      "golden_check",
      "golden_update",
      "verify_fix",
    ):
      self.assertTrue(callable(getattr(hloprobe, name)), name)


if __name__ == "__main__":
  absltest.main()
