"""Found trying to break issue 24 as a user: wording of the sites table.

`sweep --sites` on a grouped, dilated convolution on the CPU (XLA:CPU
keeps it an HLO `convolution`, fate `conv`, no pass rewrote it) said
"(stays a dot)" in its "rewritten by" column. The recorded conv_net
compile (tests/testdata/compiles) has two `stablehlo.convolution` sites
and one `stablehlo.dot_general` (its program text).
"""

from __future__ import annotations

import pathlib

from absl.testing import absltest

from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.report import tables

_MLIR = (
  pathlib.Path(__file__).parent
  / "testdata/compiles/conv_net_cpu_n4_bfloat16/jaxlib0.12.0.1/stablehlo.mlir"
)


class UnrewrittenCellTest(absltest.TestCase):
  def test_a_convolution_stays_a_convolution(self):
    sites = parse_stablehlo_dots(_MLIR.read_text())
    self.assertEqual(
      [tables._unrewritten(s) for s in sites],
      ["(stays a convolution)", "(stays a convolution)", "(stays a dot)"],
    )


if __name__ == "__main__":
  absltest.main()
