"""Shared by the tests: running the command line as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_hloprobe(
  *args: str,
  env: dict | None = None,
  drop=(),
  timeout: float = 600,
  cwd: str | None = None,
) -> subprocess.CompletedProcess:
  """`python -m hloprobe ARGS` in a fresh process, this checkout importable.

  Args:
    args: command-line words.
    env: extra environment variables.
    drop: environment variables to remove (e.g. to see the CLI set them).
    cwd: the folder to run in (default: this one).
  """
  full = {k: v for k, v in os.environ.items() if k not in drop}
  full.update(env or {})
  full["PYTHONPATH"] = os.pathsep.join(
    filter(None, [ROOT, full.get("PYTHONPATH")])
  )
  return subprocess.run(
    [sys.executable, "-m", "hloprobe", *args],
    capture_output=True,
    text=True,
    env=full,
    timeout=timeout,
    check=False,
    cwd=cwd,
  )


def run_hloprobe_json(test, *args: str, **kwargs) -> dict:
  """run_hloprobe(ARGS, **KWARGS), asserted on TEST to exit 0: its JSON."""
  proc = run_hloprobe(*args, **kwargs)
  test.assertEqual(proc.returncode, 0, proc.stderr)
  return json.loads(proc.stdout)
