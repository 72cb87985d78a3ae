"""The f32 noise floor of an output leaf from its emulations in several
summation orders, taken one order at a time (`FloorSum`).

Split out of `accuracy` (which defines `NoiseFloor` and its rules) so that
the orders' outputs need not all be held at once nor stacked: a floor
holds one float64 difference of the leaf's size at a time, and row 0's
running minimum and maximum (issue 27 item 18).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import numpy as np

from hloprobe.numerics.accuracy import (
  NoiseFloor,
  abs_diff,
  element0,
  row_maxima,
)

__all__ = ["FloorSum", "noise_floor"]


def noise_floor(
  outputs: dict[str, np.ndarray], ref: np.ndarray, axis: int | None = 0
) -> NoiseFloor:
  """The noise floor from one output per summation order (same shape as ref).

  Row 0 is batch element 0 along `axis` (see `ErrorStats`); its spread is
  the largest max - min over the orders of any of its values. The orders
  are taken one at a time (`FloorSum`).
  """
  total = FloorSum(ref, axis)
  for o in outputs.values():
    total.add(o)
  return total.floor()


class FloorSum:
  """`noise_floor` over outputs given one at a time, holding no more than
  one float64 difference of the leaf's size and row 0's running minimum
  and maximum (issue 27 item 18: the orders' outputs need not all be held
  at once, nor stacked).

  Args:
    ref: the float64 reference, the outputs' shape.
    axis: the leaf's batch axis, or None.
    rows: the batch rows `ref` and the outputs hold, ascending with row 0
      first, where they are some rows of the batch gathered
      (`rows.judged_rows`; `NoiseFloor.rows`), or None: every row.
    whole: with `rows`, up to how many rows a batch is judged whole
      (`NoiseFloor.whole`), or None: the default.
    row0_floor: the fixed orders' outputs hold their own values at row 0
      alone and XLA's order's elsewhere (a large program's,
      `NoiseFloor.row0_floor`): every other row's floor is then raised to
      row 0's scaled by the row's largest |reference| over row 0's.
  """

  def __init__(
    self,
    ref: np.ndarray,
    axis: int | None = 0,
    rows: tuple[int, ...] | None = None,
    whole: int | None = None,
    row0_floor: bool = False,
  ):
    self._judged, self._whole, self._row0_floor = rows, whole, row0_floor
    self._ref = np.asarray(ref, np.float64)
    self._axis = None if self._ref.ndim == 0 else axis
    self._ref0 = element0(self._ref, self._axis)
    self._low = self._high = self._rows = None
    self._row0_abs = self._max_abs = 0.0

  def add(self, output: np.ndarray) -> None:
    """Takes one order's output into the floor."""
    diff = abs_diff(output, self._ref)
    self._max_abs = _larger(self._max_abs, np.max(diff, initial=0.0))
    rows = row_maxima(diff, self._axis)
    del diff
    if rows is not None:
      self._rows = rows if self._rows is None else np.maximum(self._rows, rows)
    row = np.asarray(element0(output, self._axis), np.float64)
    row0 = np.max(np.abs(row - self._ref0), initial=0.0)
    self._row0_abs = _larger(self._row0_abs, row0)
    if self._low is None:
      self._low, self._high = row.copy(), row.copy()
    else:
      np.minimum(self._low, row, out=self._low)
      np.maximum(self._high, row, out=self._high)

  def _scales(self) -> np.ndarray:
    """Each judged row's largest |reference| over row 0's (`_scaled`):
    a row whose floor is not measured takes row 0's times this (the f32
    error of a sum scales with its values: a row of values 1000 times
    smaller than row 0's would hide a deviation below row 0's floor)."""
    return _scaled(row_maxima(self._ref, self._axis))

  def floor(self) -> NoiseFloor:
    """The floor of the outputs added so far."""
    spread = 0.0
    if self._low is not None:
      spread = float(np.max(self._high - self._low, initial=0.0))
    rows = self._rows
    lifted = self._row0_floor and rows is not None and rows.size > 1
    if lifted:  # row 0's own is its largest over the orders already
      rows = np.fmax(rows, self._row0_abs * self._scales())
    return NoiseFloor(
      row0_abs=self._row0_abs,
      max_abs=self._max_abs,
      row0_spread_abs=spread,
      row_abs=rows,
      rows=self._judged if self._axis is not None else None,
      whole=self._whole if self._axis is not None else None,
      row0_floor=lifted,
    )


def _scaled(scales: np.ndarray) -> np.ndarray:
  """Each row's largest |reference| over row 0's (`scales`: row_maxima of
  the reference); 1 for every row where row 0's is 0 or not finite."""
  first = scales[0]
  if not (np.isfinite(first) and first > 0):
    return np.ones_like(scales)
  return scales / first


def _larger(a: float, b) -> float:
  """max(a, b), NaN where either is (as numpy's maximum)."""
  return float(np.maximum(a, b))
