"""kernels/reduction_rules.py: XLA's multi-row reduction emitter's
choices for a row count (xla/backends/gpu/codegen/emitters/reduction.cc
MultiRowReductionFusion::TryCreate, worked by hand in the test), on a
reduce module written here. Moved from kernels/kernel_reader_test.py
(ReductionRuleTest)."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.ir import parse_hlo_module
from hloprobe.kernels import reduction_rules
from hloprobe.kernels.records import RowCountRule

_MULTI = """HloModule m

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main (p: f32[{rows},32]) -> f32[{rows}] {
  %p = f32[{rows},32]{1,0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[{rows}]{0} reduce(%p, %z), dimensions={1}, to_apply=%add
}
"""


class ReductionRuleTest(absltest.TestCase):
  def _fields(self, rows: int):
    module = parse_hlo_module(_MULTI.replace("{rows}", str(rows)))
    reduce = module.entry.root
    return reduction_rules.reduction_emitter(
      reduce, (rows, 32), "{1,0}", (32, 32), 32, core_count=108
    )

  def test_multi_row_vector_size_follows_the_row_count(self):
    # MultiRowReductionFusion::TryCreate, L = 32 f32: vector 2 (64 / 32,
    # capped at 128 / 32); threads per row 16, kept threads 256 / 16 = 16.
    # 4096 rows: ceil(4096 / 16) = 256 blocks >= 108 cores: vector 2.
    fields, depends, why = self._fields(4096)
    self.assertEqual(fields["reduction_emitter"], "multi-row")
    self.assertEqual(fields["vector_size"], "2")
    self.assertEqual(fields["threads_per_row"], "16")
    self.assertEqual(fields["rows_per_warp"], "2")
    self.assertTrue(depends)
    self.assertEqual(why.rule, RowCountRule.MULTI_ROW)
    self.assertEqual(why.cores, 108)
    # 64 rows: 4 blocks < 108: halved to 1; 32 threads per row, 1 row/warp.
    fields, _, _ = self._fields(64)
    self.assertEqual(fields["vector_size"], "1")
    self.assertEqual(fields["threads_per_row"], "32")
    self.assertEqual(fields["rows_per_warp"], "1")


if __name__ == "__main__":
  absltest.main()
