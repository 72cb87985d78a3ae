"""Whether the measured f32 noise floor can be trusted: a check against
computations that share nothing with XLA:CPU.

The noise floor (`accuracy.noise_floor`, made in `predict`) is measured by
hloprobe's F32 emulation of the program, which XLA:CPU compiles. A bug of
XLA:CPU reaches it: jaxlib 0.10.2's XLA:CPU computed 7232 of 40000 rows
of a small vmapped program wrong, hloprobe's emulation, compiled by the
same XLA:CPU, measured a noise floor of 1e7, and the error was called
noise. So the measured floor is checked against two computations XLA:CPU
has no part in, per float output leaf at size n:

  e0, e   |row 0 - ref| and max |out - ref| of the numpy executor's F32
          run of the unoptimized program (`References.executed_f32`:
          every gemm at F32_F32_F32, every other op in IEEE f32);
  b       the analytic F32 band of the order of summation:
          gamma_K(2^-24) * max |ref| (`bands.gamma`), K the sum of the
          sites' contraction sizes, ref the float64 reference
          (`References`, also the executor's);
  q       one output rounding step at max |ref| (`accuracy.output_ulp`).

The independent floor is E0 = max(e0, b, q) at row 0 and E = max(e, b, q)
over the leaf. The rule: the measured floor is trusted when its row 0
error <= F * E0 and its largest error <= F * E, F = `FLOOR_TRUST_FACTOR`
= 1000. Else it is not: the verdict is judged against the independent
floor, `NoiseFloor(E0, E, max(b, q))`, and says "noise floor from XLA:CPU
disagrees with the numpy executor: suspected XLA:CPU miscompile at
<case, n>". Why each part:

- e: the executor's F32 run rounds every elementwise op as any f32 run
  does, and its dots are exact sums rounded once, the most accurate f32
  summation. The emulation's summation orders differ from it only in how
  the dots are summed, by at most gamma_K |A||B| per site (Higham,
  Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.5),
  carried to the output by the rest of the program.
- b stands for that difference with max |ref| in place of the operand
  scale |A||B|: the sites' bands (`bands.site_band`) take |A||B| from the
  emulation itself (XLA:CPU), over the largest batch, and a miscompile
  that corrupts rows would inflate them and hide itself. |A||B| can
  exceed |AB| (cancellation) and the program can amplify a site's error;
  F covers both up to 1000x. K summed over the sites: to first order, the
  errors of chained sites add.
- q: an output that f32 cannot hold more finely (a bf16 leaf, a large
  value) has at least that error, whatever computes it.
- F = 1000: on the built-in cases the measured floor sits at 1.13x E0
  and E or below (seed_mlp; the others 0.5x or below; jaxlib 0.12.0.1,
  n = 1, 2, 4 or 8: README, "Independent of XLA:CPU"); the reported
  miscompile sat 1e11 above f32 noise. A miscompile within 1000x of f32 noise passes this
  rule: a limit, stated, and the numbers are in `FloorCheck`.
- The largest error as well as row 0's: a miscompile of some rows (as
  reported) need not touch row 0, but the emulation is then suspect at
  every row.

What it does not replace: the prediction itself (the emulation at the
chosen algorithms, its spread and attribution) is still XLA:CPU's; where
the floor is not trusted, the note is the warning that it is suspect too.

Not checked, the measured floor kept (`FloorCheck.status` says why):
integer leaves (no noise floor), a program the executor could not run
(its `NotExecuted` targets named), a reference or an executor run that
is not finite (f32 overflow is the program's, not a miscompile).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np

from hloprobe.numerics import accuracy, bands
from hloprobe.numerics.verdicts import Verdict

__all__ = [
  "FLOOR_TRUST_FACTOR",
  "FloorCheck",
  "check_floor",
  "noted",
]

# How far above the independent floor the measured one may sit (see the
# module docstring for the reasons).
FLOOR_TRUST_FACTOR = 1000.0
TRUSTED, UNTRUSTED = "trusted", "untrusted"


@dataclasses.dataclass(frozen=True, slots=True)
class FloorCheck:
  """The check of one leaf's measured noise floor (module docstring).

  Attributes:
    status: "trusted", "untrusted", or "not checked: <why>".
    measured: the floor the XLA:CPU emulation measured.
    independent: the independent floor (E0, E, max(b, q)); None where not
      checked.
    executor_row0_abs, executor_max_abs: e0 and e, the numpy executor's
      F32 run against float64; None where not checked.
    band_abs: b, gamma_K(2^-24) * max |ref|; None where not checked.
    where: the XLA:CPU compile suspected, "case <name>, n = <n> (F32
      emulation)".
  """

  status: str
  measured: accuracy.NoiseFloor
  independent: accuracy.NoiseFloor | None = None
  executor_row0_abs: float | None = None
  executor_max_abs: float | None = None
  band_abs: float | None = None
  where: str = ""

  @property
  def trusted(self) -> bool:
    """Whether the verdict uses the measured floor (also where not
    checked)."""
    return self.status != UNTRUSTED

  @property
  def floor(self) -> accuracy.NoiseFloor:
    """The floor verdicts judge against: the measured one where trusted,
    else the independent one."""
    if self.trusted or self.independent is None:
      return self.measured
    return self.independent

  # What a verdict's note of this record is (`Verdict.notes`; report
  # words it), and the factor F the untrusted floor missed by.
  note: ClassVar[str] = "floor check"
  factor: ClassVar[float] = FLOOR_TRUST_FACTOR

  @property
  def suspect(self) -> bool:
    """Whether the floor is not trusted against an independent one: the
    verdict then carries this check as a note (report words it)."""
    return not self.trusted and self.independent is not None


def check_floor(
  measured: accuracy.NoiseFloor,
  executed_f32: np.ndarray | None,
  ref: np.ndarray,
  axis: int | None,
  dtype: str,
  contraction: int,
  where: str,
  why_not: str | None = None,
) -> FloorCheck:
  """Checks one leaf's measured floor (the rule of the module docstring).

  Args:
    measured: the floor the XLA:CPU emulation measured, output units.
    executed_f32: the leaf of the numpy executor's F32 run, of ref's shape;
      None where it did not run (`why_not` says why).
    ref: the leaf's float64 reference.
    axis: its batch axis (row 0 is element 0 along it), or None.
    dtype: the leaf's dtype name, e.g. "float32".
    contraction: K, the sum of the sites' contraction sizes (>= 1).
    where: the compile suspected, for the note ("case seed_mlp, n = 8").
    why_not: why there is no executor run, e.g. "lapack_spotrf_ffi".

  Returns:
    The `FloorCheck`; its status "not checked: ..." for an integer leaf,
    without an executor run, or where the numbers are not finite.
  """
  skip = lambda why: FloorCheck(f"not checked: {why}", measured, where=where)
  if accuracy.is_integer(dtype):
    return skip("integer leaf")
  if executed_f32 is None:
    return skip(f"not executed by the numpy executor: {why_not}")
  ref, got = np.asarray(ref, np.float64), np.asarray(executed_f32)
  if not (np.all(np.isfinite(ref)) and np.all(np.isfinite(got))):
    return skip("the reference or the executor's F32 run is not finite")
  if ref.ndim == 0:
    axis = None
  diff = accuracy.abs_diff(got, ref)  # the one float64 temporary
  e0 = accuracy.largest_abs(accuracy.element0(diff, axis))
  e = accuracy.largest_abs(diff)
  del diff
  b = bands.gamma(max(contraction, 1), bands.F32_UNIT) * accuracy.largest_abs(
    ref
  )
  q = accuracy.output_ulp(ref, dtype)
  independent = accuracy.NoiseFloor(max(e0, b, q), max(e, b, q), max(b, q))
  ok = measured.row0_abs <= FLOOR_TRUST_FACTOR * independent.row0_abs
  ok = ok and measured.max_abs <= FLOOR_TRUST_FACTOR * independent.max_abs
  return FloorCheck(
    TRUSTED if ok and math.isfinite(measured.max_abs) else UNTRUSTED,
    measured,
    independent,
    e0,
    e,
    b,
    where,
  )


def noted(verdict: Verdict, check: FloorCheck | None) -> Verdict:
  """`verdict` with the check's note appended where the floor is not
  trusted."""
  return verdict.noted(check if check is not None and check.suspect else None)
