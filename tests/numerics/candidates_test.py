"""numerics/candidates.py: site assignments as pure functions of names.
Expected lists are enumerated by hand from the docstrings' rules: every
subset of up to 4 TF32-optional sites at F32 (2^k, fewest first), beyond
that the subsets of at most one site and of all but at most one (2k + 2),
and each non-F32 site's share pair."""

from __future__ import annotations

import itertools
import math

from absl.testing import absltest

from hloprobe.numerics import candidates

T, F = "TF32_TF32_F32", "F32_F32_F32"


class AllowedTest(absltest.TestCase):
  def test_every_subset_fewest_first(self):
    got = candidates.allowed_assignments((T, T, F), (0, 1))
    self.assertEqual(got, [(T, T, F), (F, T, F), (T, F, F), (F, F, F)])
    for a in got:
      self.assertTrue(candidates.is_allowed(a, (T, T, F), (0, 1)))
    self.assertFalse(candidates.is_allowed((T, T, T), (T, T, F), (0, 1)))

  def test_beyond_four_optional_sites_2k_plus_2(self):
    k = 6
    got = candidates.allowed_assignments((T,) * k, tuple(range(k)))
    self.assertLen(got, 2 * k + 2)
    self.assertLen(set(got), 2 * k + 2)
    self.assertEqual((got[0], got[-1]), ((T,) * k, (F,) * k))
    four = candidates.allowed_assignments((T,) * 4, tuple(range(4)))
    self.assertLen(four, sum(math.comb(4, r) for r in range(5)))  # 16

  def test_share_pairs(self):
    pairs = list(candidates.share_pairs((T, F, "BF16_BF16_F32")))
    self.assertEqual(
      pairs,
      [
        (0, (T, F, F), (F, F, "BF16_BF16_F32")),
        (2, (F, F, "BF16_BF16_F32"), (T, F, F)),
      ],
    )
    self.assertEqual(
      candidates.share_assignments((T, F, "BF16_BF16_F32")),
      list(itertools.chain.from_iterable((a, b) for _, a, b in pairs)),
    )
    self.assertEqual(candidates.describe_assignment((F, F)), F)


if __name__ == "__main__":
  absltest.main()
