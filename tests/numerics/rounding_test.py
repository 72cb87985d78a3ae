"""Tests of hloprobe.numerics.rounding against ml_dtypes and hand-worked bit patterns."""

from __future__ import annotations

import math

import jax
import ml_dtypes
import numpy as np
import pytest
from absl.testing import absltest, parameterized

from hloprobe.errors import InvalidArgumentError
from hloprobe.numerics import rounding

# Asserts CPU-computed floats: `make test-isa` reruns it under other ISAs.
pytestmark = [pytest.mark.cpu_numerics, pytest.mark.compiles]


def _f32(bits: int) -> np.ndarray:
  return np.array([bits], np.uint32).view(np.float32)


def _bits(x) -> int:
  return int(np.asarray(x, np.float32).reshape(-1).view(np.uint32)[0])


def _patterns(seed: int, n: int) -> np.ndarray:
  """Random f32 bit patterns (every exponent, subnormals, inf, nan), plus the
  same patterns moved onto BF16 and TF32 ties and their neighbours."""
  g = np.random.default_rng(seed)
  bits = g.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
  variants = [bits]
  for drop in (16, 13):  # bf16, tf32
    half = np.uint32(1 << (drop - 1))
    base = bits & np.uint32((0xFFFFFFFF << drop) & 0xFFFFFFFF)
    variants += [base | half, (base | half) + np.uint32(1), (base | half) - 1]
  edges = np.array(
    [0, 0x80000000, 1, 0x8000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F800000],
    np.uint32,
  )
  return np.concatenate(variants + [edges]).view(np.float32)


class Bf16Test(parameterized.TestCase):
  def test_matches_ml_dtypes_bit_for_bit(self):
    x = _patterns(seed=0, n=200_000)
    got = np.asarray(jax.jit(rounding.round_to_bf16)(x))
    with np.errstate(invalid="ignore", over="ignore"):
      want = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    finite = np.isfinite(x)
    self.assertGreater(int(np.sum(finite)), 700_000)
    np.testing.assert_array_equal(
      got[finite].view(np.uint32), want[finite].view(np.uint32)
    )

  def test_inf_and_nan_pass_through(self):
    x = np.array([np.inf, -np.inf, np.nan, -np.nan], np.float32)
    got = np.asarray(rounding.round_to_bf16(x))
    np.testing.assert_array_equal(got[:2], x[:2])
    self.assertTrue(np.all(np.isnan(got[2:])))

  @parameterized.named_parameters(
    ("tie_to_even_down", 0x3F808000, 0x3F800000),  # 1 + 2^-8
    ("tie_to_even_up", 0x3F818000, 0x3F820000),  # 1 + 3 * 2^-8
    ("above_tie", 0x3F808001, 0x3F810000),
    ("overflow_to_inf", 0x7F7FFFFF, 0x7F800000),
  )
  def test_hand_worked(self, bits, want):
    self.assertEqual(_bits(rounding.round_to_bf16(_f32(bits))), want)


