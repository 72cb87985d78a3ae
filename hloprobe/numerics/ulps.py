"""ULPs: distances between floats counted in representable values.

Every float type numpy or ml_dtypes knows (bf16, f16, f32, f64, the fp8
types) and complex types (real and imaginary parts side by side, each in
ULPs of the part's float type). Split out of `accuracy`, which re-exports
`ulp_distance` and `output_ulp`.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = ["float_dtype", "output_ulp", "parts", "ulp_distance"]

_INT_BY_SIZE = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def float_dtype(dtype) -> np.dtype | None:
  """`dtype` as a numpy dtype if it is a float type ml_dtypes knows."""
  try:
    dtype = np.dtype(dtype)
    ml_dtypes.finfo(dtype)
  except (TypeError, ValueError):
    return None
  return dtype


def parts(x) -> np.ndarray:
  """A complex array as its (real, imaginary) parts on a new last axis, in
  its parts' float type (complex64 -> float32[..., 2]); a real array with
  a zero imaginary part."""
  x = np.asarray(x)
  imag = x.imag if np.iscomplexobj(x) else np.zeros_like(x)
  return np.stack([x.real, imag], axis=-1)


def _ordered(x: np.ndarray) -> np.ndarray:
  """Maps floats to integers whose order and spacing follow the floats'."""
  view = _INT_BY_SIZE[x.dtype.itemsize]
  ints = x.view(view).astype(np.int64)
  return np.where(ints < 0, np.iinfo(view).min - ints, ints)


def ulp_distance(a: float | np.ndarray, b: float | np.ndarray, dtype) -> int:
  """Largest distance between a and b in ULPs of a float `dtype`.

  Any float type numpy or ml_dtypes knows (bf16, f16, f32, f64, the fp8
  types), or a complex type (its real and imaginary parts, each in ULPs of
  the part's float type): both are first rounded to `dtype`, then counted in representable
  values between them (0: bit-identical; +0 and -0 are 0 apart).

  Raises:
    KeyError: `dtype` is not a float type.
  """
  if np.issubdtype(np.dtype(dtype), np.complexfloating):
    # Both parts, each in ULPs of the part's type (complex64: f32).
    a, b, dtype = parts(a), parts(b), np.finfo(dtype).dtype
  dtype = float_dtype(dtype)
  if dtype is None:
    raise KeyError(f"not a float dtype: {dtype}")
  a, b = (np.ravel(x) for x in np.broadcast_arrays(a, b))
  if a.size == 0:
    return 0
  # In chunks, so that the int64 temporaries stay small whatever the
  # row's size (issue 27 item 18).
  return max(
    _chunk_ulps(a[i : i + _CHUNK], b[i : i + _CHUNK], dtype)
    for i in range(0, a.size, _CHUNK)
  )


# Values compared at once by `ulp_distance` (8 MiB of int64 per temporary).
_CHUNK = 1 << 20


def _chunk_ulps(a: np.ndarray, b: np.ndarray, dtype: np.dtype) -> int:
  a = np.asarray(a, np.float64).astype(dtype)
  b = np.asarray(b, np.float64).astype(dtype)
  return int(np.max(np.abs(_ordered(a) - _ordered(b))))


def output_ulp(values: np.ndarray, dtype) -> float:
  """The spacing of `dtype` at the largest |value|: one output rounding step.

  0.0 for a dtype that is not a float type. Output units.
  """
  dtype = float_dtype(dtype)
  if dtype is None:
    return 0.0
  info = ml_dtypes.finfo(dtype)
  values = np.asarray(values)
  if values.dtype.kind == "c":
    values = values.real  # as float64 conversion reads it
  if values.dtype.kind not in "fV":  # not numpy's nor ml_dtypes' float
    values = values.astype(np.float64)
  top = 0.0
  if values.size:  # max |value|, read in place
    top = float(np.maximum(np.max(values), -np.min(values)))
  if top < float(info.smallest_normal):
    return float(info.smallest_subnormal)
  return float(2.0 ** (np.floor(np.log2(top)) - info.nmant))
