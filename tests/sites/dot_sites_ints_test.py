"""Found trying to break issue 24 as a user: two integer dots of one x, w.

`jnp.einsum("bk,kj->bj", x, w, preferred_element_type=jnp.int32)` and the
same einsum into int8, x s8[1,48], w s8[48,12], compiled by XLA:CPU
(jaxlib 0.12.0.1) at n = 1: the optimized module
(tests/testdata/break24/ints_cpu_n1.hlo, recorded with `sweep
--output_dir`) has `dot.2` s32[1,12] and `dot.3` s8[1,12], both without
metadata, on the same parameters. Both sites were "ambiguous" (their
effective algorithm "unknown", "emulated as F32"); the result element type
tells them apart, as the HLO text read by hand does.
"""

from __future__ import annotations

import pathlib

from absl.testing import absltest

from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.sites import dot_sites
from hloprobe.sites.site_fate import Fate

_DATA = pathlib.Path(__file__).parents[1] / "testdata" / "break24"


def _mapped(edit=lambda text: text):
  sites = parse_stablehlo_dots((_DATA / "ints_cpu_n1.mlir").read_text())
  hlo = edit((_DATA / "ints_cpu_n1.hlo").read_text())
  return dot_sites.map_dot_sites(sites, parse_hlo_module(hlo))


class IntegerDotsWithoutMetadataTest(absltest.TestCase):
  def test_each_site_is_the_dot_of_its_element_type(self):
    mapped = _mapped()
    self.assertEqual([m.site.result.dtype for m in mapped], ["s32", "s8"])
    self.assertEqual([m.fate for m in mapped], [Fate.DOT, Fate.DOT])
    self.assertEqual([m.carriers[-1] for m in mapped], ["dot.2", "dot.3"])

  def test_element_types_swapped_swap_the_carriers(self):
    # Should-fail half: the two dots' result types planted the other way
    # round (and the fusions reading them), so the carriers swap too.
    def plant(text):
      for old, new in (
        ("%dot.3 = s8[1,12]", "%dot.3 = sX[1,12]"),
        ("%dot.2 = s32[1,12]", "%dot.2 = s8[1,12]"),
        ("%dot.3 = sX[1,12]", "%dot.3 = s32[1,12]"),
        ("= s8[1,12]{1,0} fusion(%dot.3)", "= s32[1,12]{1,0} fusion(%dot.3)"),
        ("= s32[1,12]{1,0} fusion(%dot.2)", "= s8[1,12]{1,0} fusion(%dot.2)"),
      ):
        assert old in text, old
        text = text.replace(old, new)
      return text

    mapped = _mapped(plant)
    self.assertEqual([m.carriers[-1] for m in mapped], ["dot.3", "dot.2"])


if __name__ == "__main__":
  absltest.main()
