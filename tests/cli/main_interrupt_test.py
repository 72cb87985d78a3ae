"""SIGINT where Python cannot raise: inside a garbage-collector callback
(as jax's `_xla_gc_callback`), during start-up and during a sweep.

A `sitecustomize` on PYTHONPATH adds a gc callback once the command line
imports a given module; at the next collection the callback sends SIGINT to
its own process, so the handler runs inside the callback, where an
exception is printed as "Exception ignored" and dropped. The command must
still end with 130 and one `hloprobe: interrupted` line, leaving nothing in
TMPDIR.
"""

from __future__ import annotations

import os
import signal

import pytest
from absl.testing import absltest, parameterized
from testutil import run_hloprobe

_SITECUSTOMIZE = """
import gc, os, signal, sys

_AT = os.environ.pop("HLOPROBE_TEST_SIGINT_AT", None)


def _in_gc(phase, info):
  if phase == "start":
    gc.callbacks.remove(_in_gc)
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(1000):  # bytecode here runs the Python handler
      pass


class _Finder:
  def find_spec(self, name, path=None, target=None):
    if name == _AT:
      sys.meta_path.remove(self)
      gc.callbacks.append(_in_gc)
    return None


if _AT:
  sys.meta_path.insert(0, _Finder())
"""


@pytest.mark.compiles  # sweeps through the command line, interrupted
class InterruptInGcCallbackTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("importing_jax", "jax"),  # the command line's quiet start-up
    ("sweeping", "hloprobe.report.stream"),  # handlers set, sweep starting
  )
  def test_interrupted_once_and_clean(self, module):
    hooks, tmp = (self.create_tempdir() for _ in range(2))
    hooks.create_file("sitecustomize.py", _SITECUSTOMIZE)
    proc = run_hloprobe(
      "sweep",
      "--batch_sizes=1-3",
      "--precisions=float32",
      "--nocache",
      "--jobs=1",
      env={
        "PYTHONPATH": hooks.full_path,
        "TMPDIR": tmp.full_path,
        "HLOPROBE_TEST_SIGINT_AT": module,
      },
    )
    self.assertEqual(proc.returncode, 128 + signal.SIGINT, proc.stderr)
    self.assertEqual(proc.stdout, "")
    self.assertNotIn("Exception ignored", proc.stderr)
    lines = proc.stderr.splitlines()
    self.assertNotEmpty(lines)
    self.assertRegex(lines[-1], r"^hloprobe: interrupted")
    self.assertLen([l for l in lines if l.startswith("hloprobe:")], 1)
    self.assertEqual(os.listdir(tmp.full_path), [])


if __name__ == "__main__":
  absltest.main()
