"""Elementwise ops of the executor against their HLO definitions: exact
integers, ml_dtypes' conversions, numpy float64."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from absl.testing import absltest

from hloprobe.execute import elementwise


class IntegerTest(absltest.TestCase):
  def test_divide_and_remainder_truncate_toward_zero(self):
    a = np.array([7, -7, 7, -7, 5], np.int32)
    b = np.array([2, 2, -2, -2, 0], np.int32)
    q = elementwise.binary("divide", a, b, np.dtype(np.int32))
    r = elementwise.binary("remainder", a, b, np.dtype(np.int32))
    np.testing.assert_array_equal(q, [3, -3, -3, 3, -1])
    np.testing.assert_array_equal(r, [1, -1, 1, -1, 5])

  def test_shifts(self):
    a = np.array([-8, 8, 1], np.int32)
    b = np.array([1, 1, 40], np.int32)
    i32 = np.dtype(np.int32)
    np.testing.assert_array_equal(
      elementwise.binary("shift-right-arithmetic", a, b, i32), [-4, 4, 0]
    )
    np.testing.assert_array_equal(
      elementwise.binary("shift-right-logical", a, b, i32),
      [2**31 - 4, 4, 0],
    )
    np.testing.assert_array_equal(
      elementwise.binary("shift-left", a, b, i32), [-16, 16, 0]
    )


class ConversionTest(absltest.TestCase):
  def test_float_to_int_truncates_and_saturates(self):
    x = np.array([2.7, -2.7, 1e10, -1e10, np.nan], np.float32)
    out = elementwise.convert(x, np.dtype(np.int32))
    np.testing.assert_array_equal(out, [2, -2, 2**31 - 1, -(2**31), 0])

  def test_reduce_precision_matches_bf16_and_f16(self):
    x = np.random.default_rng(5).standard_normal(2000).astype(np.float32)
    bf16 = elementwise.reduce_precision(x, 8, 7)
    np.testing.assert_array_equal(
      bf16, x.astype(ml_dtypes.bfloat16).astype(np.float32)
    )
    f16 = elementwise.reduce_precision(x * 100, 5, 10)
    np.testing.assert_array_equal(
      f16, (x * 100).astype(np.float16).astype(np.float32)
    )

  def test_reduce_precision_overflows_to_inf(self):
    x = np.array([70000.0, -70000.0], np.float32)
    out = elementwise.reduce_precision(x, 5, 10)
    np.testing.assert_array_equal(out, [np.inf, -np.inf])

  def test_bitcast_convert(self):
    x = np.array([1.0, -2.0], np.float32)
    out = elementwise.bitcast_convert(x, np.dtype(np.uint32), (2,))
    np.testing.assert_array_equal(out, [0x3F800000, 0xC0000000])


class FloatTest(absltest.TestCase):
  def test_bf16_ops_round_once_from_f32(self):
    # The f32 sums are exact and halfway between two bf16 values (ulp 2**-7
    # at 1): ties go to even, 1 stays, 1 + 2**-7 goes up to 1 + 2**-6.
    a = np.array([1.0, 1 + 2**-7], ml_dtypes.bfloat16)
    b = np.array([2**-8, 2**-8], ml_dtypes.bfloat16)
    out = elementwise.binary("add", a, b, np.dtype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(out.astype(np.float32), [1.0, 1 + 2**-6])

  def test_transcendentals_are_correctly_rounded_float64(self):
    x = np.linspace(-3, 3, 101).astype(np.float32)
    for opcode, fn in (("tanh", np.tanh), ("exponential", np.exp)):
      out = elementwise.unary(opcode, x, np.dtype(np.float32))
      np.testing.assert_array_equal(
        out, fn(x.astype(np.float64)).astype(np.float32)
      )

  def test_erf(self):
    x = np.array([0.0, 0.5, -1.0], np.float32)
    out = elementwise.unary("erf", x, np.dtype(np.float64))
    np.testing.assert_allclose(
      out, [0.0, 0.5204998778130465, -0.8427007929497149], rtol=1e-7
    )


if __name__ == "__main__":
  absltest.main()
