"""ir/proto_wire.py: a protobuf message's top-level fields walked on the
wire. Expected messages are encoded by hand from protobuf's wire format
(tag = field number << 3 | wire type; varints base 128), and the recorded
binary HloModuleProto XLA dumped (tests/testdata/modfile) is whole."""

from __future__ import annotations

import os

import testutil
from absl.testing import absltest

from hloprobe.ir import proto_wire

_PROTO = os.path.join(
  testutil.ROOT, "tests/testdata/modfile/jit_f.before_optimizations.hlo.pb"
)


class WireProblemTest(absltest.TestCase):
  def test_whole_messages(self):
    with open(_PROTO, "rb") as f:
      self.assertIsNone(proto_wire.wire_problem(f.read()))
    # field 1 "ab" (LEN), field 2 = 300 (varint 0xac 0x02), field 3 fixed32.
    msg = b"\x0a\x02ab" + b"\x10\xac\x02" + b"\x1d\x00\x00\x80\x3f"
    self.assertIsNone(proto_wire.wire_problem(msg))

  def test_truncated_and_bad_tags(self):
    self.assertEqual(
      proto_wire.wire_problem(b"\x0a\x05ab"),
      "truncated: field 1 at byte 0 runs past the end of the file (4 bytes)",
    )
    self.assertEqual(
      proto_wire.wire_problem(b"\x0a\x00\x10"),
      "truncated: field 2 at byte 2 runs past the end",
    )
    # Wire type 7 does not exist; field number 0 is not allowed.
    self.assertEqual(
      proto_wire.wire_problem(b"\x0f"),
      "not a protobuf: bad field tag 0xf at byte 0",
    )
    self.assertEqual(
      proto_wire.wire_problem(b"\x02\x00"),
      "not a protobuf: bad field tag 0x2 at byte 0",
    )


if __name__ == "__main__":
  absltest.main()
