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

from hloprobe.numerics.verdicts import Verdict, VerdictKind

__all__ = [
  "integer_counts",
  "integer_judgement",
  "is_integer",
]


def is_integer(dtype) -> bool:
  """Whether `dtype` (numpy's name or dtype) is a signed or unsigned int."""
  try:
    return np.issubdtype(np.dtype(dtype), np.integer)
  except TypeError:
    return False


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


def integer_judgement(stats, output_dtype) -> Verdict:
  """The verdict of an integer output leaf against its exact result.

  EXACT when every element equals the exact integer result; OVERFLOW when
  the only differences are elements whose exact value the output type
  cannot hold; else UNEXPLAINED (the overflow counted too, if any). The
  record carries the counts; `hloprobe.report` gives its words.

  Args:
    stats: the leaf's `accuracy.ErrorStats` (its integer fields set).
    output_dtype: its dtype, e.g. "int8".
  """
  dtype = np.dtype(output_dtype).name
  if not stats.mismatched:
    return Verdict(VerdictKind.EXACT, dtype, stats.leaf)
  kind = (
    VerdictKind.OVERFLOW
    if stats.mismatched <= (stats.overflowed or 0)
    else VerdictKind.UNEXPLAINED
  )
  return Verdict(
    kind,
    dtype,
    stats.leaf,
    elements=stats.elements,
    mismatched=stats.mismatched,
    overflowed=stats.overflowed,
    overflow_mode=stats.overflow_mode,
  )
