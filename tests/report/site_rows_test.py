"""Found trying to break issue 24 as a user: wording.

`sweep --sites` on a grouped, dilated convolution on the CPU (XLA:CPU
keeps it an HLO `convolution`, fate `conv`, no pass rewrote it) said
"(stays a dot)" in its "rewritten by" column. The recorded conv_net
compile (tests/testdata/compiles) has two `stablehlo.convolution` sites
and one `stablehlo.dot_general` (its program text).

`explain` and `verify --require=accurate` on an all-F32 conv net on the
CPU named "row 3: 6.0e-07, 1x beyond f32 noise": its m was 1.31
(6.04e-07 over 2 x 2.31e-07), and "1x" reads as not beyond.
"""

from __future__ import annotations

import pathlib

from absl.testing import absltest

from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.numerics import rows
from hloprobe.report import site_rows
from hloprobe.report.verdict_words import row_words

_MLIR = (
  pathlib.Path(__file__).parents[1]
  / "testdata/compiles/conv_net_cpu_n4_bfloat16/jaxlib0.12.0.1/stablehlo.mlir"
)


class UnrewrittenCellTest(absltest.TestCase):
  def test_a_convolution_stays_a_convolution(self):
    sites = parse_stablehlo_dots(_MLIR.read_text())
    self.assertEqual(
      [site_rows._unrewritten(s) for s in sites],
      ["(stays a convolution)", "(stays a convolution)", "(stays a dot)"],
    )


def _worst(abs_err: float, floor_abs: float) -> rows.WorstRow:
  return rows.WorstRow(
    leaf="",
    row=3,
    abs_err=abs_err,
    floor_abs=floor_abs,
    multiple=abs_err / (2 * floor_abs),
    rows=8,
    beyond=1,
    row0_abs=0.0,
    row0_multiple=0.0,
    output_dtype="float32",
  )


class RowWordsTest(absltest.TestCase):
  def test_a_multiple_below_10_keeps_one_decimal(self):
    self.assertEqual(
      row_words(_worst(6.04e-07, 2.31e-07)),
      "row 3: 6.0e-07, 1.3x beyond f32 noise (1 of 8 rows)",
    )

  def test_whole_multiples_stay_whole(self):
    self.assertIn("5x beyond", row_words(_worst(1.0, 0.1)))
    self.assertIn("126x beyond", row_words(_worst(25.2, 0.1)))


if __name__ == "__main__":
  absltest.main()
