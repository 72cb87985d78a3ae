"""Sharded programs' collectives beside their sites (issue 24 item 5), on
recorded compiles of the built-in case sharded_matmul (K = 256 sharded
over 8 devices) under jaxlib 0.10.2 and 0.12.0.1, no XLA
(tests/testdata/sharded/, written by make_fixtures.py there).

The independent source is the optimized HLO itself, read here with a
regular expression of the collective's own line (its opcode, operand and
`replica_groups`), and the case's mesh of 8 devices.
"""

from __future__ import annotations

import os
import re

from absl.testing import absltest, parameterized

from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.report.site_words import collective_words
from hloprobe.sites import dot_sites
from hloprobe.sites.collectives import collective_after, group_size
from hloprobe.sites.site_fate import Collective

_DATA = os.path.join(
  os.path.dirname(os.path.dirname(__file__)), "testdata", "sharded"
)
_RELEASES = ("0.10.2", "0.12.0.1")
_FIXTURES = ("cpu_all_reduce", "a100_all_reduce", "a100_reduce_scatter")
# `%name = shape opcode(%operand)`, the collective's line in the text.
_COLLECTIVE_RE = re.compile(
  r"%(\S+) = .*? (all-reduce|all-reduce-start|reduce-scatter|"
  r"reduce-scatter-start)\(%([^),]+)\)"
)


def _read(jaxlib: str, name: str, suffix: str) -> str:
  with open(os.path.join(_DATA, jaxlib, f"{name}.{suffix}")) as f:
    return f.read()


class CollectiveBesideSiteTest(parameterized.TestCase):
  @parameterized.product(jaxlib=_RELEASES, name=_FIXTURES)
  def test_the_collective_adding_the_partial_sums_is_named(self, jaxlib, name):
    text = _read(jaxlib, name, "hlo.txt")
    sites = parse_stablehlo_dots(_read(jaxlib, name, "stablehlo.mlir"))
    module = parse_hlo_module(text)
    (found,) = _COLLECTIVE_RE.findall(text)
    op_name, opcode, operand = found
    kind = opcode.removesuffix("-start")
    self.assertEqual(kind, name.split("_", 1)[1].replace("_", "-"))
    (mapped,) = dot_sites.map_dot_sites(sites, module)
    # The collective consumes the site's kernel (its outermost carrier).
    self.assertEqual(mapped.carriers[0], operand)
    self.assertEqual(mapped.collective, Collective(kind, "add", 8, op_name))
    self.assertEqual(
      collective_words(mapped.collective), f"{kind} over 8 devices ({op_name})"
    )

  @parameterized.parameters((r,) for r in _RELEASES)
  def test_the_site_keeps_its_program_length(self, jaxlib):
    # The StableHLO site is the program's: K = 256, not a device's 32.
    sites = parse_stablehlo_dots(
      _read(jaxlib, "a100_all_reduce", "stablehlo.mlir")
    )
    self.assertEqual(sites[0].contracting_size, 256)
    text = _read(jaxlib, "a100_all_reduce", "hlo.txt")
    self.assertIn("num_partitions=8", text.splitlines()[0])
    self.assertEqual(parse_hlo_module(text).partition_count, 8)


class GroupSizeTest(parameterized.TestCase):
  """The three forms XLA prints replica groups in (hand-written)."""

  @parameterized.parameters(
    ("{{0,1,2,3,4,5,6,7}}", 8),
    ("{{0,1},{2,3},{4,5},{6,7}}", 2),
    ("[1,8]<=[8]", 8),
    ("[2,4]<=[8]", 4),
    ("mesh['axis_0'=8] {'axis_0'}", 8),
    ("mesh['axis_0'=1,'axis_1'=8] {'axis_1'}", 8),
    ("mesh['a'=2,'b'=4] {'a','b'}", 8),
    ("mesh['a'=2,'b'=4] {'a'}", 2),
    ("{}", 8),
    (None, 8),
  )
  def test_group_size(self, text, size):
    self.assertEqual(group_size(text, partitions=8), size)


class OneDeviceTest(absltest.TestCase):
  def test_an_unsharded_module_names_no_collective(self):
    module = parse_hlo_module(
      "HloModule m, entry_computation_layout={(f32[2,3]{1,0}, "
      "f32[3,4]{1,0})->f32[2,4]{1,0}}\n\n"
      "ENTRY %main (a: f32[2,3], b: f32[3,4]) -> f32[2,4] {\n"
      "  %a = f32[2,3]{1,0} parameter(0)\n"
      "  %b = f32[3,4]{1,0} parameter(1)\n"
      "  ROOT %dot = f32[2,4]{1,0} dot(%a, %b), lhs_contracting_dims={1}, "
      "rhs_contracting_dims={0}\n"
      "}\n"
    )
    self.assertEqual(module.partition_count, 1)
    self.assertIsNone(collective_after(module, module.entry.root))


if __name__ == "__main__":
  absltest.main()
