"""kernels/records.py: a kernel record as JSON-ready data (enums as their
report words, pairs as objects) and its fields looked up in `arithmetic`
first, then `config`; on a record made here."""

from __future__ import annotations

import json

from absl.testing import absltest

from hloprobe.kernels import records


def _record() -> records.KernelRecord:
  return records.KernelRecord(
    name="triton_softmax.4",
    kernel="triton_softmax_4",
    role=records.Role.REDUCTION,
    emitter="Triton block-level (__triton)",
    ops=("exp", "reduce_max"),
    source=("/u/model.py:9",),
    row_shape="f32[N,1000]",
    arithmetic=(("tile", "1x1024"), ("num_warps", "4")),
    config=(("num_stages", "1"), ("tile", "config's")),
    signature="reduction Triton tile=1x1024 num_warps=4",
    row_count=records.RowCount.INDEPENDENT,
    row_count_why=records.RowCountWhy(records.RowCountRule.ROW, length=1000),
  )


class KernelRecordTest(absltest.TestCase):
  def test_as_dict_is_json_with_words(self):
    d = _record().as_dict()
    self.assertEqual(json.loads(json.dumps(d)), d)
    self.assertEqual(d["role"], "reduction")
    self.assertEqual(d["row_count"], "independent of the row count")
    self.assertEqual(d["arithmetic"], {"tile": "1x1024", "num_warps": "4"})
    # The reason is data (the rule and its numbers); report words it.
    self.assertEqual(d["row_count_why"], {"rule": "row", "length": 1000})

  def test_field_arithmetic_before_config(self):
    r = _record()
    self.assertEqual(r.field("tile"), "1x1024")
    self.assertEqual(r.field("num_stages"), "1")
    self.assertIsNone(r.field("split_k"))


if __name__ == "__main__":
  absltest.main()
