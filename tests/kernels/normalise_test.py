"""kernels/normalise.py: kernel text made comparable across batch sizes:
only the row bound of a PTX kernel normalised (`setp` against the row
count; shifts and shuffle offsets equal to n are not), float dataflow
without addresses, commuted sources equal (a + b == b + a, as LLVM
printed one row reduction both ways at n = 8 and 9, jaxlib 0.12.0.1),
dimensions equal to the row count written "N". PTX written here in PTX's
syntax; the digest is SHA-256's first 12 hex digits (hashlib). The PTX
tests moved from kernels/kernel_reader_test.py (NormaliseTest)."""

from __future__ import annotations

import hashlib

from absl.testing import absltest

from hloprobe.kernels import normalise


class NormaliseTest(absltest.TestCase):
  _PTX = """
.visible .entry k_7(.param .u64 k_7_param_0)
{
  shl.b32 %r36, %r35, 8;
  setp.lt.u32 %p1, %r34, 8;
  shfl.sync.bfly.b32 %r80, %r79, 8, 31, -1;
  add.rn.f32 %r81, %r79, %r80;
}
"""

  def test_only_the_row_bound_is_normalised(self):
    text = normalise.kernel_ptx([self._PTX])["k_7"]
    out = normalise.normalised_ptx("k_7", text, 8)
    self.assertIn("setp.lt.u32 %p1, %r34, N;", out)
    self.assertIn("shl.b32 %r36, %r35, 8;", out)
    self.assertIn("shfl.sync.bfly.b32 %r80, %r79, 8, 31, -1;", out)
    self.assertIn("KERNEL_param_0", out)
    other = normalise.normalised_ptx(
      "k_7", text.replace("%r34, 8", "%r34, 2"), 2
    )
    self.assertEqual(out, other)  # the same kernel, compiled for n = 2
    shifted = normalise.normalised_ptx(
      "k_7", text.replace("%r35, 8", "%r35, 2"), 8
    )
    self.assertNotEqual(out, shifted)  # another shift is another kernel

  def test_float_operations_drop_addresses(self):
    ops = normalise.float_operations(
      "ld.global.v2.b32 {%r1, %r2}, [%rd5+16];\n"
      "add.s64 %rd7, %rd6, 1024;\n"
      "add.rn.f32 %r3, %r1, %r2;\n"
      "st.shared.b32 [%rd9], %r3;\n"
    )
    # Sources are named before the result of a commuting op.
    self.assertEqual(ops, "add.rn.f32 v2, v0, v1\nst.shared.b32 [a], v2")

  def test_commuted_operands_are_equal(self):
    # LLVM printed `add.rn.f32 v32, v31, v29` at n = 8 and `..., v29, v31`
    # at n = 9 in one row reduction (jaxlib 0.12.0.1); a + b == b + a.
    a = normalise.float_operations(
      "mul.rn.f32 %r1, %r7, %r8;\nadd.rn.f32 %r3, %r1, %r2;"
    )
    b = normalise.float_operations(
      "mul.rn.f32 %r1, %r7, %r8;\nadd.rn.f32 %r3, %r2, %r1;"
    )
    self.assertEqual(a, b)
    c = normalise.float_operations(
      "mul.rn.f32 %r1, %r7, %r8;\nsub.rn.f32 %r3, %r2, %r1;"
    )
    d = normalise.float_operations(
      "mul.rn.f32 %r1, %r7, %r8;\nsub.rn.f32 %r3, %r1, %r2;"
    )
    self.assertNotEqual(c, d)  # subtraction does not commute

  def test_row_dims_and_digest(self):
    self.assertEqual(normalise.row_dims((8, 1000), 8), "N,1000")
    self.assertEqual(normalise.row_dims((1, 1000), 1), "1,1000")
    self.assertEqual(
      normalise.digest("x"), hashlib.sha256(b"x").hexdigest()[:12]
    )


if __name__ == "__main__":
  absltest.main()
