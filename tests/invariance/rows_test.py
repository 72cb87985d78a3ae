"""Classes of batch sizes by a row's bits, and the anchor's placement.

Expected values: hand-built rows (numpy float32 arrays whose bits are
chosen here: one ULP apart is `np.nextafter`), and the anchor's batches
checked against numpy indexing of the full inputs.
"""

from __future__ import annotations

import numpy as np
from absl.testing import absltest

from hloprobe.compile import CASES
from hloprobe.invariance.rows import (
  ANCHOR,
  ROW0,
  ConfigRows,
  anchor_offsets,
  classes_of,
)
from hloprobe.invariance.runs import anchor_inputs


def _row(*values, dtype=np.float32):
  return (np.array(values, dtype=dtype),)


class ClassesTest(absltest.TestCase):
  def test_identical_bits_one_class(self):
    rows = [ConfigRows(n, _row(1.0, 2.0)) for n in (1, 2, 8)]
    c = classes_of(rows)
    self.assertEqual(c.classes, ((1, 2, 8),))
    self.assertTrue(c.invariant)

  def test_one_ulp_apart_splits_and_counts(self):
    one = np.float32(1.0)
    up = np.nextafter(one, np.float32(2))  # 1 ULP above 1.0
    up3 = np.nextafter(np.nextafter(up, np.float32(2)), np.float32(2))
    rows = [
      ConfigRows(1, _row(one)),
      ConfigRows(2, _row(up)),
      ConfigRows(8, _row(up)),
      ConfigRows(64, _row(up3)),
    ]
    c = classes_of(rows)
    # The largest class is the reference, the others against it.
    self.assertEqual(c.classes, ((2, 8), (1,), (64,)))
    self.assertEqual(c.ulps, (0, 1, 2))
    self.assertFalse(c.invariant)

  def test_negative_zero_is_other_bits(self):
    # Bits, not values: -0.0 == 0.0 but its sign bit differs.
    c = classes_of([ConfigRows(1, _row(0.0)), ConfigRows(2, _row(-0.0))])
    self.assertEqual(c.classes, ((1,), (2,)))
    self.assertEqual(c.ulps, (0, 0))

  def test_anchor_moving_with_its_offset(self):
    a, b = _row(1.0), _row(3.0)
    rows = [
      ConfigRows(1, a, (a, a, a)),
      ConfigRows(4, a, (a, a, b)),  # offsets 0, 2, 3: the last differs
    ]
    c = classes_of(rows, ANCHOR)
    self.assertEqual(c.classes, ((1, 4),))
    self.assertEqual(c.moves, ((4, (3,)),))
    self.assertFalse(c.invariant)

  def test_missing_rows_kept(self):
    c = classes_of([ConfigRows(2, None)], ROW0)
    self.assertIsNone(c)
    c = classes_of([ConfigRows(2, _row(1.0))], ROW0, [(8, "failed")])
    self.assertEqual(c.missing, ((8, "failed"),))
    self.assertFalse(c.invariant)  # one size known proves nothing


class AnchorTest(absltest.TestCase):
  def test_offsets(self):
    self.assertEqual(anchor_offsets(1), (0, 0, 0))
    self.assertEqual(anchor_offsets(8), (0, 4, 7))

  def test_anchor_is_the_last_full_row_at_each_offset(self):
    case = CASES["elementwise_only"]
    full = case.full_inputs()
    x, b, s = full
    for n in (1, 2, 8, 64):
      for offset in set(anchor_offsets(n)):
        xa, ba, sa = anchor_inputs(case, full, n, offset)
        self.assertEqual(xa.shape, (n, x.shape[1]))
        np.testing.assert_array_equal(xa[offset], x[-1])
        self.assertIs(ba, b)  # shared arguments pass unchanged
        self.assertIs(sa, s)
        others = np.delete(xa, offset, axis=0)
        # The companions are other rows than the anchor, none repeated.
        for row in others:
          self.assertFalse(np.array_equal(row, x[-1]))
        self.assertEqual(len({r.tobytes() for r in others}), n - 1)


if __name__ == "__main__":
  absltest.main()