class Tf32Test(parameterized.TestCase):
  # (input bits, rna result, rne result). TF32 keeps 10 of f32's 23 mantissa
  # bits, so the 13 dropped bits are a tie at 0x1000.
  @parameterized.named_parameters(
    ("one_plus_2m11_tie", 0x3F801000, 0x3F802000, 0x3F800000),
    ("one_plus_3x2m11_tie", 0x3F803000, 0x3F804000, 0x3F804000),
    ("negative_tie", 0xBF801000, 0xBF802000, 0xBF800000),
    ("just_above_tie", 0x3F801001, 0x3F802000, 0x3F802000),
    ("just_below_tie", 0x3F800FFF, 0x3F800000, 0x3F800000),
    ("subnormal_tie", 0x00001000, 0x00002000, 0x00000000),
    ("max_float_to_inf", 0x7F7FFFFF, 0x7F800000, 0x7F800000),
    ("already_tf32", 0x40490000, 0x40490000, 0x40490000),
  )
  def test_hand_worked(self, bits, rna, rne):
    x = _f32(bits)
    self.assertEqual(_bits(rounding.round_to_tf32(x, "rna")), rna)
    self.assertEqual(_bits(rounding.round_to_tf32(x, "rne")), rne)

  def test_one_plus_2m11_in_values(self):
    x = np.float32(1 + 2**-11)
    self.assertEqual(float(rounding.round_to_tf32(x, "rna")), 1 + 2**-10)
    self.assertEqual(float(rounding.round_to_tf32(x, "rne")), 1.0)

  @parameterized.parameters("rna", "rne")
  def test_error_within_half_ulp_and_on_grid(self, mode):
    x = _patterns(seed=1, n=100_000)
    x = x[np.isfinite(x) & (np.abs(x) < 3e38) & (np.abs(x) > 1e-37)]
    got = np.asarray(jax.jit(rounding.round_to_tf32, static_argnums=1)(x, mode))
    self.assertTrue(np.all(got.view(np.uint32) & np.uint32(0x1FFF) == 0))
    rel = np.abs(got.astype(np.float64) - x) / np.abs(x.astype(np.float64))
    self.assertLessEqual(float(rel.max()), 2.0**-11)

  def test_rne_differs_from_rna_only_on_ties(self):
    x = _patterns(seed=2, n=100_000)
    x = x[np.isfinite(x)]
    rna = np.asarray(rounding.round_to_tf32(x, "rna"))
    rne = np.asarray(rounding.round_to_tf32(x, "rne"))
    differ = rna.view(np.uint32) != rne.view(np.uint32)
    ties = (x.view(np.uint32) & np.uint32(0x1FFF)) == 0x1000
    self.assertTrue(np.any(differ))
    self.assertTrue(np.all(ties[differ]))

  def test_unknown_mode_is_an_error(self):
    with self.assertRaisesRegex(InvalidArgumentError, "'rd'.*rna, rne, rz"):
      rounding.round_to_tf32(np.float32(1), "rd")

  @parameterized.named_parameters(
    # (input bits, truncated): the 13 low bits cleared, never rounded up.
    ("tie", 0x3F801000, 0x3F800000),
    ("just_below_next", 0x3F801FFF, 0x3F800000),
    ("negative", 0xBF801FFF, 0xBF800000),
    ("max_float_stays_finite", 0x7F7FFFFF, 0x7F7FE000),
    ("subnormal", 0x00001FFF, 0x00000000),
  )
  def test_rz_hand_worked(self, bits, want):
    self.assertEqual(_bits(rounding.round_to_tf32(_f32(bits), "rz")), want)

  def test_rz_is_truncation_by_frexp(self):
    # Independent of bit patterns: |x| = m 2^e with m in [0.5, 1) (Python's
    # float64 frexp, exact for f32 values); truncating to TF32's 11
    # significant bits is floor(m 2^11) 2^(e - 11), sign kept.
    x = _patterns(seed=3, n=20_000)
    x = x[np.isfinite(x) & (np.abs(x) >= np.finfo(np.float32).tiny)]
    got = np.asarray(jax.jit(rounding.round_to_tf32, static_argnums=1)(x, "rz"))
    want = []
    for v in x.astype(np.float64).tolist():
      m, e = math.frexp(abs(v))
      want.append(math.copysign(math.ldexp(math.floor(m * 2**11), e - 11), v))
    np.testing.assert_array_equal(got.astype(np.float64), np.array(want))
    # Its error reaches past RNA's half unit, to one unit: 2^-10, not 2^-11.
    rel = np.abs(got.astype(np.float64) - x) / np.abs(x.astype(np.float64))
    self.assertGreater(float(rel.max()), 2.0**-11)
    self.assertLess(float(rel.max()), 2.0**-10)


class SplitTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    g = np.random.default_rng(3)
    self.x = g.standard_normal(50_000) * 10.0 ** g.uniform(-20, 20, 50_000)
    self.x = self.x.astype(np.float32)

  def _assert_bf16(self, part):
    part = np.asarray(part)
    np.testing.assert_array_equal(
      part, part.astype(ml_dtypes.bfloat16).astype(np.float32)
    )

  def test_three_bf16_parts_are_exact(self):
    parts = rounding.split_bf16(self.x, 3)
    for part in parts:
      self._assert_bf16(part)
    total = sum(np.asarray(p, np.float64) for p in parts)
    np.testing.assert_array_equal(total, self.x.astype(np.float64))

  def test_two_bf16_parts_keep_16_bits(self):
    hi, lo = (np.asarray(p, np.float64) for p in rounding.split_bf16(self.x, 2))
    self._assert_bf16(hi)
    self._assert_bf16(lo)
    rel = np.abs(self.x - (hi + lo)) / np.abs(self.x)
    self.assertLessEqual(float(rel.max()), 2.0**-17)

  def test_tf32_parts_keep_22_bits(self):
    hi, lo = (np.asarray(p) for p in rounding.split_tf32(self.x))
    for part in (hi, lo):
      self.assertTrue(np.all(part.view(np.uint32) & np.uint32(0x1FFF) == 0))
    total = hi.astype(np.float64) + lo
    rel = np.abs(self.x - total) / np.abs(self.x)
    self.assertLessEqual(float(rel.max()), 2.0**-21)


if __name__ == "__main__":
  absltest.main()
