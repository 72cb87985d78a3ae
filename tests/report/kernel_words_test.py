"""The kernel model's findings in words (`report/kernel_words.py`).

The records are made by hand at observed row 0 = 1.0, where one f32 ulp is
2^-23; the expected lines are written out from their numbers."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.numerics.kernel_sites import Band, KernelRemainder, KernelSite
from hloprobe.report.kernel_words import (
  _BAND_WORDS,
  kernel_site_words,
  remainder_lines,
)

_ULP = 2.0**-23
_ORDERS = ("xla", "pairwise")


def _remainder(left_ulps: float, spread_ulps: float) -> KernelRemainder:
  return KernelRemainder(
    1.0 + left_ulps * _ULP,
    1.0,
    _ULP,
    (0, 1, 2),
    (3,),
    _ORDERS,
    spread_ulps * _ULP,
    _ULP,
    -_ULP,
  )


class RemainderLinesTest(absltest.TestCase):
  def test_a_remainder_the_order_and_functions_cover(self):
    self.assertEqual(
      remainder_lines(_remainder(2, 4)),
      [
        "kernel model row 0 1.00000024 vs observed 1: +2.38e-07 (+2.0 f32 "
        "ulps) left; sites [0, 1, 2] bit-exact model, sites [3] band",
        "band sites [3] over f32 orders xla, pairwise: row 0 spans 4.77e-07 "
        "(4.0 ulps)",
        "elementwise functions (exp, sin, ...: the GPU's libdevice in the "
        "gemm prologues vs XLA:CPU's), each one ulp off: row 0 moves "
        "+1.19e-07 / -1.19e-07 (+1.0 / -1.0 ulps)",
        "the remainder is within what the band sites' order and the "
        "elementwise functions' ulp move: consistent with bit-exact gemms",
      ],
    )

  def test_a_remainder_beyond_them_is_unexplained(self):
    r = _remainder(-8, 2)  # 8 ulps left; 2 + 1 ulps of movement
    self.assertFalse(r.covered)
    self.assertEqual(
      remainder_lines(r)[-1],
      "the remainder is beyond what the band sites' order and the "
      "elementwise functions' ulp move: unexplained",
    )
    self.assertIn("-9.54e-07 (-8.0 f32 ulps) left", remainder_lines(r)[0])


class KernelSiteWordsTest(absltest.TestCase):
  def test_every_band_has_words(self):
    self.assertEqual(set(_BAND_WORDS), {b.name for b in Band})

  def test_a_band_in_words(self):
    site = KernelSite("band", Band.SPLIT_K, "Triton gemm", split_k=4)
    self.assertEqual(
      kernel_site_words(site),
      "Triton gemm split-K 4: the reduce's f32 order not modelled",
    )


if __name__ == "__main__":
  absltest.main()
