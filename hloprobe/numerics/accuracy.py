"""Error statistics: a config's output against float64 and against batch 1.

Units have one definition each, here:
  abs error   |got - ref|, in the output's units.
  rel error   max|got - ref| / max|ref| over the compared elements (a
              normwise relative error, so near-zero entries of ref do not
              blow it up).
  ULP         distance between two floats of the same dtype counted in
              representable values (the ordered-integer view of their bits);
              0 means bit-identical.

An integer output leaf has no ULPs and no noise floor: its reference is
the exact integer result (`reference`: signed integers widened to int64),
and its error is "exact" or how many elements differ, of which how many
overflow the output type (`integers`).

The analytic error band of one dot site is `bands`'. Private in intent:
use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from hloprobe.numerics.integers import (
  integer_counts,
  integer_judgement,
  is_integer,
)
from hloprobe.numerics.ulps import float_dtype, output_ulp, parts, ulp_distance
from hloprobe.numerics.verdicts import Verdict, VerdictKind, algorithm_groups

__all__ = [
  "ErrorStats",
  "abs_diff",
  "dtype_name",
  "element0",
  "headline_leaf",
  "judge",
  "largest_abs",
  "noise_multiple",
  "output_ulp",
  "row_maxima",
  "ulp_distance",
]


def dtype_name(dtype) -> str:
  """The HLO spelling of a dtype: bf16, f16, f32, f8e4m3fn, s8, u32, ..."""
  name = np.dtype(dtype).name
  if is_integer(dtype):
    return name.replace("uint", "u").replace("int", "s")  # s8, u32
  return name.replace("bfloat", "bf").replace("float", "f").replace("_", "")


def row_maxima(x: np.ndarray, axis: int | None) -> np.ndarray | None:
  """max |x| over each batch element along `axis`: shape (n,), float64;
  None when there is no batch axis (or x is a scalar or empty). A float64
  `x` that is already >= 0 (an absolute difference) is read in place."""
  x = np.asarray(x)
  if axis is None or x.ndim == 0 or x.size == 0:
    return None
  if x.dtype != np.float64:
    x = x.astype(np.float64)
  rows = np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
  return np.maximum(rows.max(axis=1), -rows.min(axis=1))


def element0(x: np.ndarray, axis: int | None) -> np.ndarray:
  """Batch element 0 of `x` along `axis` (all of `x` when axis is None): a
  view, not a copy."""
  x = np.asarray(x)
  if axis is None:
    return x
  return x[(slice(None),) * (axis % max(x.ndim, 1)) + (0,)]


@dataclasses.dataclass(frozen=True, slots=True)
class ErrorStats:
  """Errors of one output leaf against the float64 reference.

  "Row 0" is batch element 0: every value of the leaf at index 0 of its
  batch axis (all of the leaf when it has none, e.g. a scalar loss).

  Attributes:
    row0: the first value of row 0 as computed (output dtype, as float).
    row0_ref: the same value in the float64 reference.
    row0_abs: max |got - ref| over row 0, output units.
    max_abs: max |got - ref| over the whole batch, output units.
    max_rel: max |got - ref| / max |ref| over the whole batch.
    row0_ulp: max over row 0 of the distance between got and the reference
      rounded to the output dtype, in ULPs of that dtype; None for a
      non-float output.
    leaf: the output leaf's name, e.g. "[1]" ("" for a single array).
    axis: the leaf's batch axis; None when it has none.
    row0_values: row 0 as computed (numpy, output dtype), for comparisons
      between batch sizes; not compared, not written to JSON. A row 0 of
      more than `ROW0_KEPT` values keeps its first `ROW0_KEPT` (flattened),
      so a sweep's records stay small whatever the outputs' size.
    row0_size: how many values row 0 has (0 in records made before it was
      counted); more than `row0_values.size` when row 0 was cut.
    elements: how many elements the leaf has.
    mismatched: integer leaves: how many elements differ from the exact
      result; None for a float leaf.
    overflowed: integer leaves: how many elements' exact value lies
      outside the output type's range (the output cannot hold it); None for
      a float leaf.
    row_abs: max |got - ref| of each batch element (index along `axis`),
      float64, shape (n,); None without a batch axis. Not compared, not
      written to JSON: `rows.worst_row` judges it.
    overflow_mode: integer leaves with overflow: "wraps" (every such
      element is its exact value modulo 2^bits, two's complement),
      "saturates" (clamped to the type's range) or "mixed"; else None.
  """

  row0: float
  row0_ref: float
  row0_abs: float
  max_abs: float
  max_rel: float
  row0_ulp: int | None = None
  leaf: str = ""
  axis: int | None = 0
  row0_values: np.ndarray | None = dataclasses.field(
    default=None, compare=False, repr=False
  )
  row0_size: int = 0
  elements: int = 0
  mismatched: int | None = None
  overflowed: int | None = None
  overflow_mode: str | None = None
  row_abs: np.ndarray | None = dataclasses.field(
    default=None, compare=False, repr=False
  )

  @classmethod
  def of(
    cls,
    got: np.ndarray,
    ref: np.ndarray,
    axis: int | None = 0,
    leaf: str = "",
  ) -> ErrorStats:
    """Compares an output leaf with the float64 reference at the same size.

    Args:
      got: the output leaf, any shape, any float, integer, bool or complex
        dtype (complex: real and imaginary parts compared side by side, as
        a last axis of 2; bool: exactly, as 0 and 1).
      ref: the float64 reference, same shape (for an integer leaf, the
        exact integer result: int64, or float64 holding integers).
      axis: the leaf's batch axis (None: not batched; row 0 is all of it).
      leaf: the leaf's name, kept in the result.

    Raises:
      ValueError: the shapes differ.
    """
    got = np.asarray(got)
    values = element0(got, axis if got.ndim and got.size else None)
    elements = int(got.size)
    if np.iscomplexobj(got) or np.iscomplexobj(ref):
      # Real and imaginary parts side by side on a new last axis: both are
      # compared (in ULPs of the part's float type), never one dropped.
      got, ref = parts(got), parts(ref)
      axis = axis - 1 if axis is not None and axis < 0 else axis
    ref64 = np.asarray(ref, np.float64)
    if np.shape(got) != ref64.shape:
      raise ValueError(
        f"output shape {np.shape(got)} != reference shape {ref64.shape}"
      )
    if ref64.ndim == 0 or ref64.size == 0:
      axis = None
    # One float64 temporary of the leaf's size, made in place (the leaf's
    # bytes times 8 / itemsize): issue 27 item 18.
    diff = abs_diff(got, ref64)
    scale = largest_abs(ref64)
    max_abs = float(np.max(diff)) if diff.size else 0.0
    row, row_ref = element0(got, axis), element0(ref64, axis)
    first, first_ref = float(np.ravel(row)[0]), float(np.ravel(row_ref)[0])
    dtype = float_dtype(got.dtype)
    counts = integer_counts(got, ref) if is_integer(got.dtype) else {}
    return cls(
      row0=first,
      row0_ref=first_ref,
      row0_abs=float(np.max(element0(diff, axis))),
      max_abs=max_abs,
      max_rel=max_abs / scale if scale > 0 else max_abs,
      row0_ulp=None if dtype is None else ulp_distance(row, row_ref, dtype),
      leaf=leaf,
      axis=axis,
      row0_values=_kept(values),  # complex stays complex
      row0_size=int(np.size(values)),
      elements=elements,
      row_abs=row_maxima(diff, axis),
      **counts,
    )


def largest_abs(x: np.ndarray) -> float:
  """max |x| (0.0 for an empty x; NaN where x holds one), read in place."""
  x = np.asarray(x)
  if x.size == 0:
    return 0.0
  return float(np.maximum(np.max(x), -np.min(x)))


def abs_diff(got: np.ndarray, ref64: np.ndarray) -> np.ndarray:
  """|got - ref64| in float64, made in one array (no other temporary)."""
  diff = np.asarray(got).astype(np.float64)
  with np.errstate(invalid="ignore"):  # inf - inf: NaN, as before
    np.subtract(diff, ref64, out=diff)
  return np.abs(diff, out=diff)


# The values of row 0 an `ErrorStats` keeps (1 MiB of float32): row 0 of an
# output of 64 MiB a row would otherwise be kept whole, three times per
# config (observed, predicted, made), in memory and in the cache record.
ROW0_KEPT = 1 << 18


def _kept(row: np.ndarray) -> np.ndarray:
  """A copy of `row`, or of its first `ROW0_KEPT` values (flattened)."""
  row = np.asarray(row)
  if row.size <= ROW0_KEPT:
    return np.array(row)
  return np.ravel(row)[:ROW0_KEPT].copy()


# --- Predicted numerics: noise floor, verdicts -----------------------------

# How far beyond the measured f32 noise floor a deviation may go and still
# count as f32 noise, and how far an observed row 0 may sit from the
# prediction (in units of the predicted order spread) and still be
# explained: the four emulated summation orders sample, not bound, the
# orders a real kernel may use.
NOISE_FACTOR = 2.0


@dataclasses.dataclass(frozen=True, slots=True)
class NoiseFloor:
  """How far an f32 computation of the config strays from float64.

  Every dot site at F32_F32_F32, emulated under several f32 summation orders
  (emulate.SUMMATION_ORDERS); units are the output's.

  Attributes:
    row0_abs: max over the orders of |row 0 - float64 row 0|.
    max_abs: max over the orders and the batch of |out - float64|.
    row0_spread_abs: max - min of row 0 over the orders.
    row_abs: each batch element's floor, as row0_abs is row 0's: max over
      the orders of |that element - float64|, shape (n,); None without a
      batch axis, or for a floor not measured per element (`floor_check`'s
      independent one). Not compared, not written to JSON.
    rows: the batch rows `row_abs` covers, ascending (row 0 first), where
      only some rows were judged (`rows.judged_rows`: then `row_abs` has
      one floor per row named and `max_abs` is over those rows); None:
      every row.
    whole: where `rows` are some, up to how many rows the batch would
      have been judged whole (`rows.rows_whole`: fewer than
      `rows.ALL_ROWS_UP_TO` for a large program), which says how they
      were picked; None: `rows.ALL_ROWS_UP_TO`.
    row0_floor: the fixed summation orders were emulated at row 0 alone
      (a large program's, `rows`): every other row's `row_abs` is its
      XLA-order error raised to `row0_abs` scaled by the row's largest
      |reference| over row 0's (`floor_sum.FloorSum`).
  """

  row0_abs: float
  max_abs: float
  row0_spread_abs: float
  row_abs: np.ndarray | None = dataclasses.field(
    default=None, compare=False, repr=False
  )
  rows: tuple[int, ...] | None = dataclasses.field(
    default=None, compare=False, repr=False
  )
  whole: int | None = dataclasses.field(default=None, compare=False, repr=False)
  row0_floor: bool = dataclasses.field(default=False, compare=False, repr=False)

  def admits(self, stats: ErrorStats) -> bool:
    """The noise-floor rule: row 0's error counts as f32 noise.

    True when stats.row0_abs <= NOISE_FACTOR x row0_abs (both in the
    output's units) and the error is finite: an f32 run that overflows to
    inf where float64 stays finite has an infinite error and, its f32
    orders overflowing too, an infinite floor; that is never noise. The one
    statement of the rule: verdicts, predictions' severity and `verify`'s
    "accurate" all use it.
    """
    return math.isfinite(stats.row0_abs) and (
      stats.row0_abs <= NOISE_FACTOR * self.row0_abs
    )


def noise_multiple(stats: ErrorStats, noise: NoiseFloor) -> float:
  """How many allowed noise floors row 0's error is (dimensionless).

  stats.row0_abs / (NOISE_FACTOR x noise.row0_abs), above 1 exactly when
  not `NoiseFloor.admits` (also where the division rounds to 1); 0 for an exact
  row 0 (also over a zero floor), inf for an inexact row 0 over a zero
  floor and for an infinite error. Ranks output leaves by severity.
  """
  if stats.row0_abs == 0:
    return 0.0
  floor = NOISE_FACTOR * noise.row0_abs
  if floor == 0 or math.isinf(stats.row0_abs):
    return math.inf
  ratio = stats.row0_abs / floor
  if noise.admits(stats):
    return ratio
  return max(ratio, math.nextafter(1.0, math.inf))


def headline_leaf(
  axes: Sequence[int | None], dtypes: Sequence[str] | None = None
) -> int:
  """The output leaf a case's rows are about: its headline, fixed per case.

  The rule: the first leaf, in `jax.tree_util.tree_leaves` order, of the
  first non-empty tier: batched float leaves (batch axis not None), then
  batched others, then unbatched floats, then the rest. Row 0 is batch
  element 0, which only a batched leaf has: an unbatched leaf (a loss over
  the batch) changes with n by design, so it never headlines while a
  batched leaf exists.

  The rule reads the case's output structure only, never the numbers, so
  every config of a case (batch size, precision, target, experiment) has
  the same headline, and tables, `explain` and `verify` compare one leaf
  across them (choosing the most severe leaf per config had made a
  pytree case's row 0 jump between leaves as n changed, which read as a
  batch-size dependence). Every leaf is still judged
  (`Prediction.verdicts`), and where there are several, row 0 is
  printed with its leaf's name.

  Args:
    axes: each output leaf's batch axis or None, in tree-leaves order.
    dtypes: each leaf's dtype name, e.g. "float32", "int32"; None: all
      taken as floats.

  Raises:
    ValueError: `axes` is empty (a case has at least one output leaf).
  """
  if not axes:
    raise ValueError("no output leaves to choose a headline from")
  n = len(axes)
  floats = (
    [True] * n
    if dtypes is None
    else [float_dtype(d) is not None for d in dtypes]
  )
  return min(range(n), key=lambda i: (axes[i] is None, not floats[i], i))


def judge(
  observed: ErrorStats | None,
  predicted: ErrorStats,
  noise: NoiseFloor,
  tolerance_abs: float,
  site_algorithms: tuple[str, ...],
  output_dtype="float32",
) -> Verdict:
  """A leaf's verdict, from numbers only, as a record.

  Args:
    observed: errors of a real run, or None where the target cannot run.
    predicted: errors of the emulation at the chosen algorithms.
    noise: the config's f32 noise floor.
    tolerance_abs: how far observed row 0 may sit from predicted row 0 and
      still be explained (output units).
    site_algorithms: the chosen (effective) algorithm of each site.
    output_dtype: the output's dtype (numpy's name); names the noise floor.

  Returns:
    EXACT, WITHIN_NOISE, EXPLAINED (by the non-F32 algorithms and their
    sites) or UNEXPLAINED; for an integer output `integer_judgement`'s.
    Without an observation the prediction is judged.
  """
  judged = observed if observed is not None else predicted
  dtype = str(output_dtype)
  if is_integer(output_dtype):
    return integer_judgement(judged, output_dtype)
  if judged.row0_abs == 0 and judged.max_abs == 0:
    return Verdict(VerdictKind.EXACT, dtype, judged.leaf)
  if noise.admits(judged):
    return Verdict(VerdictKind.WITHIN_NOISE, dtype, judged.leaf)
  groups = algorithm_groups(site_algorithms)
  if (
    observed is not None and row0_gap(observed, predicted) > tolerance_abs
  ) or not groups:
    return Verdict(VerdictKind.UNEXPLAINED, dtype, judged.leaf)
  return Verdict(VerdictKind.EXPLAINED, dtype, judged.leaf, groups)


def row0_gap(observed: ErrorStats, predicted: ErrorStats) -> float:
  """How far the observed row 0 sits from the predicted one: the largest
  |observed - predicted| over row 0's kept values (`row0_values`, output
  units, float64), or over its first value where either was not kept or
  the two differ in shape. A NaN on one side only is an infinite gap; on
  both sides, none.

  `judge` compares it with the tolerance, which `NoiseFloor`'s
  `row0_spread_abs` makes from every value of row 0, not the first alone
  (found by review: an "explained" row 0 whose element [0, 1] was off
  passed on its first value).
  """
  a, b = observed.row0_values, predicted.row0_values
  if a is None or b is None or np.shape(a) != np.shape(b):
    a, b = np.asarray(observed.row0), np.asarray(predicted.row0)
  a = np.asarray(a, np.complex128 if np.iscomplexobj(a) else np.float64)
  b = np.asarray(b, np.complex128 if np.iscomplexobj(b) else np.float64)
  gap = np.abs(a - b)
  both_nan = np.isnan(a) & np.isnan(b)
  gap = np.where(both_nan, 0.0, np.where(np.isnan(gap), np.inf, gap))
  return float(np.max(gap, initial=0.0))
