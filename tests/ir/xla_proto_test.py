"""The HloProto / HloSnapshot / LiteralProto reader (`hloprobe.ir`'s
xla_proto), on recorded files and on literals built here byte by byte.

No XLA: the protobuf package only. Expected values come from the program
that made the recorded files (tests/testdata/modfile/README.md: x =
arange(6) as 2x3, w = ones 3x4, results tanh(x @ w).sum(1) and x @ w) and
from numpy, and the wire bytes of a literal from xla_data.proto's field
numbers written out by hand.
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
from absl.testing import absltest, parameterized

from hloprobe import ir
from hloprobe.ir.xla_proto import (
  literal_from_array,
  literal_to_arrays,
  snapshot_bytes,
)

_DATA = os.path.join(
  os.path.dirname(os.path.dirname(__file__)), "testdata", "modfile"
)


def _read(name: str) -> bytes:
  with open(os.path.join(_DATA, name), "rb") as f:
    return f.read()


def _varint(n: int) -> bytes:
  out = bytearray()
  while True:
    out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
    n >>= 7
    if not n:
      return bytes(out)


def _len_field(number: int, payload: bytes) -> bytes:
  return _varint(number << 3 | 2) + _varint(len(payload)) + payload


class RecordedTest(absltest.TestCase):
  def test_xlas_snapshot(self):
    found = ir.read_proto_file(_read("jit_f.snapshot.pb"))
    self.assertEqual(found.kind, "hlo_snapshot")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = np.ones((3, 4), np.float32)
    self.assertLen(found.arguments, 2)
    np.testing.assert_array_equal(found.arguments[0], x)
    np.testing.assert_array_equal(found.arguments[1], w)
    want_sum = np.tanh(x.astype(np.float64) @ w).sum(axis=1)
    np.testing.assert_allclose(found.result[0], want_sum, rtol=1e-6)
    np.testing.assert_array_equal(found.result[1], x @ w)
    self.assertEqual(ir.module_signature(found.module_proto)[0], "jit_f")

  def test_dump_proto_is_an_hloproto_around_the_module(self):
    found = ir.read_proto_file(_read("jit_f.before_optimizations.hlo.pb"))
    self.assertEqual((found.kind, found.arguments), ("hlo_proto", None))
    self.assertEqual(
      ir.module_signature(found.module_proto),
      ("jit_f", (((2, 3), "f32"), ((3, 4), "f32"))),
    )
    # The bare HloModuleProto is read as well.
    self.assertEqual(ir.read_proto_file(found.module_proto).kind, "hlo_proto")

  def test_truncated_is_no_proto_and_says_so(self):
    data = _read("jit_f.snapshot.pb")
    self.assertIsNone(ir.read_proto_file(data[:-100]))
    # Fields go out in number order: the result (3) is last, and cut.
    self.assertRegex(
      ir.wire_problem(data[:-100]),
      rf"^truncated: field 3 at byte \d+ runs past the end of the file "
      rf"\({len(data) - 100} bytes\)$",
    )
    self.assertRegex(ir.wire_problem(data[:800]), r"^truncated: field 1 ")
    self.assertIsNone(ir.wire_problem(data))


class LiteralTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("f32", np.float32),
    ("f64", np.float64),
    ("f16", np.float16),
    ("bf16", ml_dtypes.bfloat16),
    ("f8e4m3fn", ml_dtypes.float8_e4m3fn),
    ("f8e5m2", ml_dtypes.float8_e5m2),
    ("s8", np.int8),
    ("s16", np.int16),
    ("s32", np.int32),
    ("s64", np.int64),
    ("u8", np.uint8),
    ("u32", np.uint32),
    ("pred", np.bool_),
    ("c64", np.complex64),
  )
  def test_round_trip_bit_equal(self, dtype):
    g = np.random.default_rng(3)
    a = (g.standard_normal((3, 4)) * 20).astype(dtype)
    (b,) = literal_to_arrays(literal_from_array(a))
    self.assertEqual(b.dtype, a.dtype)
    np.testing.assert_array_equal(b.view(np.uint8), a.view(np.uint8))

  def test_bf16_bytes_little_endian_by_hand(self):
    # LiteralProto { shape = 1 { element_type = 2: BF16 (16);
    # dimensions = 3: [2] }, bf16s = 13: 1.0 (0x3f80), -2.0 (0xc000) }
    shape = b"\x10\x10" + b"\x18\x02"
    data = _len_field(1, shape) + _len_field(13, b"\x80\x3f\x00\xc0")
    (a,) = literal_to_arrays(data)
    self.assertEqual(a.dtype, ml_dtypes.bfloat16)
    np.testing.assert_array_equal(a.astype(np.float32), [1.0, -2.0])

  def test_column_major_layout(self):
    # f32[2,3] with minor_to_major {0,1}: the buffer runs down columns.
    layout = _len_field(1, b"\x00\x01")  # packed minor_to_major [0, 1]
    shape = b"\x10\x0b" + _len_field(3, b"\x02\x03") + _len_field(5, layout)
    values = np.arange(6, dtype="<f4")
    data = _len_field(1, shape) + _len_field(8, values.tobytes())
    (a,) = literal_to_arrays(data)
    np.testing.assert_array_equal(a, values.reshape(3, 2).T)

  def test_wrong_count_is_an_error(self):
    shape = b"\x10\x0b" + _len_field(3, b"\x02\x03")
    data = _len_field(1, shape) + _len_field(8, np.zeros(5, "<f4").tobytes())
    with self.assertRaisesRegex(ValueError, r"f32\[2,3\] has 5 values, not 6"):
      literal_to_arrays(data)

  def test_tuple_result_leaves_in_order(self):
    module = ir.read_proto_file(
      _read("jit_f.before_optimizations.hlo.pb")
    ).module_proto
    a, b = np.ones((2, 3), np.float32), np.arange(4, dtype=np.int32)
    snap = ir.read_proto_file(snapshot_bytes(module, (a, a), (a, b)))
    self.assertEqual(snap.kind, "hlo_snapshot")
    self.assertLen(snap.result, 2)
    np.testing.assert_array_equal(snap.result[1], b)


class InstructionIdTest(absltest.TestCase):
  """A module whose instruction's local id (its low 32 bits) is over
  2^24 - 1 is refused before XLA's reader, which sizes a vector of 8-byte
  pointers by it (issue 41; make fuzz seed 0 mutation 13254: 10 GB)."""

  def _module(self, instruction_id: int) -> bytes:
    from hloprobe.ir import xla_proto

    classes = xla_proto._classes()
    module = classes["HloModuleProto"](name="m", entry_computation_name="e")
    computation = module.computations.add(name="e")
    computation.instructions.add(name="p", opcode="parameter", id=1 << 32)
    computation.instructions.add(name="c", opcode="constant", id=instruction_id)
    return module.SerializeToString()

  def test_ids_of_a_real_module_read(self):
    # jaxlib 0.12.0.1 writes (computation id << 32) | local id.
    found = ir.read_proto_file(self._module((1 << 32) + (1 << 24) - 1))
    self.assertEqual(found.kind, "hlo_proto")
    self.assertIsNotNone(ir.read_proto_file(self._module((7 << 32) + 5)))

  def test_a_huge_local_id_is_refused(self):
    with self.assertRaisesRegex(
      ValueError, r"instruction 'c' has id 4311744512 \(local id 16777216, "
    ):
      ir.read_proto_file(self._module((1 << 32) + (1 << 24)))
    # -1's low 32 bits are 4294967295.
    with self.assertRaisesRegex(ValueError, "local id 4294967295"):
      ir.read_proto_file(self._module(-1))


if __name__ == "__main__":
  absltest.main()
