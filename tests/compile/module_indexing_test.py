"""compile/module_indexing.py: an HLO `window={...}` attribute as
per-dimension tuples. The text is HLO's window syntax (xla/hlo/parser
`ParseWindow`: `size=AxB stride=.. pad=lo_hixlo_hi lhs_dilate=..
rhs_dilate=..`, absent fields 1 and pads 0_0) written by hand."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.compile import module_indexing


class WindowTest(absltest.TestCase):
  def test_every_field(self):
    self.assertEqual(
      module_indexing.window(
        "{size=3x2 stride=2x1 pad=1_0x0_2 lhs_dilate=1x2 rhs_dilate=2x1}", 2
      ),
      {
        "size": (3, 2),
        "stride": (2, 1),
        "pad": [(1, 0), (0, 2)],
        "lhs_dilate": (1, 2),
        "rhs_dilate": (2, 1),
      },
    )

  def test_absent_fields_default(self):
    w = module_indexing.window("{size=1x4x4x1}", 4)
    self.assertEqual(w["stride"], (1, 1, 1, 1))
    self.assertEqual(w["pad"], [(0, 0)] * 4)
    self.assertEqual(w["rhs_dilate"], (1, 1, 1, 1))


if __name__ == "__main__":
  absltest.main()
