"""Predicted numerics of the seed case: the issue's measured facts."""

from __future__ import annotations

import numpy as np
import pytest
from absl.testing import absltest
from testutil import numpy_seed_row0

from hloprobe import sweep
from hloprobe.compile import cases
from hloprobe.numerics import accuracy, emulate, predict, reference

# Asserts CPU-computed floats: `make test-isa` reruns it under other ISAs.
pytestmark = [pytest.mark.cpu_numerics, pytest.mark.compiles]


def _sweep(targets, precisions, sizes=(1, 2)):
  spec = sweep.SweepSpec(("seed_mlp",), sizes, precisions, targets)
  return {
    (r.config.target.name, r.config.precision, r.config.n): r
    for r in sweep.run_sweep(spec)
  }


def _f32_ulp(x: float) -> float:
  return float(np.spacing(np.float32(abs(x))))


class SeedA100Test(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.r = _sweep(
      ("a100",), ("bfloat16", "tensorfloat32", "float32"), (1, 2, 9)
    )
    cls.numpy_tf32_move = abs(numpy_seed_row0((0, 1, 2)) - numpy_seed_row0())

  def test_numpy_tf32_move_is_the_readmes_0_61(self):
    # README: row 0 moves by 0.61 under bfloat16 on an A100.
    self.assertAlmostEqual(self.numpy_tf32_move, 0.61, delta=0.005)

  def test_tf32_kernels_move_row0_by_about_0_6(self):
    for n in (2, 9):
      p = self.r["a100", "bfloat16", n].prediction
      self.assertEqual(
        p.site_algorithms, ("TF32_TF32_F32",) * 3 + ("F32_F32_F32",)
      )
      # numpy float64 with TF32-rounded operands at sites 0-2: 0.6100.
      self.assertAlmostEqual(p.stats.row0_abs, self.numpy_tf32_move, delta=0.02)
      self.assertEqual(
        p.verdict, "explained by TF32_TF32_F32 at sites [0, 1, 2]"
      )
      # Site 0 (K = 2: the input coordinates rounded to TF32, then sin(16x))
      # carries almost all of it.
      self.assertEqual(p.top_site, 0)
      self.assertGreater(p.shares[0].share, 0.9)
      self.assertLess(p.shares[0].without_abs, 0.1)

  def test_f32_configs_stay_at_the_noise_floor(self):
    tf32 = self.r["a100", "bfloat16", 2].prediction
    for key in (
      ("bfloat16", 1),
      ("tensorfloat32", 2),
      ("float32", 9),
      ("tensorfloat32", 9),
    ):
      p = self.r[("a100",) + key].prediction
      self.assertEqual(p.verdict, "within f32 noise", key)
      # The network amplifies f32 rounding (about 1e-4 here, by a factor
      # that depends on the CPU's sum order) far above row 0's own ULP, yet
      # far below the 0.6 of TF32 operand rounding.
      self.assertGreater(p.noise.row0_abs, 100 * _f32_ulp(p.stats.row0))
      self.assertLess(p.noise.row0_abs, tf32.stats.row0_abs / 100)
      self.assertEqual(p.shares, ())
      self.assertIsNone(p.top_site)

  def test_site_bands(self):
    p = self.r["a100", "bfloat16", 2].prediction
    self.assertEqual([b.algorithm for b in p.bands], list(p.site_algorithms))
    self.assertEqual([b.K for b in p.bands], [2, 48, 48, 48])
    tf32, f32 = p.bands[1], p.bands[3]
    self.assertGreater(tf32.worst_abs, 100 * f32.worst_abs)
    self.assertLess(tf32.expected_abs, tf32.worst_abs)


class SeedCpuTest(absltest.TestCase):
  def test_prediction_matches_observation(self):
    results = _sweep(("cpu",), ("bfloat16", "float32"), (1, 2, 3))
    for key, r in results.items():
      p = r.prediction
      self.assertIsNotNone(p, (key, r.prediction_error))
      self.assertLessEqual(
        abs(p.stats.row0 - r.execution.stats.row0), p.noise.row0_abs, key
      )
      self.assertEqual(p.verdict, "within f32 noise", key)
      self.assertEqual(p.best_candidate, "F32_F32_F32", key)


class ObservedOnA100Test(absltest.TestCase):
  """What a real A100 run would be judged as, with planted observations."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    case = cases.get_case("seed_mlp")
    full = case.make_inputs()
    refs = reference.References(case, full, (2,))
    (cls.ref,) = refs.at(2)
    cls.predictor = predict.Predictor(case, full, refs)
    cls.args = case.inputs_for(full, 2)
    cls.case = case
    cls.fates = _sweep(("a100",), ("bfloat16",), (2,))[
      "a100", "bfloat16", 2
    ].compilation.fates

  def _assert_judged(self, algorithms, order, verdict, best_candidate):
    """A run emulated with ALGORITHMS summed in ORDER, judged at batch 2."""
    out = emulate.emulate_case(self.case.fn, self.args, algorithms, order=order)
    observed = (accuracy.error_stats(out, self.ref),)
    p = self.predictor.predict(2, self.fates, observed)
    self.assertEqual(p.verdict, verdict)
    self.assertEqual(p.best_candidate, best_candidate)

  def test_tf32_run_in_another_order_is_explained(self):
    self._assert_judged(
      ("TF32_TF32_F32",) * 3 + ("F32_F32_F32",),
      "pairwise",
      "explained by TF32_TF32_F32 at sites [0, 1, 2]",
      "TF32_TF32_F32 at sites [0, 1, 2]",
    )

  def test_f32_run_reveals_a_wrong_assumption(self):
    self._assert_judged(
      "F32_F32_F32",
      "blocked",
      "within f32 noise; TF32_TF32_F32 at sites [0, 1, 2] predicted, not "
      "seen in this run",
      "F32_F32_F32",
    )

  def test_bf16_run_is_unexplained_but_named(self):
    self._assert_judged(
      ("BF16_BF16_F32",) * 3 + ("F32_F32_F32",),
      "xla",
      "unexplained; TF32_TF32_F32 at sites [0, 1, 2] below the requested "
      "precision",
      "BF16_BF16_F32 at sites [0, 1, 2]",
    )


if __name__ == "__main__":
  absltest.main()
