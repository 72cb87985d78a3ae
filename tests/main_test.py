"""The installed `hloprobe` console script enters where `python -m
hloprobe` does, with SIGINT and SIGTERM blocked while jax is imported."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest
import testutil
from absl.testing import absltest

# Calls the console script's entry point the way pip's generated script
# does (`sys.exit(main())`), the entry read from pyproject.toml, and prints
# which of SIGINT/SIGTERM are blocked when jax is first imported.
_AS_CONSOLE_SCRIPT = """
import importlib, signal, sys, tomllib

with open(sys.argv[1], "rb") as f:
  entry = tomllib.load(f)["project"]["scripts"]["hloprobe"]


class _Spy:
  def find_spec(self, name, path=None, target=None):
    if name == "jax":
      sys.meta_path.remove(self)
      mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
      wanted = (signal.SIGINT, signal.SIGTERM)
      names = sorted(s.name for s in wanted if s in mask)
      print("blocked at jax import:", ",".join(names), flush=True)
    return None


sys.meta_path.insert(0, _Spy())
module, function = entry.split(":")
sys.argv = ["hloprobe", "targets"]
sys.exit(getattr(importlib.import_module(module), function)())
"""


def _entry() -> str:
  with open(os.path.join(testutil.ROOT, "pyproject.toml"), "rb") as f:
    return tomllib.load(f)["project"]["scripts"]["hloprobe"]


class ConsoleScriptTest(absltest.TestCase):
  def test_entry_point_is_the_one_of_python_dash_m(self):
    from hloprobe import __main__

    module, function = _entry().split(":")
    self.assertEqual(module, __main__.__name__)
    self.assertIs(getattr(__main__, function), __main__.main)

  @pytest.mark.compiles  # a Python process that imports jax
  def test_signals_blocked_while_jax_is_imported(self):
    env = dict(os.environ, PYTHONPATH=testutil.ROOT, JAX_PLATFORMS="cpu")
    proc = subprocess.run(
      [
        sys.executable,
        "-c",
        _AS_CONSOLE_SCRIPT,
        os.path.join(testutil.ROOT, "pyproject.toml"),
      ],
      capture_output=True,
      text=True,
      env=env,
      timeout=300,
      check=False,
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    lines = proc.stdout.splitlines()
    self.assertEqual(lines[0], "blocked at jax import: SIGINT,SIGTERM")
    self.assertIn("a100", proc.stdout)  # the command ran: `hloprobe targets`


if __name__ == "__main__":
  absltest.main()
