"""execute/rounding.py: operand rounding on numpy arrays, at the ties.

Expected values are exact binary fractions worked by hand: TF32 keeps 10
of f32's 23 mantissa bits, so at 1 its step is 2**-10 and the tie between
1 and 1 + 2**-10 is 1 + 2**-11; 'rna' takes it away from zero, 'rne' to
the even neighbour (1). bf16 keeps 7 bits (step 2**-7 at 1).
"""

from __future__ import annotations

import numpy as np
from absl.testing import absltest

from hloprobe.execute import rounding


class Tf32Test(absltest.TestCase):
  def test_ties_away_or_to_even(self):
    tie = np.float32([1 + 2**-11, -(1 + 2**-11), 1 + 3 * 2**-11])
    self.assertEqual(
      rounding.round_to_tf32(tie, "rna").tolist(),
      [1 + 2**-10, -(1 + 2**-10), 1 + 2 * 2**-10],
    )
    # 1 + 3 * 2**-11 lies between 1 + 2**-10 (odd) and 1 + 2 * 2**-10.
    self.assertEqual(
      rounding.round_to_tf32(tie, "rne").tolist(),
      [1.0, -1.0, 1 + 2 * 2**-10],
    )

  def test_non_finite_values_pass(self):
    x = np.float32([np.inf, -np.inf, np.nan])
    got = rounding.round_to_tf32(x, "rna")
    self.assertEqual(got[:2].tolist(), [np.inf, -np.inf])
    self.assertTrue(np.isnan(got[2]))

  def test_every_kind_of_f32_as_rounded_in_float64(self):
    # Independent of the bit arithmetic: |x| / ulp is exact in float64
    # (an f32's 24 bits shifted), rounded to an integer there (half away
    # from zero, or np.rint's half to even) and scaled back; ulp is 2^-10
    # of x's binade, of the lowest normal binade for a subnormal. Random
    # bit patterns (every exponent, both signs, subnormals) and the ends:
    # the largest finite values, which round up to infinity.
    g = np.random.default_rng(37)
    bits = g.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)
    ends = [0x7F7FFFFF, 0xFF7FFFFF, 0x7F7FEFFF, 0x00001000, 0x80000000, 0]
    x = np.concatenate([bits, np.uint32(ends)]).view(np.float32)
    x = x[np.isfinite(x)]
    wide = np.abs(x.astype(np.float64))
    _, e = np.frexp(wide)
    ulp = np.ldexp(1.0, np.maximum(e - 1, -126) - 10)
    for mode, to_int in (
      ("rna", lambda q: np.floor(q + 0.5)),
      ("rne", np.rint),
    ):
      with np.errstate(over="ignore"):  # 2^128 is f32's infinity
        want = np.copysign(to_int(wide / ulp) * ulp, x).astype(np.float32)
      got = rounding.round_to_tf32(x, mode)
      np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    # A 0-d array in, a 0-d array out.
    self.assertEqual(
      rounding.round_to_tf32(np.float32(1 + 2**-11), "rna"), 1 + 2**-10
    )

  def test_split_is_exact_to_22_bits(self):
    x = np.float32(1 + 2**-9 + 2**-20)
    high, low = rounding.split_tf32(x, "rna")
    self.assertEqual((float(high), float(low)), (1 + 2**-9, 2**-20))


class Bf16F16Test(absltest.TestCase):
  def test_bf16_and_f16_round_to_nearest_even(self):
    x = np.float32([1 + 2**-8, 1 + 3 * 2**-8])
    self.assertEqual(rounding.round_to_bf16(x).tolist(), [1.0, 1 + 2**-6])
    y = np.float32([1 + 2**-11, 65519.0])  # f16: step 2**-10; 32 at 65504
    self.assertEqual(rounding.round_to_f16(y).tolist(), [1.0, 65504.0])

  def test_split_bf16_sums_back(self):
    # Below each half step: 1, then 2**-9 (7 bits), then the rest exactly.
    x = np.float32(1 + 2**-9 + 2**-18)
    pieces = rounding.split_bf16(x, 3)
    self.assertEqual([float(p) for p in pieces], [1.0, 2**-9, 2**-18])
    self.assertEqual(sum(float(p) for p in pieces), float(x))


if __name__ == "__main__":
  absltest.main()
