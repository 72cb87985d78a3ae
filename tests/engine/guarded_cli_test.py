"""The reliability catalogue, issue 27 items 6 and 14: a user case that
misbehaves where it loads or makes its inputs is one `hloprobe: error:`
line and exit 2; an interrupt while it loads always stops hloprobe.

The factories, names and outputs themselves are checked without a worker
in guarded_units_test.py; the misbehaving programs in guarded_test.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import testutil
from absl.testing import absltest, parameterized
from testutil import ROOT, run_hloprobe_here

_CASES = os.path.join(
  os.path.dirname(os.path.dirname(__file__)), "guard_testdata", "cases.py"
)


def _sweep_here(factory: str, *more: str):
  return run_hloprobe_here(
    "sweep",
    f"--case={_CASES}:{factory}",
    "--targets=cpu",
    "--batch_sizes=1",
    "--precisions=float32",
    "--nocache",
    *more,
    timeout_s=300,
  )


@pytest.mark.compiles  # the case loads in a worker process
class UserCaseInputTest(testutil.BadInputCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    # The cases load in one kept worker (started again where one kills it
    # or hangs), not a new Python and jax import each.
    cls.enterClassContext(testutil.shared_case_loader())

  @parameterized.named_parameters(
    ("inputs_int", "inputs_int", "make_inputs() failed: TypeError"),
    ("inputs_raise", "inputs_raise", "make_inputs() failed: ValueError"),
    ("fn_returns_none", "returns_none", "fn returned None"),
    ("name_nul", "name_nul", "holds a control character"),
    ("sys_exit", "factory_exits", "SystemExit: sys.exit(3)"),
    ("os_exit0", "factory_os_exit0", "exited with status 0"),
  )
  def test_one_line_exit_2(self, factory, message):
    self.assertUsageError(_sweep_here(factory), message)

  def test_a_factory_that_loops_forever_times_out(self):
    self.assertUsageError(
      _sweep_here("factory_loops", "--case_timeout=12"),
      "loading it ran past --case_timeout=12 s",
    )


@pytest.mark.compiles  # a whole hloprobe process, loading a case
class InterruptWhileLoadingTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("sigint", signal.SIGINT), ("sigterm", signal.SIGTERM)
  )
  def test_stops_hloprobe(self, signum):
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen(
      [sys.executable, "-m", "hloprobe", "sweep", "--nocache"]
      + [f"--case={_CASES}:factory_loops", "--batch_sizes=1"],
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
      env=env,
    )
    time.sleep(8)  # past hloprobe's start, into the case's load
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    self.assertEqual(proc.returncode, 128 + signum, err)
    self.assertIn("hloprobe: interrupted", err)
    self.assertNotIn("failed to import", err)
    self.assertNotIn("Traceback", err)
    self.assertEqual(out, "")


if __name__ == "__main__":
  absltest.main()
