"""api/ship.py: a case made in a test module sent to workers as a file
(cloudpickle by value), loaded back here with the loader it writes (as a
worker loads `<folder>/case.py:make_case`; here in this process, no
worker), its function's code keeping this file's name; a case that
cannot pickle named in one line; the workers' environment set for a
block and restored. Expected values are the case's own fields and what
its function computes in numpy."""

from __future__ import annotations

import os
import runpy
import shutil
import threading
from unittest import mock

import numpy as np
from absl.testing import absltest

from hloprobe import engine
from hloprobe.api import ship
from hloprobe.compile import Case
from hloprobe.errors import CaseError


def _double(x):
  return 2 * x


def _inputs():
  return (np.arange(3.0),)


class ShipTest(absltest.TestCase):
  def test_a_test_module_case_round_trips_by_value(self):
    words, folder = ship.ship(Case("double", "2x", _double, _inputs))
    self.addCleanup(shutil.rmtree, folder, ignore_errors=True)
    loader, factory = words.rsplit(":", 1)
    self.assertEqual((os.path.dirname(loader), factory), (folder, "make_case"))
    case = runpy.run_path(loader)["make_case"]()
    self.assertEqual((case.name, case.description), ("double", "2x"))
    np.testing.assert_array_equal(case.fn(*case.make_inputs()), [0.0, 2.0, 4.0])
    self.assertEqual(case.fn.__code__.co_filename, __file__)

  def test_an_unpicklable_case_is_one_line(self):
    lock = threading.Lock()
    fn = lambda x: x if lock else x
    with self.assertRaisesRegex(
      CaseError, r"^case 'locked' cannot be sent to the worker processes"
    ):
      ship.ship(Case("locked", "a lock inside", fn, _inputs))

  def test_worker_environment_for_the_block_only(self):
    plan = engine.plan_sweep(
      engine.SweepSpec(("seed_mlp",), (1,), ("float32",), ("cpu",))
    )
    with mock.patch.dict(os.environ, {"PYTHONPATH": "/given"}, clear=False):
      os.environ.pop("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", None)
      with ship.worker_environment(plan):
        self.assertEqual(os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"], "1")
        self.assertTrue(os.environ["PYTHONPATH"].startswith("/given"))
      self.assertNotIn("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", os.environ)
      self.assertEqual(os.environ["PYTHONPATH"], "/given")


if __name__ == "__main__":
  absltest.main()
