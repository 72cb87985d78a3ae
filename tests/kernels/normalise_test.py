"""kernels/normalise.py: kernel text made comparable across batch sizes.
The PTX lines are written here in PTX's syntax (PTX ISA: `add.rn.f32 d, a,
b`, `ld.global`, `setp`), as the module's docstring quotes the n = 8 / n =
9 case of one row reduction (jaxlib 0.12.0.1): only float dataflow is
kept, registers renamed in order of first use, commuted sources ordered;
and the row count written "N" in shapes. The digest is SHA-256's first
12 hex digits (hashlib, independently)."""

from __future__ import annotations

import hashlib

from absl.testing import absltest

from hloprobe.kernels import normalise

_N8 = """
.visible .entry k(
  ld.global.f32 %f29, [%rd4+8];
  ld.global.f32 %f31, [%rd4];
  add.s32 %r7, %r6, 8;
  add.rn.f32 %f32, %f31, %f29;
  st.global.f32 [%rd9], %f32;
"""
# The same arithmetic with other registers, the add's sources swapped and
# other index arithmetic (n = 9).
_N9 = """
.visible .entry k(
  ld.global.f32 %f9, [%rd2+12];
  ld.global.f32 %f11, [%rd2];
  add.s32 %r7, %r6, 9;
  add.rn.f32 %f12, %f9, %f11;
  st.global.f32 [%rd3], %f12;
"""


class NormaliseTest(absltest.TestCase):
  def test_float_dataflow_equal_across_sizes(self):
    a, b = normalise.float_operations(_N8), normalise.float_operations(_N9)
    self.assertEqual(a, b)
    # One line: the loads and stores to global memory and the index add
    # are not float dataflow.
    self.assertRegex(a, r"^add\.rn\.f32 v\d, v\d, v\d$")

  def test_a_different_operation_differs(self):
    other = _N9.replace("add.rn.f32", "mul.rn.f32")
    self.assertNotEqual(
      normalise.float_operations(_N8), normalise.float_operations(other)
    )

  def test_row_dims_and_digest(self):
    self.assertEqual(normalise.row_dims((8, 1000), 8), "N,1000")
    self.assertEqual(normalise.row_dims((1, 1000), 1), "1,1000")
    self.assertEqual(
      normalise.digest("x"), hashlib.sha256(b"x").hexdigest()[:12]
    )


if __name__ == "__main__":
  absltest.main()
