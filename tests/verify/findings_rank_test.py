"""The headline is the finding furthest beyond its floor, whichever row
(issue 26's leftovers): a config whose row 0 is beyond its f32 noise
floor but whose row 5 is much further beyond its own is a "row" finding,
ranked by row 5's distance; row 0 keeps it on a tie.

Hand-built records, no XLA: y = x @ w with 8 rows, K = 64. The expected
numbers are numpy float64: row 0 computed from TF32-rounded operands
(10-bit mantissas, round to nearest even), row 5 from bfloat16 ones
(7 bits), each row's error max |y_r - (x @ w)_r| against the float64
product, and each row's floor the error of numpy's float32 product; a
row's floor is at least the rows' median, as `numerics.rows` documents
(the rule, restated here).
"""

from __future__ import annotations

import dataclasses
import math

import ml_dtypes
import numpy as np
from absl.testing import absltest

from hloprobe import records, verify
from hloprobe.compile import get_target
from hloprobe.numerics import (
  NOISE_FACTOR,
  ErrorStats,
  NoiseFloor,
  Prediction,
  Verdict,
  VerdictKind,
  WorstRow,
)
from hloprobe.numerics.predict import SiteShare
from hloprobe.report.verdict_words import times_words, what_words
from hloprobe.verify.findings import Said, rank_findings

_N, _K = 8, 64
_VERDICT = "explained by TF32_TF32_F32 at sites [0]"


def _tf32(a: np.ndarray) -> np.ndarray:
  """float64 values rounded to TF32 (a 10-bit mantissa), nearest even."""
  bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
  keep = (bits + 0xFFF + ((bits >> 13) & 1)) & ~np.uint64(0x1FFF)
  return keep.astype(np.uint32).view(np.float32).astype(np.float64)


def _bf16(a: np.ndarray) -> np.ndarray:
  return a.astype(ml_dtypes.bfloat16).astype(np.float64)


def _numbers(row5: str):
  """Per-row errors and floors (float64, shape (8,)) with row 0 at TF32
  and row 5 at `row5` ("bf16", or "same": row 0's inputs and rounding)."""
  g = np.random.default_rng(26)
  x = g.uniform(-1, 1, (_N, _K))
  w = g.uniform(-1, 1, (_K, 16))
  if row5 == "same":
    x[5] = x[0]
  ref = x @ w
  f32 = (x.astype(np.float32) @ w.astype(np.float32)).astype(np.float64)
  got = f32.copy()
  got[0] = _tf32(x[0]) @ _tf32(w)
  got[5] = (_bf16 if row5 == "bf16" else _tf32)(x[5]) @ (
    _bf16 if row5 == "bf16" else _tf32
  )(w)
  errors = np.max(np.abs(got - ref), axis=1)
  floors = np.max(np.abs(f32 - ref), axis=1)
  return errors, floors, got[0, 0], ref[0, 0]


def _result(row5: str) -> records.ConfigResult:
  """The a100 (compile only) config with those numbers as its prediction;
  its worst row is built from them by the rows rule."""
  errors, floors, row0, ref0 = _numbers(row5)
  pooled = np.maximum(floors, np.median(floors))
  m = errors / (NOISE_FACTOR * pooled)
  r = int(np.argmax(m))
  worst = WorstRow(
    "",
    r,
    float(errors[r]),
    float(pooled[r]),
    float(m[r]),
    _N,
    int(np.count_nonzero(m > 1)),
    float(errors[0]),
    float(m[0]),
  )
  stats = ErrorStats(
    float(row0),
    float(ref0),
    float(errors[0]),
    float(errors.max()),
    float(errors.max() / np.abs(ref0)),
    row_abs=errors,
  )
  noise = NoiseFloor(float(floors[0]), float(floors.max()), 0.0, row_abs=floors)
  share = SiteShare(0, "TF32_TF32_F32", float(errors[0]), 0.0, 1.0)
  prediction = Prediction(
    ("TF32_TF32_F32",),
    stats,
    noise,
    0.0,
    (share,),
    0,
    (),
    None,
    ("",),
    (Verdict(VerdictKind.EXPLAINED, algorithms=(("TF32_TF32_F32", (0,)),)),),
    rows=(worst,),
  )
  config = records.Config("planted", get_target("a100"), _N, "tensorfloat32")
  return records.ConfigResult(config, prediction=prediction)


