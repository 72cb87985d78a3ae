"""The rows judged (issue 37, item 2): which rows `judged_rows` picks, and
a worst row judged over those rows only, named by their batch indices.

Expected values are hand arithmetic on small numpy float64 arrays (the
rule of `numerics.rows`: m_r = e_r / (NOISE_FACTOR x f_r), NOISE_FACTOR =
2, each floor at least the median); nothing here starts XLA.
"""

from __future__ import annotations

import math

import numpy as np
from absl.testing import absltest

from hloprobe.numerics import accuracy, rows
from hloprobe.numerics.verdicts import FarCause
from hloprobe.report.verdict_words import (
  far_rows_words,
  judged_words,
  row_words,
)


def _stats(row_abs):
  row_abs = np.asarray(row_abs, np.float64)
  top = float(np.nanmax(row_abs))
  return accuracy.ErrorStats(
    1.0, 1.0, float(row_abs[0]), top, top, row_abs=row_abs
  )


class JudgedRowsTest(absltest.TestCase):
  def test_every_row_up_to_the_bound(self):
    errors = np.zeros(rows.ALL_ROWS_UP_TO)
    self.assertIsNone(rows.judged_rows(rows.ALL_ROWS_UP_TO, [errors]))

  def test_row_0_the_sample_and_each_leafs_worst(self):
    n = 1000
    a = np.full(n, 1e-7)
    a[[500, 501, 777]] = [3.0, 2.0, math.nan]  # NaN ranks first
    b = np.full(n, 1e-7)
    b[123] = 5.0
    got = rows.judged_rows(n, [a, None, b])
    self.assertEqual(got, tuple(sorted(set(got))))  # ascending, once each
    self.assertEqual(got[0], 0)
    self.assertEqual(got[-1], n - 1)  # the sample spans the batch
    for r in (500, 501, 777, 123):
      self.assertIn(r, got)
    # np.linspace(0, 999, 32) rounded: row 32 (32.23) and 64 (64.45).
    self.assertIn(32, got)
    self.assertIn(64, got)
    self.assertLessEqual(len(got), rows.SAMPLE_ROWS + 2 * rows.WORST_ROWS)

  def test_a_first_pass_of_another_size_is_refused(self):
    with self.assertRaisesRegex(ValueError, "first pass"):
      rows.judged_rows(100, [np.zeros(99)])


class WorstOfJudgedRowsTest(absltest.TestCase):
  def test_indices_are_the_batch_rows(self):
    # 1000 rows, judged 0, 10, 999 with floors 1e-7, 1e-7, 1e-7; errors
    # 1e-7 (m 0.5), 4e-6 (m 20) and 1e-7; row 500's error 1.0 is not judged.
    errors = np.full(1000, 1e-7)
    errors[10], errors[500] = 4e-6, 1.0
    floor = accuracy.NoiseFloor(
      1e-7, 1e-7, 0.0, row_abs=np.full(3, 1e-7), rows=(0, 10, 999)
    )
    w = rows.worst_row(_stats(errors), floor)
    self.assertEqual((w.row, w.rows, w.beyond), (10, 1000, 1))
    self.assertEqual((w.first_beyond, w.last_beyond), (10, 10))
    self.assertAlmostEqual(w.multiple, 4e-6 / 2e-7)
    self.assertEqual(w.judged, (0, 10, 999))
    self.assertEqual(w.judged_count, 3)
    self.assertEqual(
      row_words(w),
      "row 10: 4.0e-06, 20x beyond f32 noise (1 of 3 judged rows of 1000)",
    )
    self.assertTrue(judged_words(w).startswith("3 of 1000 rows: row 0, 32"))
    self.assertIn("--all_rows: every row", judged_words(w))

  def test_within_says_every_judged_row(self):
    floor = accuracy.NoiseFloor(
      1e-7, 1e-7, 0.0, row_abs=np.full(2, 1e-7), rows=(0, 5)
    )
    w = rows.worst_row(_stats(np.full(100, 1e-7)), floor)
    self.assertEqual(row_words(w), "every judged row within f32 noise")

  def test_far_rows_name_the_judged_count(self):
    errors = np.full(100, 1e-7)
    errors[[40, 90]] = 1.0
    floor = accuracy.NoiseFloor(
      1e-7, 1e-7, 0.0, row_abs=np.full(4, 1e-7), rows=(0, 40, 50, 90)
    )
    w = rows.worst_row(_stats(errors), floor)
    self.assertEqual(
      far_rows_words(rows.far_rows(w, FarCause.MISCOMPILE)),
      "2 of 4 judged rows of 100 wrong (rows 40 to 90) by up to 1.0e+00",
    )

  def test_every_row_when_the_floor_covers_every_row(self):
    floor = accuracy.NoiseFloor(1e-7, 1e-7, 0.0, row_abs=np.full(4, 1e-7))
    w = rows.worst_row(_stats(np.full(4, 1e-7)), floor)
    self.assertIsNone(w.judged)
    self.assertEqual(judged_words(w), "every row of 4")

  def test_rows_beyond_the_batch_are_not_judged(self):
    floor = accuracy.NoiseFloor(
      1e-7, 1e-7, 0.0, row_abs=np.full(2, 1e-7), rows=(0, 7)
    )
    self.assertIsNone(rows.worst_row(_stats(np.full(4, 1e-7)), floor))


if __name__ == "__main__":
  absltest.main()
