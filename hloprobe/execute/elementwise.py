"""Elementwise HLO ops in numpy: unary, binary, compare, select, clamp,
convert, bitcast-convert, reduce-precision.

How a value of each type is computed (the model of "as the target would"):
  * +, -, *, /, sqrt, min, max, abs, neg and the rounding ops are computed
    in the operands' own float type (IEEE-exact in numpy for f32 and f64);
    16-bit and 8-bit floats are computed in f32 and rounded back, as XLA's
    float normalization does on GPUs (`FloatNormalization`) and XLA:CPU's
    upcasting.
  * Transcendental ops (exp, log, tanh, erf, ...) are computed in float64
    and rounded once to the result type: a correctly rounded model of
    XLA's f32 approximations, which are within a few ULPs of it; the
    difference is far below the f32 bands hloprobe compares against.
  * Integer division and remainder truncate toward zero, as HLO defines
    them (xla/hlo/evaluator/hlo_evaluator_typed_visitor.h); integer
    division by zero gives -1 and remainder by zero the dividend (HLO's
    defined results).
  * A float to integer `convert` truncates toward zero, saturates at the
    integer range and gives 0 for nan. This is the model chosen here for
    values out of range, not read from each release's emitters: hloprobe's
    cases convert only in-range values.

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from hloprobe.execute.values import Unsupported, is_float

__all__ = [
  "BINARY",
  "UNARY",
  "binary",
  "bitcast_convert",
  "compare",
  "convert",
  "reduce_precision",
  "unary",
]

_erf = np.frompyfunc(math.erf, 1, 1)


def _f64_erf(x):
  return np.asarray(_erf(np.asarray(x, np.float64)), dtype=np.float64)


def _round_half_even(x):
  return np.rint(x)


def _round_half_away(x):
  return np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5)) * (
    x != 0
  ) + x * (x == 0)


def _logistic(x):
  return 1.0 / (1.0 + np.exp(-x))


def _sign(x):
  return (
    np.where(np.isnan(x), x, np.sign(x)) if is_float(x.dtype) else np.sign(x)
  )


# opcode -> (function, exact in the operand's type); transcendental (False)
# ones are computed in float64 and rounded once.
UNARY = {
  "negate": (np.negative, True),
  "abs": (np.abs, True),
  "sqrt": (np.sqrt, True),
  "floor": (np.floor, True),
  "ceil": (np.ceil, True),
  "round-nearest-even": (_round_half_even, True),
  "round-nearest-afz": (_round_half_away, True),
  "sign": (_sign, True),
  "not": (None, True),
  "is-finite": (np.isfinite, True),
  "copy": (lambda x: x, True),
  "exponential": (np.exp, False),
  "exponential-minus-one": (np.expm1, False),
  "log": (np.log, False),
  "log-plus-one": (np.log1p, False),
  "tanh": (np.tanh, False),
  "logistic": (_logistic, False),
  "rsqrt": (lambda x: 1.0 / np.sqrt(x), False),
  "cbrt": (np.cbrt, False),
  "sine": (np.sin, False),
  "cosine": (np.cos, False),
  "tan": (np.tan, False),
  "erf": (_f64_erf, False),
}
# opcode -> (function on floats, function on integers or None).
BINARY = {
  "add": (np.add, np.add),
  "subtract": (np.subtract, np.subtract),
  "multiply": (np.multiply, np.multiply),
  "divide": (np.divide, None),
  "remainder": (np.fmod, None),
  "maximum": (np.maximum, np.maximum),
  "minimum": (np.minimum, np.minimum),
  "power": (np.power, None),
  "atan2": (np.arctan2, None),
  "and": (None, np.bitwise_and),
  "or": (None, np.bitwise_or),
  "xor": (None, np.bitwise_xor),
  "shift-left": (None, None),
  "shift-right-arithmetic": (None, None),
  "shift-right-logical": (None, None),
}
_TRANSCENDENTAL_BINARY = ("power", "atan2")
_DIRECTIONS = {
  "EQ": np.equal,
  "NE": np.not_equal,
  "LT": np.less,
  "LE": np.less_equal,
  "GT": np.greater,
  "GE": np.greater_equal,
}


def _compute_type(dtype: np.dtype) -> np.dtype:
  """The type a float op is computed in: f32 for floats narrower than
  f32, the type itself otherwise."""
  if is_float(dtype) and np.dtype(dtype).itemsize < 4:
    return np.dtype(np.float32)
  return np.dtype(dtype)


def unary(opcode: str, x: np.ndarray, out: np.dtype) -> np.ndarray:
  """An elementwise unary op; result of dtype `out`.

  Raises:
    Unsupported: an inexact op (`sqrt`, a transcendental) on integers.
  """
  fn, exact = UNARY[opcode]
  if opcode == "not":
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)
  if opcode == "is-finite":
    return np.isfinite(x.astype(_compute_type(x.dtype)))
  if not is_float(x.dtype):
    if not exact or opcode in ("sqrt",):
      raise Unsupported(f"{opcode} of {x.dtype}")
    return np.asarray(fn(x)).astype(out)
  work = _compute_type(x.dtype) if exact else np.dtype(np.float64)
  return np.asarray(fn(x.astype(work))).astype(out)


def binary(opcode: str, a: np.ndarray, b: np.ndarray, out: np.dtype):
  """An elementwise binary op; result of dtype `out`.

  Raises:
    Unsupported: an op with no float form (`BINARY`), or one on complex
      values.
  """
  if is_float(a.dtype):
    fn = BINARY[opcode][0]
    if fn is None:
      raise Unsupported(f"{opcode} of {a.dtype}")
    work = (
      np.dtype(np.float64)
      if opcode in _TRANSCENDENTAL_BINARY
      else _compute_type(a.dtype)
    )
    # No copy of an operand already in `work`, nor of the result already
    # in `out` (the ufunc's result is a new array): the same values.
    result = fn(np.asarray(a, work), np.asarray(b, work))
    return np.asarray(result).astype(out, copy=False)
  if np.dtype(a.dtype).kind == "c":
    raise Unsupported(f"{opcode} of complex values")
  if opcode == "divide":
    return _int_divide(a, b).astype(out)
  if opcode == "remainder":
    return _int_remainder(a, b).astype(out)
  if opcode.startswith("shift"):
    return _shift(opcode, a, b).astype(out)
  if a.dtype == np.bool_ and opcode in ("and", "or", "xor"):
    fn = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}
    return fn[opcode](a, b).astype(out)
  fn = BINARY[opcode][1]
  if fn is None:
    raise Unsupported(f"{opcode} of {a.dtype}")
  return np.asarray(fn(a, b)).astype(out)


def _int_divide(a, b):
  """Integer division toward zero; x / 0 = -1 (HLO's defined result)."""
  safe = np.where(b == 0, 1, b)
  q = np.abs(a.astype(np.int64)) // np.abs(safe.astype(np.int64))
  q = np.where((a < 0) != (safe < 0), -q, q)
  return np.where(b == 0, -1, q)


def _int_remainder(a, b):
  """Remainder with the dividend's sign; x % 0 = x."""
  safe = np.where(b == 0, 1, b)
  r = np.fmod(a.astype(np.int64), safe.astype(np.int64))
  return np.where(b == 0, a, r)


def _shift(opcode, a, b):
  bits = np.dtype(a.dtype).itemsize * 8
  count = b.astype(np.int64)
  big = (count < 0) | (count >= bits)
  safe = np.where(big, 0, count).astype(a.dtype)
  if opcode == "shift-left":
    return np.where(big, 0, np.left_shift(a, safe))
  if opcode == "shift-right-arithmetic":
    signed = a.astype(np.dtype(f"i{a.dtype.itemsize}"))
    fill = np.where(signed < 0, -1, 0)
    return np.where(big, fill, np.right_shift(signed, safe)).astype(a.dtype)
  unsigned = a.view(np.dtype(f"u{a.dtype.itemsize}"))
  shifted = np.right_shift(unsigned, safe.astype(unsigned.dtype))
  return np.where(big, 0, shifted).astype(unsigned.dtype).view(a.dtype)


def compare(
  direction: str, a: np.ndarray, b: np.ndarray, total_order: bool = False
) -> np.ndarray:
  """`compare` with `direction=EQ|NE|LT|LE|GT|GE`; pred out.

  `total_order` (`type=TOTALORDER`, printed `order=TOTAL` by newer XLA)
  compares floats in IEEE 754's totalOrder: -nan < -inf < ... < -0 < +0 <
  ... < inf < +nan, by the sign-magnitude bit patterns made monotonic.

  Raises:
    Unsupported: a direction other than the six.
  """
  fn = _DIRECTIONS.get(direction)
  if fn is None:
    raise Unsupported(f"compare direction {direction!r}")
  if total_order and is_float(a.dtype):
    return fn(_total_order_key(a), _total_order_key(b))
  work = _compute_type(a.dtype)
  return fn(a.astype(work), b.astype(work))


def _total_order_key(x: np.ndarray) -> np.ndarray:
  """Signed integers ordered as the floats' totalOrder."""
  width = np.dtype(x.dtype).itemsize
  signed = np.ascontiguousarray(x).view(np.dtype(f"i{width}")).astype(np.int64)
  magnitude = (1 << (8 * width - 1)) - 1
  return np.where(signed < 0, signed ^ magnitude, signed)


def convert(x: np.ndarray, out: np.dtype) -> np.ndarray:
  """HLO `convert` to `out` (module docstring: float to integer)."""
  out = np.dtype(out)
  if out == np.bool_:
    return x != 0
  if is_float(x.dtype) and out.kind in "iu":
    info = np.iinfo(out)
    wide = x.astype(np.float64)
    t = np.trunc(np.where(np.isnan(wide), 0.0, wide))
    t = np.clip(t, float(info.min), float(info.max))
    return t.astype(np.int64 if out.kind == "i" else np.uint64).astype(out)
  if is_float(x.dtype) and is_float(out) and np.dtype(x.dtype).itemsize > 4:
    return x.astype(out)
  if x.dtype == np.bool_:
    return x.astype(np.int8).astype(out)
  return x.astype(out)


def bitcast_convert(x: np.ndarray, out: np.dtype, dims) -> np.ndarray:
  """HLO `bitcast-convert`: the same bits read as `out`; a wider or
  narrower `out` adds or drops the minor dimension (HLO's rule)."""
  out = np.dtype(out)
  x = np.ascontiguousarray(x)
  return x.view(out).reshape(dims)


def reduce_precision(
  x: np.ndarray, exponent_bits: int, mantissa_bits: int
) -> np.ndarray:
  """HLO `reduce-precision`: rounds to nearest even to `mantissa_bits`
  explicit bits and clamps the exponent to `exponent_bits` (overflow to
  inf, underflow to signed zero; XLA's `EmitReducePrecisionIR`,
  xla/service/elemental_ir_emitter.cc), on f32 values.

  Raises:
    Unsupported: `x` is not f32, bf16 or f16.
  """
  if np.dtype(x.dtype) not in (
    np.dtype(np.float32),
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(np.float16),
  ):
    raise Unsupported(f"reduce-precision of {x.dtype}")
  v = x.astype(np.float32)
  bits = v.view(np.uint32).astype(np.uint64)
  if mantissa_bits < 23:
    drop = 23 - mantissa_bits
    lsb = (bits >> np.uint64(drop)) & np.uint64(1)
    bits = bits + np.uint64((1 << (drop - 1)) - 1) + lsb
    bits = bits & np.uint64((0xFFFFFFFF << drop) & 0xFFFFFFFF)
  rounded = bits.astype(np.uint32).view(np.float32)
  if exponent_bits < 8:
    bias = (1 << (exponent_bits - 1)) - 1
    top = 2.0 ** (bias + 1)
    tiny = 2.0 ** (1 - bias)
    mag = np.abs(rounded.astype(np.float64))
    rounded = np.where(mag >= top, np.copysign(np.inf, v), rounded)
    rounded = np.where(mag < tiny, np.copysign(0.0, v), rounded).astype(
      np.float32
    )
  return np.where(np.isnan(v), v, rounded).astype(x.dtype)
