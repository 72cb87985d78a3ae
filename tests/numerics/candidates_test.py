"""numerics/candidates.py: site assignments as pure functions of names.
Expected lists are enumerated by hand from the docstrings' rules: every
subset of up to 4 TF32-optional sites at F32 (2^k, fewest first), beyond
that the subsets of at most one site and of all but at most one (2k + 2),
and each non-F32 site's share pair."""

from __future__ import annotations

import dataclasses
import itertools
import math
import re

import recorded
from absl.testing import absltest

from hloprobe.numerics import candidates
from hloprobe.numerics.bands import OPERAND_UNIT, site_band
from hloprobe.numerics.verdicts import algorithm_groups

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
    self.assertEqual(algorithm_groups((F, F)), ())  # every site F32

  def test_consecutive_groups_cover_each_site_once_in_about_sqrt_groups(self):
    # count -> (groups, each group's size), by hand: ceil(sqrt(count))
    # groups of ceil(count / groups) sites, the last one short.
    want = {
      0: [],
      1: [1],
      2: [1, 1],
      3: [2, 1],
      16: [4, 4, 4, 4],
      17: [4, 4, 4, 4, 1],
      24: [5, 5, 5, 5, 4],
      72: [8] * 9,  # gpt2_12's TF32 sites
    }
    for count, sizes in want.items():
      got = candidates.consecutive_groups(count)
      self.assertEqual([len(g) for g in got], sizes, count)
      self.assertEqual([i for g in got for i in g], list(range(count)))
    with self.assertRaises(ValueError):
      candidates.consecutive_groups(-1)


class TruncatedTf32Test(absltest.TestCase):
  """Review finding 12: a TF32 mma with no cvt.rna.tf32.f32 truncates its
  operands (MMA-Sim's tf32 operand read). Planted on the seed's recorded
  a100 compile at n = 2 (tensorfloat32, jaxlib 0.12.0.1): its gemm kernels
  round with cvt.rna.tf32.f32 (6 and 12 of them, by grep); with those
  statements removed the PTX reader says "truncate", and the site is
  emulated as TF32_TRUNCATED_F32, whose band has TF32's whole unit."""

  def _fates(self, plant: bool):
    rec = recorded.load("seed_a100_n2_tensorfloat32")
    if plant:
      cut = lambda t: re.sub(
        r"^\s*cvt\.rna\.tf32\.f32[^;]*;\n", "", t, flags=re.M
      )
      rec = dataclasses.replace(rec, ptx=tuple(map(cut, rec.ptx)))
      self.assertTrue(all("cvt.rna.tf32" not in t for t in rec.ptx))
    return recorded.fates(rec)

  def test_rounding_kernels_stay_rna(self):
    fates = self._fates(plant=False)
    self.assertEqual([f.ptx_tf32_rounding for f in fates[:3]], ["rna"] * 3)
    chosen, note = candidates.chosen_algorithms(fates)
    self.assertEqual(chosen, (T, T, T, F))
    self.assertIsNone(note)

  def test_truncating_kernels_are_emulated_truncated(self):
    fates = self._fates(plant=True)
    self.assertLen(fates, 4)
    for f in fates[:3]:
      self.assertEqual(f.effective_algorithm, T)  # the mma's preset
      self.assertEqual(f.ptx_tf32_rounding, "truncate")
    chosen, note = candidates.chosen_algorithms(fates)
    z = "TF32_TRUNCATED_F32"
    self.assertEqual(chosen, (z, z, z, F))
    self.assertIsNone(note)
    self.assertEqual(algorithm_groups(chosen), ((z, (0, 1, 2)),))

  def test_band_has_the_whole_unit(self):
    # Higham's bound (bands.SiteBand) with u = 2^-10: (2u + u^2 +
    # gamma_K(2^-24)) max|A||B|, here K = 48 and max|A||B| = 3.
    u, k, scale = 2.0**-10, 48, 3.0
    want = (2 * u + u * u + k * 2.0**-24 / (1 - k * 2.0**-24)) * scale
    band = site_band(0, "TF32_TRUNCATED_F32", k, scale, 1.0)
    self.assertAlmostEqual(band.worst_abs, want, places=15)
    self.assertEqual(OPERAND_UNIT["TF32_TRUNCATED_F32"], 2 * OPERAND_UNIT[T])


if __name__ == "__main__":
  absltest.main()
