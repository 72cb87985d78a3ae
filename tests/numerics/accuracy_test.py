"""Error statistics, ULPs, noise floor and verdicts."""

from __future__ import annotations

import numpy as np
import pytest
from absl.testing import absltest, parameterized

from hloprobe.numerics import accuracy, floor_sum
from hloprobe.numerics.accuracy import ErrorStats, NoiseFloor
from hloprobe.numerics.verdicts import VerdictKind
from hloprobe.report.verdict_words import verdict_words

# Asserts CPU-computed floats: `make test-isa` reruns it under other ISAs.
pytestmark = pytest.mark.cpu_numerics


def _stats(
  row0: float, ref: float = 1.0, max_abs: float | None = None
) -> ErrorStats:
  err = abs(row0 - ref)
  return ErrorStats(row0, ref, err, err if max_abs is None else max_abs, err)


_NOISE = NoiseFloor(row0_abs=1e-4, max_abs=2e-4, row0_spread_abs=1e-5)
_TF32 = ("TF32_TF32_F32", "TF32_TF32_F32", "F32_F32_F32")
_F32 = ("F32_F32_F32",) * 3


class ErrorStatsTest(absltest.TestCase):
  def test_row0_and_normwise_relative(self):
    s = ErrorStats.of(np.float32([1.5, -2.0]), np.float64([1.0, -4.0]))
    self.assertEqual((s.row0, s.row0_ref, s.row0_abs), (1.5, 1.0, 0.5))
    self.assertEqual(s.max_abs, 2.0)
    self.assertEqual(s.max_rel, 0.5)  # 2 / max|ref| = 2 / 4

  def test_shape_mismatch(self):
    with self.assertRaisesRegex(ValueError, "shape"):
      ErrorStats.of(np.zeros(2), np.zeros(3))


class HeadlineLeafTest(parameterized.TestCase):
  @parameterized.parameters(
    # A loss (unbatched), then y: y.
    ((None, 0), None, 1),
    ((0, None), None, 0),
    ((None, 0, 1), ("float32", "int32", "bfloat16"), 2),  # float first
    ((None, 0), ("float32", "int32"), 1),  # batched before float
    ((None, None), ("int32", "float16"), 1),
    ((None, None), None, 0),
    ((0, 0, None), None, 0),  # several batched leaves: tree order
  )
  def test_rule(self, axes, dtypes, expected):
    self.assertEqual(accuracy.headline_leaf(axes, dtypes), expected)

  def test_no_leaves(self):
    with self.assertRaisesRegex(ValueError, "no output leaves"):
      accuracy.headline_leaf(())


class UlpTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("same", 1.0, 1.0, 0),
    ("next", 1.0, float(np.nextafter(np.float32(1), np.float32(2))), 1),
    ("across_zero", float(np.float32(-1e-45)), float(np.float32(1e-45)), 2),
    ("seed_row0", -0.5281725, -0.5281741, 27),
  )
  def test_f32(self, a, b, expected):
    self.assertEqual(accuracy.ulp_distance(a, b, np.float32), expected)


class NoiseFloorTest(absltest.TestCase):
  def test_from_orders(self):
    ref = np.array([1.0, 2.0])
    floor = floor_sum.noise_floor(
      {
        "a": np.array([1.0 + 1e-6, 2.0]),
        "b": np.array([1.0 - 3e-6, 2.0 + 5e-6]),
      },
      ref,
    )
    self.assertAlmostEqual(floor.row0_abs, 3e-6)
    self.assertAlmostEqual(floor.max_abs, 5e-6)
    self.assertAlmostEqual(floor.row0_spread_abs, 4e-6)

  def test_rule_and_multiple_agree(self):
    # Floor 1e-4, factor 2: row-0 errors up to 2e-4 are noise.
    for err, within, multiple in (
      (0.0, True, 0.0),
      (1e-4, True, 0.5),
      (2e-4, True, 1.0),
      (4e-4, False, 2.0),
    ):
      stats = _stats(1.0 + err)
      self.assertEqual(_NOISE.admits(stats), within, err)
      self.assertAlmostEqual(
        accuracy.noise_multiple(stats, _NOISE), multiple, places=6
      )
    zero = NoiseFloor(0.0, 0.0, 0.0)
    self.assertEqual(accuracy.noise_multiple(_stats(1.0), zero), 0.0)
    self.assertEqual(accuracy.noise_multiple(_stats(1.5), zero), np.inf)
    self.assertFalse(zero.admits(_stats(1.5)))

  def test_an_f32_overflow_is_never_noise(self):
    # float64 row 0 is 3e38 (finite); f32 overflowed to inf in every
    # order, so the floor is inf too: inf <= 2 x inf must not make it noise.
    overflow = _stats(np.inf, ref=3e38)
    floor = NoiseFloor(np.inf, np.inf, 0.0)
    self.assertFalse(floor.admits(overflow))
    self.assertEqual(accuracy.noise_multiple(overflow, floor), np.inf)
    self.assertNotIn("within", _words(None, overflow, floor, 0.0, _F32))


class VerdictTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("exact", _stats(1.0, max_abs=0.0), _stats(1.0), _F32, "exact"),
    (
      "noise",
      _stats(1.0 + 1.5e-4),
      _stats(1.0 + 1e-4),
      _F32,
      "within f32 noise",
    ),
    (
      "explained",
      _stats(1.6),
      _stats(1.61),
      _TF32,
      "explained by TF32_TF32_F32 at sites [0, 1]",
    ),
    ("off_prediction", _stats(1.3), _stats(1.61), _TF32, "unexplained"),
    ("f32_chosen_far", _stats(1.3), _stats(1.0001), _F32, "unexplained"),
  )
  def test_observed(self, observed, predicted, algorithms, expected):
    self.assertEqual(
      _words(observed, predicted, _NOISE, 0.05, algorithms), expected
    )

  def test_predicted_only(self):
    self.assertEqual(
      _words(None, _stats(1.61), _NOISE, 0.05, _TF32),
      "explained by TF32_TF32_F32 at sites [0, 1]",
    )
    self.assertEqual(
      _words(None, _stats(1.0 + 1e-4), _NOISE, 0.05, _F32),
      "within f32 noise",
    )


if __name__ == "__main__":
  absltest.main()


class Row0GapTest(absltest.TestCase):
  """Explained means all of row 0 sits within the tolerance of the
  prediction, not its first value alone (found by review)."""

  def _pair(self, observed_row, predicted_row):
    ref = np.float64([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    got = ref.copy()
    got[0] = observed_row
    want = ref.copy()
    want[0] = predicted_row
    return ErrorStats.of(got, ref), ErrorStats.of(want, ref)

  def test_a_planted_second_element_is_unexplained(self):
    # Element [0, 1] is 0.25 off the prediction, the first value agrees:
    # beyond the 0.05 tolerance whatever row 0's first value says.
    observed, predicted = self._pair([1.5, 2.75, 3.5], [1.5, 2.5, 3.5])
    self.assertEqual(accuracy.row0_gap(observed, predicted), 0.25)
    verdict = accuracy.judge(observed, predicted, _NOISE, 0.05, _TF32)
    self.assertEqual(verdict.kind, VerdictKind.UNEXPLAINED)

  def test_all_of_row0_within_the_tolerance_is_explained(self):
    observed, predicted = self._pair([1.5, 2.5, 3.5], [1.5, 2.5, 3.5 + 2**-6])
    self.assertEqual(accuracy.row0_gap(observed, predicted), 2**-6)
    verdict = accuracy.judge(observed, predicted, _NOISE, 0.05, _TF32)
    self.assertEqual(verdict.kind, VerdictKind.EXPLAINED)

  def test_nan_on_one_side_is_an_infinite_gap(self):
    observed, predicted = self._pair([1.5, np.nan, 3.5], [1.5, 2.5, 3.5])
    self.assertEqual(accuracy.row0_gap(observed, predicted), np.inf)
    both, _ = self._pair([1.5, np.nan, 3.5], [0, 0, 0])
    self.assertEqual(accuracy.row0_gap(both, both), 0.0)


def _words(*args) -> str:
  """`accuracy.judge`'s verdict in words (`report`'s words)."""
  return verdict_words(accuracy.judge(*args))
