"""The scaled_dense case's recorded compile checked by `MadeChecker`.

Shared by tests/numerics/math_rules_test.py and
tests/report/explain_made_test.py: scaled_dense (0.1 * (a @ row + bias),
vmapped) as jaxlib 0.10.2 and 0.12.0.1 compiled it for a compile-only a100
with Triton gemms off (tests/testdata/compiles/
scaled_dense_a100_n8_float32_no_triton_gemm, record.py), against numpy
float64 (`NumpyReference`), never hloprobe's own reference.
"""

from __future__ import annotations

import numpy as np
import recorded

from hloprobe.compile import CASES, Case
from hloprobe.numerics import Made
from hloprobe.numerics.made import MadeChecker

FIXTURE = "scaled_dense_a100_n8_float32_no_triton_gemm"
N = 8


class NumpyReference:
  """The program's float64 meaning, by numpy: `References`' interface."""

  def __init__(self, fn, case: Case, full):
    self._fn, self._case, self._full = fn, case, full
    self.names, self.dtypes, self.axes = ("",), ("float32",), (0,)

  def at(self, n: int):
    args = [
      np.asarray(a, np.float64) for a in self._case.inputs_for(self._full, n)
    ]
    return (self._fn(*args),)


def _scaled_dense_f64(b, a, bias):
  return 0.1 * (b @ a.T + bias)


def checker():
  case = CASES["scaled_dense"]
  full = case.full_inputs()
  return (
    case,
    full,
    MadeChecker(case, full, NumpyReference(_scaled_dense_f64, case, full)),
  )


def check(jaxlib: str, edit=lambda text: text) -> tuple[Made, list]:
  rec = recorded.load(FIXTURE, jaxlib)
  fates = recorded.fates(rec, edit_hlo=edit)
  _, _, made_checker = checker()
  return made_checker.check(N, edit(rec.optimized_hlo), fates), fates
