"""Error statistics: a config's output against float64 and against batch 1.

Units have one definition each, here:
  abs error   |got - ref|, in the output's units.
  rel error   max|got - ref| / max|ref| over the compared elements (a
              normwise relative error, so near-zero entries of ref do not
              blow it up).
  ULP         distance between two floats of the same dtype counted in
              representable values (the ordered-integer view of their bits);
              0 means bit-identical.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["ErrorStats", "error_stats", "ulp_distance"]

_INT_VIEW = {np.dtype(np.float16): np.int16, np.dtype(np.float32): np.int32,
             np.dtype(np.float64): np.int64}


@dataclasses.dataclass(frozen=True, slots=True)
class ErrorStats:
  """Errors of one config's output against the float64 reference.

  Attributes:
    row0: row 0's first value as computed (output dtype, as float).
    row0_ref: the same value in the float64 reference.
    row0_abs: |row0 - row0_ref|.
    max_abs: max |got - ref| over the whole batch.
    max_rel: max |got - ref| / max |ref| over the whole batch.
  """

  row0: float
  row0_ref: float
  row0_abs: float
  max_abs: float
  max_rel: float


def error_stats(got: np.ndarray, ref: np.ndarray) -> ErrorStats:
  """Compares an output with the float64 reference of the same rows.

  Args:
    got: the output, shape (n, ...), any float dtype.
    ref: the float64 reference, same shape (the caller slices it).

  Raises:
    ValueError: the shapes differ.
  """
  got64 = np.asarray(got, np.float64)
  ref64 = np.asarray(ref, np.float64)
  if got64.shape != ref64.shape:
    raise ValueError(f"output shape {got64.shape} != reference shape {ref64.shape}")
  diff = np.abs(got64 - ref64)
  scale = float(np.max(np.abs(ref64))) if ref64.size else 0.0
  max_abs = float(np.max(diff)) if diff.size else 0.0
  row0, row0_ref = float(got64.reshape(-1)[0]), float(ref64.reshape(-1)[0])
  return ErrorStats(
    row0=row0,
    row0_ref=row0_ref,
    row0_abs=abs(row0 - row0_ref),
    max_abs=max_abs,
    max_rel=max_abs / scale if scale > 0 else max_abs,
  )


def _ordered(x: np.ndarray) -> np.ndarray:
  """Maps floats to integers whose order and spacing follow the floats'."""
  ints = x.view(_INT_VIEW[x.dtype]).astype(np.int64)
  return np.where(ints < 0, np.iinfo(_INT_VIEW[x.dtype]).min - ints, ints)


def ulp_distance(a: float | np.ndarray, b: float | np.ndarray, dtype) -> int:
  """Largest distance between a and b in ULPs of `dtype` (f16, f32 or f64).

  Both are first cast to `dtype`. Raises KeyError for other dtypes.
  """
  dtype = np.dtype(dtype)
  a = np.atleast_1d(np.asarray(a, dtype))
  b = np.atleast_1d(np.asarray(b, dtype))
  return int(np.max(np.abs(_ordered(a) - _ordered(b))))
