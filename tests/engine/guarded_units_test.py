"""Issue 27 items 5 and 14 without a worker: user cases' bad factories and
names are one `CaseError` line; complex outputs compare both parts; the
built-in case table refuses cases added at run time."""

from __future__ import annotations

import os

import numpy as np
from absl.testing import absltest, parameterized

from hloprobe.compile import CASES
from hloprobe.compile.cases import load_user_case
from hloprobe.engine import guarded
from hloprobe.engine.plan import SweptCase
from hloprobe.errors import CaseError
from hloprobe.numerics import ErrorStats
from hloprobe.runtime import Stopwatch

_CASES = os.path.join(
  os.path.dirname(os.path.dirname(__file__)), "guard_testdata", "cases.py"
)


class BadFactoryTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("name_none", "name_none", "name is None"),
    ("name_int", "name_int", "name is 7"),
    ("name_nul", "name_nul", "holds a control character"),
    ("base_exception", "factory_base_exception", "GeneratorExit: factory"),
    ("sys_exit", "factory_exits", "SystemExit: sys.exit(3)"),
  )
  def test_one_case_error_line(self, factory, words):
    with self.assertRaises(CaseError) as e:
      load_user_case(f"{_CASES}:{factory}")
    self.assertIn(words, str(e.exception))
    self.assertNotIn("\n", str(e.exception))

  def test_an_interrupt_in_a_factory_is_no_failed_import(self):
    path = self.create_tempfile(
      "interrupted.py",
      "def make():\n  raise KeyboardInterrupt(2)\n",
    ).full_path
    with self.assertRaises(KeyboardInterrupt):
      load_user_case(f"{path}:make")

  def test_an_interrupt_while_importing_is_no_failed_import(self):
    path = self.create_tempfile(
      "interrupted_import.py", "raise KeyboardInterrupt(2)\n"
    ).full_path
    with self.assertRaises(KeyboardInterrupt):
      load_user_case(f"{path}:make")


class _InterruptedPool:
  """A pool whose call is interrupted (^C while the case's worker works)."""

  def __init__(self):
    self.closed_with = None

  def call(self, request, xla_flags, timeout_s, lane):
    del request, xla_flags, timeout_s, lane
    raise KeyboardInterrupt

  def close(self, kill=False):
    self.closed_with = kill


class GuardedSetupTest(absltest.TestCase):
  def test_an_interrupt_mid_call_kills_the_cases_worker(self):
    # Its reply, sent later, would answer the next call: the pool (the
    # plan's loader, kept between sweeps) is closed, its worker killed.
    case = load_user_case(f"{_CASES}:prints")
    pool = _InterruptedPool()
    setup = guarded.GuardedSetup(
      SweptCase(case, f"{_CASES}:prints", True), (1,), print, pool, 0, 9, False
    )
    with self.assertRaises(KeyboardInterrupt):
      setup.inputs(Stopwatch())
    self.assertIs(pool.closed_with, True)
    self.assertIsNone(setup.broken)


class RuntimeCasesTest(absltest.TestCase):
  def test_the_builtin_table_refuses_a_case_added_at_run_time(self):
    with self.assertRaisesRegex(TypeError, "does not support item"):
      CASES["mine"] = CASES["seed_mlp"]  # a Case record goes in a spec


class ComplexStatsTest(absltest.TestCase):
  def test_an_error_in_the_imaginary_part_is_seen(self):
    got = np.array([[1 + 2j, 3 + 4j], [5 + 6j, 7 + 8j]], np.complex64)
    ref = got.astype(np.complex128)
    ref[0, 1] += 0.5j  # imaginary part only
    s = ErrorStats.of(got, ref, 0)
    self.assertEqual(s.max_abs, 0.5)
    self.assertEqual(s.row0_abs, 0.5)
    # 0.5 at 4.0 in f32: 0.5 / 2**(2 - 23) ULPs.
    self.assertEqual(s.row0_ulp, 2**20)
    self.assertEqual(s.elements, 4)
    self.assertEqual(str(s.row0_values.dtype), "complex64")

  def test_equal_complex_is_exact(self):
    got = np.array([[1 - 2j]], np.complex64)
    s = ErrorStats.of(got, got.astype(np.complex128), -1)
    self.assertEqual((s.max_abs, s.row0_ulp), (0.0, 0))

  def test_bool_compares_as_zero_and_one(self):
    got = np.array([[True, False]])
    ref = np.array([[1.0, 1.0]])
    s = ErrorStats.of(got, ref, 0)
    self.assertEqual(s.max_abs, 1.0)
    self.assertIsNone(s.row0_ulp)


class CaseWorkerSetupTest(absltest.TestCase):
  """explain's fix tries reuse the explain sweep's references and
  emulations in the case's worker (issue 37): a sweep whose sizes are
  some of an earlier one's, with its smallest and largest, gets its
  setup; one with another smallest or largest, or other sizes, a new
  one."""

  def test_a_sweep_within_an_earlier_ones_sizes_reuses_its_setup(self):
    memo = {}
    first, _ = guarded._setup(memo, "seed_mlp", (1, 2, 9), None)
    self.assertIs(guarded._setup(memo, "seed_mlp", (1, 9), None)[0], first)
    self.assertIs(guarded._setup(memo, "seed_mlp", (1, 2, 9), None)[0], first)
    self.assertIsNot(guarded._setup(memo, "seed_mlp", (2, 9), None)[0], first)
    self.assertIsNot(guarded._setup(memo, "seed_mlp", (1, 4), None)[0], first)
    other, _ = guarded._setup(memo, "seed_mlp", (1, 5, 9), None)
    self.assertIsNot(other, first)
    self.assertEqual(other.sizes, (1, 5, 9))


if __name__ == "__main__":
  absltest.main()