class FurthestRowTest(absltest.TestCase):
  def test_row_5_further_beyond_is_the_headline(self):
    errors, floors, *_ = _numbers("bf16")
    pooled = np.maximum(floors, np.median(floors))
    # The plant: row 0 beyond its floor, row 5 far further beyond its own.
    self.assertGreater(errors[0], NOISE_FACTOR * floors[0])
    ratio5, ratio0 = errors[5] / pooled[5], errors[0] / floors[0]
    self.assertGreater(ratio5, NOISE_FACTOR * ratio0)
    (f,) = verify.find_findings([_result("bf16")])
    self.assertEqual(f.kind, "row")
    self.assertEqual(what_words(f), "row 5 of 8 beyond its floor")
    self.assertEqual((f.error_abs, f.floor_abs), (errors[5], pooled[5]))
    self.assertAlmostEqual(f.ratio, ratio5, delta=1e-9 * ratio5)
    self.assertEqual(f.sites, (0,))

  def test_should_fail_twin_a_tie_stays_row_0(self):
    # Row 5 is row 0 (same inputs, same rounding): a tie, which row 0 takes.
    errors, floors, *_ = _numbers("same")
    self.assertEqual(errors[5], errors[0])
    (f,) = verify.find_findings([_result("same")])
    self.assertEqual((f.kind, what_words(f)), ("row 0", _VERDICT))
    self.assertEqual((f.error_abs, f.floor_abs), (errors[0], floors[0]))

  def test_ranked_among_findings_by_row_5(self):
    # A config whose row 0 alone is beyond ranks below the row-5 one.
    tie = _result("same")
    tie = dataclasses.replace(
      tie, config=dataclasses.replace(tie.config, case="row0_only")
    )
    first, second = verify.find_findings([tie, _result("bf16")])
    self.assertEqual((first.case, first.kind), ("planted", "row"))
    self.assertEqual((second.case, second.kind), ("row0_only", "row 0"))
    self.assertGreater(first.ratio, second.ratio)


class NanTest(absltest.TestCase):
  def _finding(self, case: str, ratio: float) -> verify.Finding:
    return verify.Finding(
      "row 0",
      case,
      "a100",
      "baseline",
      True,
      ("bfloat16",),
      (2,),
      Said(text="x"),
      ratio=ratio,
    )

  def test_a_nan_error_ranks_first_whatever_the_order(self):
    # A NaN error is beyond every band; compared as a float it would leave
    # sorted() in input order (3x first, above 1000x).
    ratios = {"a": 3.0, "b": math.nan, "c": 1000.0, "d": math.inf, "e": None}
    for order in (list(ratios), list(reversed(ratios))):
      found = [self._finding(c, ratios[c]) for c in order]
      ranked = [f.case for f in rank_findings(found)]
      self.assertEqual(ranked, ["b", "d", "c", "a", "e"])
    self.assertEqual(times_words(math.nan), "a NaN error, beyond")

  def test_an_infinite_error_is_named_so(self):
    # An f32 overflow (float64 finite): error inf over an inf floor is
    # neither "a NaN error" (inf/inf) nor "beyond an exact band".
    self.assertEqual(
      times_words(math.inf, math.inf), "an infinite error, beyond"
    )
    self.assertEqual(times_words(math.inf, 1.0), "beyond an exact band")

  def test_a_nan_row_beats_row_0(self):
    # Row 0 beyond its floor (TF32), row 5 NaN: the row is the finding.
    r = _result("bf16")
    (worst,) = r.prediction.rows
    nan_row = dataclasses.replace(
      worst, row=5, abs_err=math.nan, multiple=math.nan
    )
    prediction = dataclasses.replace(r.prediction, rows=(nan_row,))
    (f,) = verify.find_findings([dataclasses.replace(r, prediction=prediction)])
    self.assertEqual(
      (f.kind, what_words(f)), ("row", "row 5 of 8 beyond its floor")
    )
    self.assertTrue(math.isnan(f.ratio))


if __name__ == "__main__":
  absltest.main()
