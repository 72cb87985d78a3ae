"""execute/values.py: HLO element types as numpy dtypes, layouts and
constant literals, and the entry's arguments checked. Expected values are
HLO's own spellings (xla/primitive_util.cc names; `constant({...})` as
HloInstruction::ToString prints literals, row-major) read by hand; the
parameters come from parsing a two-line HLO module written here."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from absl.testing import absltest, parameterized

from hloprobe.errors import ExecutionError
from hloprobe.execute import values
from hloprobe.ir import parse_hlo_module

_HLO = """HloModule m, entry_computation_layout={(f32[2,3]{1,0}, (s32[], bf16[4]{0}))->f32[2,3]{1,0}}

ENTRY %main (p0: f32[2,3], p1: (s32[], bf16[4])) -> f32[2,3] {
  %p1 = (s32[], bf16[4]{0}) parameter(1)
  ROOT %p0 = f32[2,3]{1,0} parameter(0)
}
"""


class DtypeTest(parameterized.TestCase):
  @parameterized.parameters(
    ("f32", np.float32),
    ("pred", np.bool_),
    ("u8", np.uint8),
    ("bf16", ml_dtypes.bfloat16),
    ("f8e4m3fn", ml_dtypes.float8_e4m3fn),
  )
  def test_numpy_dtype(self, hlo, want):
    self.assertEqual(values.numpy_dtype(hlo), np.dtype(want))

  def test_token_is_unsupported_and_floats_widen(self):
    with self.assertRaisesRegex(values.Unsupported, "element type token"):
      values.numpy_dtype("token")
    self.assertEqual(values.compute_dtype("bf16", widen=True), np.float64)
    self.assertEqual(
      values.compute_dtype("bf16", widen=False), ml_dtypes.bfloat16
    )
    self.assertEqual(values.compute_dtype("s32", widen=True), np.int32)
    self.assertFalse(values.is_float(np.dtype(ml_dtypes.int4)))


class LayoutLiteralTest(absltest.TestCase):
  def test_minor_to_major(self):
    self.assertEqual(values.minor_to_major("{0,1}", 2), (0, 1))
    self.assertEqual(values.minor_to_major("{1,0:T(8,128)}", 2), (1, 0))
    self.assertEqual(values.minor_to_major(None, 3), (2, 1, 0))
    with self.assertRaises(values.Unsupported):
      values.minor_to_major("{0,0}", 2)

  def test_parse_literal_row_major(self):
    got = values.parse_literal(
      "{ { 1, -inf, 0.5 }, { 2, 3, nan } }", np.float32, (2, 3)
    )
    np.testing.assert_array_equal(
      got, np.float32([[1, -np.inf, 0.5], [2, 3, np.nan]])
    )
    self.assertEqual(values.parse_literal("true", np.bool_, ()), True)
    with self.assertRaisesRegex(values.Unsupported, "elided"):
      values.parse_literal("{...}", np.float32, (4,))
    with self.assertRaisesRegex(values.Unsupported, "2 values for 3"):
      values.parse_literal("{1, 2}", np.int32, (3,))


class CheckArgumentsTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    entry = parse_hlo_module(_HLO).entry
    self.params = {
      i.parameter_number: i
      for i in entry.instructions
      if i.opcode == "parameter"
    }

  def test_right_arguments_pass(self):
    values.check_arguments(
      self.params,
      [
        np.zeros((2, 3), np.float32),
        (np.int32(1), np.zeros(4, ml_dtypes.bfloat16)),
      ],
    )

  def test_wrong_count_shape_or_tuple_is_one_line(self):
    with self.assertRaisesRegex(ExecutionError, "takes 2 arguments, got 1"):
      values.check_arguments(self.params, [np.zeros((2, 3), np.float32)])
    with self.assertRaisesRegex(ExecutionError, "parameter p1 is a tuple of 2"):
      values.check_arguments(
        self.params, [np.zeros((2, 3), np.float32), np.int32(1)]
      )
    with self.assertRaisesRegex(ExecutionError, "p0"):
      values.check_arguments(
        self.params,
        [
          np.zeros((3, 2), np.float32),
          (np.int32(1), np.zeros(4, ml_dtypes.bfloat16)),
        ],
      )


if __name__ == "__main__":
  absltest.main()
