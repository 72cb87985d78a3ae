"""Integer output leaves: compared exactly, judged by counts, never ULPs.

An integer leaf's reference is its exact value (`reference` widens signed
integers to int64), so there is no noise floor and no ULP: every element
equals it ("exact"), or some differ. Those whose exact value the output type
cannot hold overflow it; an output that wraps them (two's complement: the
exact value modulo 2^bits) or saturates them explains exactly those.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["integer_counts", "integer_verdict", "is_integer"]


def is_integer(dtype) -> bool:
  """Whether `dtype` (numpy's name or dtype) is a signed or unsigned int."""
  try:
    return np.issubdtype(np.dtype(dtype), np.integer)
  except TypeError:
    return False


def _hlo_name(dtype) -> str:
  """HLO's spelling of an integer type: s8, u32."""
  return np.dtype(dtype).name.replace("uint", "u").replace("int", "s")


def integer_counts(got: np.ndarray, ref: np.ndarray) -> dict:
  """`accuracy.ErrorStats`' integer fields of a leaf, compared in int64.

  Args:
    got: the leaf as computed, any integer dtype.
    ref: its exact value, same shape (int64, or float64 holding integers).

  Returns:
    {"mismatched": elements that differ from `ref`, "overflowed":
    elements whose exact value lies outside `got.dtype`'s range,
    "overflow_mode": "wraps" | "saturates" | "mixed" | None (no overflow)}.
  """
  info = np.iinfo(got.dtype)
  exact = np.asarray(ref).astype(np.int64)
  out = got.astype(np.int64)
  over = (exact < info.min) | (exact > info.max)
  mode = None
  if over.any():
    span = 1 << info.bits
    wrapped = (exact - info.min) % span + info.min
    clamped = np.clip(exact, info.min, info.max)
    modes = [
      m
      for m, v in (("wraps", wrapped), ("saturates", clamped))
      if np.array_equal(out[over], v[over])
    ]
    mode = modes[0] if modes else "mixed"
  return dict(
    mismatched=int(np.count_nonzero(out != exact)),
    overflowed=int(np.count_nonzero(over)),
    overflow_mode=mode,
  )


def integer_verdict(stats, output_dtype) -> str:
  """The verdict of an integer output leaf against its exact result.

  "exact" when every element equals the exact integer result; "overflow:
  N of M elements of LEAF exceed s8 [-128, 127] and wrap" when the only
  differences are elements whose exact value the output type cannot hold;
  else "unexplained: K of M elements of LEAF differ from the exact integer
  result" (with the overflow named too, if any).

  Args:
    stats: the leaf's `accuracy.ErrorStats` (its integer fields set).
    output_dtype: its dtype, e.g. "int8".
  """
  if not stats.mismatched:
    return "exact"
  info = np.iinfo(np.dtype(output_dtype))
  of = f" of {stats.leaf}" if stats.leaf else " of the output"
  elements = f"{stats.elements} elements{of}"
  over = ""
  if stats.overflowed:
    how = {"wraps": "wrap", "saturates": "saturate"}.get(
      stats.overflow_mode, "wrap or saturate"
    )
    over = (
      f"overflow: {stats.overflowed} of {elements} exceed "
      f"{_hlo_name(output_dtype)} [{info.min}, {info.max}] and {how}"
    )
  if stats.mismatched <= (stats.overflowed or 0):
    return over
  differ = (
    f"unexplained: {stats.mismatched} of {elements} differ from the exact "
    "integer result"
  )
  return f"{differ}; {over}" if over else differ
