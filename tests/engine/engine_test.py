"""Tests of the sweep over real CPU compiles and runs."""

from __future__ import annotations

import dataclasses

import pytest
import testutil
from absl.testing import absltest
from testutil import numpy_seed_row0

from hloprobe import engine, records
from hloprobe.compile import cases, targets
from hloprobe.engine import measure
from hloprobe.errors import InvalidArgumentError
from hloprobe.numerics import CaseNumerics, accuracy

# Asserts CPU-computed floats: `make test-isa` reruns it under other ISAs.
pytestmark = pytest.mark.cpu_numerics

# One pool of workers for the module's sweeps (each reuses them; a sweep
# of its own pool is run_sweep's default, which the command line's tests
# run).
_POOL = testutil.SweepPool()


def tearDownModule():
  _POOL.close()


@pytest.mark.compiles
class SeedSweepTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    spec = engine.SweepSpec(("seed_mlp",), (1, 2), ("float32",), ("cpu",))
    cls.results = {r.config.n: r for r in _POOL.run(spec)}

  def test_row0_depends_on_batch_size_on_cpu(self):
    r1, r2 = self.results[1], self.results[2]
    self.assertTrue(r1.ok and r2.ok, (r1.failure, r2.failure))
    e1, e2 = r1.execution, r2.execution
    # n = 1 is multiply+reduce, n = 2 a dot: f32 sums in other orders.
    self.assertNotEqual(e1.stats.row0, e2.stats.row0)
    self.assertEqual(e1.ulp_vs_n1, 0)
    self.assertGreater(e2.ulp_vs_n1, 0)
    # Both are f32 roundings of one float64 value, so they differ by no more
    # than the two errors, each bounded by the f32 noise floor that the same
    # machine measured (the "within f32 noise" rule of numerics.verdict).
    bound = accuracy.NOISE_FACTOR * max(
      r.prediction.noise.row0_abs for r in (r1, r2)
    )
    self.assertLessEqual(abs(e1.stats.row0 - e2.stats.row0), 2 * bound)

  def test_errors_against_float64(self):
    r2 = self.results[2]
    s = r2.execution.stats
    # The reference is float64: numpy's own forward pass of the same MLP.
    self.assertAlmostEqual(s.row0_ref, numpy_seed_row0(), delta=1e-12)
    self.assertGreater(s.row0_abs, 0.0)
    self.assertLessEqual(
      s.row0_abs,
      accuracy.NOISE_FACTOR * r2.prediction.noise.row0_abs,
    )
    # Row 0's error is against numpy's float64, not another row's (the
    # former `max_abs >= row0_abs` and `row0_abs == |row0 - row0_ref|` held
    # by construction; ErrorStats on planted arrays: accuracy_test).
    self.assertAlmostEqual(
      s.row0_abs, abs(s.row0 - numpy_seed_row0()), delta=1e-12
    )
    self.assertGreater(r2.compilation.compile_s, 0.0)
    self.assertGreater(r2.execution.run_s, 0.0)

  def test_records_of_a_config_that_ran(self):
    r2 = self.results[2]
    self.assertEqual(
      r2.config,
      records.Config("seed_mlp", targets.get_target("cpu"), 2, "float32"),
    )
    self.assertIsNone(r2.failure)
    # One output array: the headline is leaf 0, a float32 row.
    self.assertLen(r2.execution.leaf_stats, 1)
    self.assertEqual(r2.execution.headline, 0)
    self.assertEqual(r2.execution.output_dtype, "float32")
    self.assertIn("stablehlo.dot_general", r2.compilation.stablehlo)
    self.assertLen(r2.compilation.fates, 4)
    self.assertIsNone(r2.compilation.ptxas)  # no GPU kernels on CPU


@pytest.mark.compiles
class FailureIsolationTest(absltest.TestCase):
  def test_one_failing_config_keeps_the_others(self):
    # TF32_TF32_F32 is rejected by the CPU's dot_general lowering (jax 0.10.2).
    spec = engine.SweepSpec(
      ("seed_mlp",), (2,), ("TF32_TF32_F32", "float32"), ("cpu",)
    )
    bad, good = _POOL.run(spec)
    self.assertFalse(bad.ok)
    self.assertEqual(bad.failure.stage, "compile")
    self.assertIn("not supported by dot_general on CPU", bad.failure.error)
    self.assertNotIn("\n", bad.failure.error)
    # A failed compile made no compile record, so nothing ran or predicted.
    self.assertIsNone(bad.compilation)
    self.assertIsNone(bad.execution)
    self.assertIsNone(bad.prediction)
    self.assertTrue(good.ok)
    self.assertLen(good.compilation.fates, 4)

  def test_batch_larger_than_case_is_a_usage_error_up_front(self):
    # One failure per config would hide the cause: bad input, before any run.
    spec = engine.SweepSpec(("seed_mlp",), (1, 5000), ("float32",), ("cpu",))
    with self.assertRaisesRegex(
      InvalidArgumentError,
      "batch size 5000 exceeds the 4096 rows of case 'seed_mlp'",
    ):
      engine.run_sweep(spec)

  def test_plan_rejects_unknown_names(self):
    base = engine.SweepSpec(("seed_mlp",), (1,), ("float32",), ("cpu",))
    for field, value, message in (
      ("cases", ("nope",), "unknown case"),
      ("precisions", ("fp32",), "unknown precision"),
      ("targets", ("tpu",), "unknown target"),
    ):
      with self.assertRaisesRegex(InvalidArgumentError, message):
        engine.plan_sweep(base, **{field: value})

  def test_missing_reference_and_predictor_say_why(self):
    case = cases.get_case("seed_mlp")
    full = case.make_inputs()

    def broken(*args):
      raise ValueError("boom")

    made = CaseNumerics.of(dataclasses.replace(case, fn=broken), full, (2,))
    self.assertIsNone(made.references)
    self.assertIsNone(made.lie)
    self.assertIsNone(made.predictor)
    self.assertEqual(made.why, "no float64 reference: ValueError: boom")

    # A predictor that fails reports its own cause, not a missing reference.
    class Failing:
      def predict(self, *args):
        raise RuntimeError("emulator broke")

    r = records.ConfigResult(
      records.Config("c", targets.get_target("cpu"), 2, "float32"),
      records.Compilation("", "", fates=(None,)),
    )
    r = measure._with_prediction(r, Failing(), None)
    self.assertEqual(r.prediction_error, "RuntimeError: emulator broke")


@pytest.mark.compiles
class CompileOnlyRecordsTest(absltest.TestCase):
  def test_a_compile_only_target_has_no_execution(self):
    spec = engine.SweepSpec(("seed_mlp",), (2,), ("float32",), ("a100",))
    (r,) = _POOL.run(spec)
    self.assertTrue(r.ok, r.failure)
    a100 = targets.get_target("a100")
    self.assertEqual(r.config.target, a100)
    self.assertTrue(r.config.target.compile_only)
    # Compiled (in a worker process) and predicted, never run.
    self.assertIsNone(r.execution)
    self.assertLen(r.compilation.fates, 4)
    self.assertIsNotNone(r.prediction)
    self.assertIsNone(r.prediction_error)


if __name__ == "__main__":
  absltest.main()
