"""Every row judged: the worst batch element of an output leaf.

Row 0 is the seed's view (`accuracy.ErrorStats`): batch element 0, whose
value should not depend on n. An error elsewhere in the batch (a kernel
that treats some rows differently, a miscompile of some rows) leaves row 0
alone, so every row is judged here with the rule row 0 is judged by
(`NoiseFloor.admits`), each against its own floor:

  e_r   max |got - ref| over batch element r (`ErrorStats.row_abs`), the
        float64 reference `ref` as for row 0;
  f_r   that element's f32 noise floor (`NoiseFloor.row_abs`): max over
        the emulated f32 summation orders of |element r - ref|, measured
        as row 0's is, and at least the median of the rows' floors; where
        the floor is not measured per element (`floor_check`'s
        independent floor) the leaf's largest, `NoiseFloor.max_abs`, for
        every row. Each row's own floor is the largest of a few draws (one
        per emulated order) and XLA's order is one more draw: over n rows
        the luckiest draws fail accurate rows (an all-F32 conv net on the
        CPU: row 3's 6.0e-7 over twice its own 2.3e-7, every row F32).
        The median pools the rows' draws and a single large row cannot
        loosen the others;
  m_r   e_r / (NOISE_FACTOR x f_r): how many allowed floors row r's error
        is, as `accuracy.noise_multiple` is for row 0 (0 for an exact row,
        inf for an inexact one over a zero floor).

The worst row is the r of the largest m_r (ties: the smallest r; a NaN
error's m_r is NaN, the largest, as `numpy.argmax` takes it); the leaf's
rows are within noise when that m_r <= 1 (a NaN m_r is not). An integer leaf is not
judged by rows: its verdict (`integers`) already counts every element. A
leaf without a batch axis is not judged by rows: its row 0 is all of it.

Which rows are judged (issue 37: compute only what is judged). Every row
where the batch is small (n <= `ALL_ROWS_UP_TO`; for a large program, n
<= `rows_whole` of its multiply-adds a row, at least 2: gpt2_12's 2 rows,
gpt2_1's 18), where the case's rows depend on each other (its floor is
one emulation of the whole batch anyway), and under --all_rows.
Otherwise, for a case whose rows are independent (it declares
`rows_independent`, checked on the float64 reference, or `row_proof`
proves it from the jaxpr: each value's batch axis followed through the
primitives; a primitive not followed means every row), the rows
`judged_rows` picks: row 0, `SAMPLE_ROWS` rows spread evenly over the
batch, and each leaf's `WORST_ROWS` rows of largest error (a large
program's fewer, `picked_counts`) found by a cheap first pass (e_r
against the float64 reference, which is computed for every row anyway:
the observed run's errors where the target ran, else the emulation's).
Only those rows' noise floors are emulated (the three fixed summation
orders, each an emulation of the whole program: the floor's cost), on
the judged rows' inputs gathered (`emulation_cache`; bit for bit their
rows of the whole batch's emulation, as the fixed orders sum each output
element the same way whatever the batch). The floor records its rows
(`NoiseFloor.rows`) and `WorstRow.judged` names them; a large
program's optimized module is run and judged on them alone
(`made.Made.judged`).

A large program's floor (issue 37 item 2, its rows judged whole up to
fewer than `ALL_ROWS_UP_TO`, gathered a row at a time,
`EmulationCache.by_rows`): the fixed orders are emulated at row 0
alone, and every other judged row's f_r is its XLA-order error raised
to row 0's floor f_0 times s_r / s_0, s the largest |float64 reference|
of a row (`NoiseFloor.row0_floor`, `WorstRow.row0_floor`; the words say
so): an f32 sum's error scales with its values, so a row of values 1000
times smaller than row 0's is not judged against row 0's floor, under
which a deviation of its own would hide (a review's x @ w under TF32:
seven such rows 311 times beyond their own floors read as within it).
Each order is a pass of the whole program a row: gpt2_12's rows 1, 5
and 7 cost 10.3 CPU-s of an instrumented explain's 147 (jaxlib
0.12.0.1, 2026-12-08). The cost: a row whose f32 error does not scale
with its largest value (cancellation inside it) is judged against a
floor other than its own, too small or too large; --all_rows measures
every row's own.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from hloprobe.numerics import accuracy
from hloprobe.numerics.integers import is_integer
from hloprobe.numerics.verdicts import FarCause, FarRows

__all__ = [
  "ALL_ROWS_UP_TO",
  "FAR_MULTIPLE",
  "JUDGED_MULTIPLY_ADDS",
  "SAMPLE_ROWS",
  "WORST_ROWS",
  "WorstRow",
  "far_rows",
  "gathered",
  "judged_rows",
  "picked_counts",
  "rows_whole",
  "stands_out",
  "worst_row",
]


# Every row is judged up to this batch size (a small program: its floor
# costs little); above it, a rows_independent case's `judged_rows`.
ALL_ROWS_UP_TO = 64
# Rows spread evenly over the batch (row 0 and the last among them).
SAMPLE_ROWS = 32
# Each leaf's rows of largest first-pass error, judged besides the sample.
WORST_ROWS = 16
# A large program's rows (issue 37 item 2, "every row only where the
# program is small"): the multiply-adds of its dot sites that the noise
# floor's fixed summation orders may spend on the rows judged at one size.
# Those orders are loops, not BLAS: 2-7 G multiply-adds a second an order
# on this project's machine (AMD EPYC, one core; a 1024 x 768 x 3072 f32
# dot: 0.34 s sequential, 0.47 s pairwise, 0.60 s blocked, 2026-12-07),
# so 2^34 is about 10 CPU-s of the three orders. gpt2_12's rows (11.2 G
# multiply-adds each) are judged whole up to 2 of them, gpt2_1's (0.93 G)
# up to 18, the decode layer's (51 M) and every built-in case's up to
# `ALL_ROWS_UP_TO`.
JUDGED_MULTIPLY_ADDS = 1 << 34


@dataclasses.dataclass(frozen=True, slots=True)
class WorstRow:
  """The worst batch element of one output leaf (see the module).

  Attributes:
    leaf: the leaf's name ("" for a single array).
    row: its index along the leaf's batch axis.
    abs_err: e_r, output units.
    floor_abs: f_r, output units.
    multiple: m_r, dimensionless.
    rows: the batch size (the leaf's rows).
    beyond: how many judged rows have m > 1.
    row0_abs: e_0, row 0's error (output units), for `stands_out`.
    row0_multiple: m_0, row 0's m, for `stands_out`.
    output_dtype: the leaf's dtype name, e.g. "float32"; names the floor.
    first_beyond, last_beyond: the smallest and largest row index with
      m > 1; -1 when every row is within.
    beyond_abs: the largest e_r over the rows with m > 1 (output units);
      0.0 when every row is within.
    judged: the rows judged, ascending (`judged_rows`), or None where
      every row was (all `rows` of them).
    whole: up to how many rows a batch is judged whole (`rows_whole`),
      which says how `judged` was picked (`picked`).
    row0_floor: every row's floor is at least row 0's scaled to the
      row's values, row 0's fixed orders alone emulated
      (`NoiseFloor.row0_floor`: a large program).
  """

  leaf: str
  row: int
  abs_err: float
  floor_abs: float
  multiple: float
  rows: int
  beyond: int
  row0_abs: float = 0.0
  row0_multiple: float = 0.0
  output_dtype: str = "float32"
  first_beyond: int = -1
  last_beyond: int = -1
  beyond_abs: float = 0.0
  judged: tuple[int, ...] | None = None
  whole: int = ALL_ROWS_UP_TO
  row0_floor: bool = False

  @property
  def large_program(self) -> bool:
    """Judged whole up to fewer rows than a small program's
    (`rows_whole`): its dot sites do many multiply-adds a row."""
    return self.whole < ALL_ROWS_UP_TO

  @property
  def within(self) -> bool:
    """Every judged row within its allowed noise (m <= 1)."""
    return self.beyond == 0

  @property
  def judged_count(self) -> int:
    """How many rows were judged."""
    return self.rows if self.judged is None else len(self.judged)

  @property
  def picked(self) -> tuple[int, int]:
    """How `judged_rows` picks the rows it judges, where not every row
    is: (rows spread evenly over the batch, row 0 among them; each leaf's
    rows of largest first-pass error), `picked_counts` of `whole`."""
    return picked_counts(self.whole)

  @property
  def far(self) -> bool:
    """Rows beyond their floors with the worst at least `FAR_MULTIPLE`
    allowed floors beyond (orders of magnitude, not a summation order's
    noise; a NaN error is)."""
    return not self.within and (
      self.multiple >= FAR_MULTIPLE or math.isnan(self.multiple)
    )

  @property
  def stands_out(self) -> bool:
    """The worst row says more than row 0's verdict: another row than 0,
    beyond its allowed noise (m > 1), where row 0 is within its own (m_0
    <= 1) or the worst row's error exceeds NOISE_FACTOR x row 0's. What
    `explain` and the tables add words for.

    Where row 0 is already beyond its band, its verdict names the cause
    (e.g. TF32 at some sites), and a row whose error is of the same size
    (within NOISE_FACTOR of row 0's: seed_mlp's rows under TF32 on the
    A100, n = 8, 0.61 at row 0 and 0.73 at worst) adds nothing to read;
    the rows are still judged (`Prediction.rows`, results.json, `verify`).
    """
    if self.within or self.row == 0:
      return False
    return (
      self.row0_multiple <= 1
      or self.abs_err > accuracy.NOISE_FACTOR * self.row0_abs
    )


def rows_whole(row_multiply_adds: int) -> int:
  """Up to how many rows a batch is judged whole (every row): a program
  whose dot sites do `row_multiply_adds` multiply-adds a row (0: unknown)
  has `JUDGED_MULTIPLY_ADDS` of them spent on its judged rows' fixed
  orders at most, and at least 2 rows judged (row 0 and one other); never
  more than `ALL_ROWS_UP_TO`.

  Raises:
    ValueError: a negative count.
  """
  if row_multiply_adds < 0:
    raise ValueError(f"{row_multiply_adds} multiply-adds a row")
  if row_multiply_adds == 0:
    return ALL_ROWS_UP_TO
  return max(2, min(ALL_ROWS_UP_TO, JUDGED_MULTIPLY_ADDS // row_multiply_adds))


def picked_counts(whole: int) -> tuple[int, int]:
  """(S, W) of `judged_rows` where a batch is judged whole up to `whole`
  rows: `SAMPLE_ROWS` and `WORST_ROWS` for `ALL_ROWS_UP_TO`; else S =
  whole // 2 and W = whole - S, each at least 1 (a large program)."""
  sample = max(1, min(SAMPLE_ROWS, whole // 2))
  return sample, max(1, min(WORST_ROWS, whole - sample))


def judged_rows(
  n: int,
  first_pass: Sequence[np.ndarray | None],
  whole: int = ALL_ROWS_UP_TO,
) -> tuple[int, ...] | None:
  """The rows of a batch of n to judge: None (every row) for n <= `whole`
  (`rows_whole`; by default `ALL_ROWS_UP_TO`); else row 0, S rows spread
  evenly over [0, n) and, per leaf, the W rows of largest first-pass error
  (a NaN error first), ascending, each once: (S, W) = `picked_counts`
  (whole), about `whole` rows a leaf. A large program's (`whole` below
  `ALL_ROWS_UP_TO`) W are the largest besides the S spread rows, so that
  at least `whole` rows are judged (gpt2_12's n = 8: row 0 and another,
  where row 0's error was the largest and it had judged row 0 alone).

  Args:
    n: the batch size.
    first_pass: per output leaf, e_r of every row, shape (n,) (an
      `ErrorStats.row_abs`), or None for a leaf not judged by rows.
    whole: up to how many rows every row is judged.

  Raises:
    ValueError: a first pass whose length is not n.
  """
  if n <= whole:
    return None
  sample, worst_rows = picked_counts(whole)
  spread = set(np.linspace(0, n - 1, sample).round().astype(int).tolist())
  spread.add(0)
  found = set(spread)
  for errors in first_pass:
    if errors is None:
      continue
    errors = np.asarray(errors, np.float64)
    if errors.shape != (n,):
      raise ValueError(f"first pass of {errors.shape} rows, not ({n},)")
    ranked = np.where(np.isnan(errors), np.inf, errors)
    order = np.argsort(-ranked, kind="stable")
    if whole < ALL_ROWS_UP_TO:  # besides the spread rows
      order = order[~np.isin(order, sorted(spread))]
    found.update(int(r) for r in order[:worst_rows])
  return tuple(sorted(found))


def gathered(leaves, rows: Sequence[int] | None, axes) -> tuple:
  """Output leaves cut to `rows` (`judged_rows`) along their batch axes
  (`axes`, one per leaf; a leaf without one, None, whole); `leaves`
  themselves, as a tuple, for rows None."""
  if rows is None:
    return tuple(leaves)
  index = np.asarray(rows, np.int64)
  return tuple(
    x if axis is None else np.take(np.asarray(x), index, axis=axis)
    for x, axis in zip(leaves, axes)
  )


def _multiples(errors: np.ndarray, floors: np.ndarray) -> np.ndarray:
  """m_r for every row (see the module)."""
  allowed = accuracy.NOISE_FACTOR * floors
  with np.errstate(divide="ignore", invalid="ignore"):
    m = np.where(errors == 0, 0.0, errors / allowed)
  return np.where((errors > 0) & (allowed == 0), math.inf, m)


def worst_row(
  stats: accuracy.ErrorStats, noise: accuracy.NoiseFloor, dtype="float32"
) -> WorstRow | None:
  """The worst row of a leaf, from its errors and its f32 noise floor.

  Args:
    stats: the leaf's errors (observed, or the prediction's) at size n.
    noise: its noise floor at the same size.
    dtype: the leaf's dtype.

  Returns:
    The worst row; None for an integer leaf, a leaf without per-row
    errors (no batch axis, or `stats` made by hand), or a floor whose
    rows do not match (a different size).
  """
  errors = stats.row_abs
  if is_integer(dtype) or errors is None or errors.size == 0:
    return None
  size = int(errors.size)
  judged = noise.rows  # None: the floor covers every row
  floors = noise.row_abs
  if floors is None:
    floors = np.full(errors.shape, noise.max_abs)
    judged = None
  if judged is not None:
    index = np.asarray(judged, np.int64)
    if index.shape != floors.shape or (index.size and index[-1] >= size):
      return None
    errors = errors[index]
  elif floors.shape != errors.shape:
    return None
  else:
    index = np.arange(size)
  floors = np.maximum(floors, np.median(floors))
  m = _multiples(errors, floors)
  r = int(np.argmax(m))
  out = np.flatnonzero(~(m <= 1))  # a NaN error is beyond
  return WorstRow(
    leaf=stats.leaf,
    row=int(index[r]),
    abs_err=float(errors[r]),
    floor_abs=float(floors[r]),
    multiple=float(m[r]),
    rows=size,
    beyond=int(out.size),
    row0_abs=float(errors[0]),
    row0_multiple=float(m[0]),
    output_dtype=str(dtype),
    first_beyond=int(index[out[0]]) if out.size else -1,
    last_beyond=int(index[out[-1]]) if out.size else -1,
    beyond_abs=float(np.max(errors[out])) if out.size else 0.0,
    judged=None if judged is None else tuple(int(i) for i in judged),
    whole=ALL_ROWS_UP_TO if judged is None else noise.whole or ALL_ROWS_UP_TO,
    row0_floor=noise.row0_floor,
  )


# "Orders of magnitude beyond": a worst row this many allowed floors (m,
# NOISE_FACTOR x its floor) beyond leads the verdict, whatever row 0 says.
# `floor_check.FLOOR_TRUST_FACTOR`'s size: what no f32 summation order
# and no operand rounding the sites' algorithms allow reaches.
FAR_MULTIPLE = 1000.0


def far_rows(w: WorstRow | None, cause: FarCause) -> FarRows | None:
  """The rows of `w` that are wrong, as a record naming `cause`, where
  the worst is at least `FAR_MULTIPLE` allowed floors beyond (`far`);
  else None (None for None)."""
  if w is None or not w.far:
    return None
  a, b = w.first_beyond, w.last_beyond
  if a < 0:  # a record made before the range was kept
    a = b = w.row
  judged = None if w.judged is None else w.judged_count
  return FarRows(a, b, w.beyond, w.rows, judged, w.beyond_abs, cause)


def stands_out(w: WorstRow | None) -> bool:
  """`WorstRow.stands_out` of `w`; False for None."""
  return w is not None and w.stands_out
