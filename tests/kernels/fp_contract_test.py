"""Where a kernel's multiply feeds an add or a subtract (a possible fused
multiply-add), on recorded compiles (tests/testdata/kernels/
record_fp_contract.py, jaxlib 0.12.0.1 and 0.10.2 alike, compile-only
a100, n = 8) and hand-written HLO and PTX.

Expected facts read by hand from the recordings:
  elementwise_only (relu((x - b) * s)): `subtract` sub.7.5 feeds
    `multiply` mul.7.3, which feeds `maximum` max.3.1: no multiply feeds
    an add or subtract. PTX: `sub.rn.f32`, `mul.rn.f32`, `max.NaN.f32`.
  scale_shift (relu(x * s - b)): `multiply` mul.7.5 feeds `subtract`
    sub.7.3. PTX: `mul.rn.f32` then `sub.rn.f32` (not an fma: XLA's loop
    emitter left them apart, each rounded, so ptxas may not fuse them).
"""

from __future__ import annotations

import os

from absl.testing import absltest, parameterized

from hloprobe import kernels
from hloprobe.ir import parse_hlo_module
from hloprobe.kernels import fp_contract, normalise

_DATA = os.path.join(os.path.dirname(__file__), "..", "testdata", "kernels")
_RELEASES = ("0.12.0.1", "0.10.2")


def _recorded(stem: str, release: str = "0.12.0.1") -> tuple[str, str]:
  base = os.path.join(_DATA, release, f"{stem}_a100_n8")
  with open(base + ".hlo.txt", encoding="utf-8") as f:
    hlo = f.read()
  with open(base + ".ptx.txt", encoding="utf-8") as f:
    ptx = f.read()
  return hlo, ptx


def _fused(module, name: str):
  """Every instruction of computation `name` (one fusion's)."""
  return list(module.computations[name].instructions)


class RecordedTest(parameterized.TestCase):
  @parameterized.parameters(*_RELEASES)
  def test_control_has_no_multiply_feeding_an_add(self, release):
    hlo, ptx = _recorded("elementwise_only", release)
    module = parse_hlo_module(hlo)
    self.assertEqual(
      fp_contract.multiply_adds(module, _fused(module, "fused_maximum")), ()
    )
    (text,) = normalise.kernel_ptx([ptx]).values()
    self.assertEqual(fp_contract.ptx_fusable(text), ())
    (rec,) = kernels.read_kernels(hlo, 8, [ptx])
    self.assertEqual((rec.contractible, rec.ptx_fusable), ((), ()))

  @parameterized.parameters(*_RELEASES)
  def test_a_multiply_feeding_a_subtract_is_named(self, release):
    hlo, ptx = _recorded("scale_shift", release)
    (rec,) = kernels.read_kernels(hlo, 8, [ptx])
    self.assertEqual(
      rec.contractible, ("multiply mul.7.5 -> subtract sub.7.3",)
    )
    # XLA did not contract them: mul.rn.f32 and sub.rn.f32.
    self.assertEqual(rec.ptx_fusable, ())

  def test_no_ptx_is_none(self):
    hlo, _ = _recorded("scale_shift")
    (rec,) = kernels.read_kernels(hlo, 8)
    self.assertIsNone(rec.ptx_fusable)
    self.assertLen(rec.contractible, 1)


_NESTED = """HloModule m

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%inner (p0: f32[8]) -> f32[8] {
  %p0 = f32[8]{0} parameter(0)
  ROOT %neg = f32[8]{0} negate(%p0)
}

%outer (a: f32[8], b: f32[8]) -> f32[] {
  %a = f32[8]{0} parameter(0)
  %b = f32[8]{0} parameter(1)
  %m = f32[8]{0} multiply(%a, %b)
  %n = f32[8]{0} fusion(%m), kind=kLoop, calls=%inner
  %c = f32[8]{0} convert(%n)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(%c, %z), dimensions={0}, to_apply=%sum
}

ENTRY %e (a: f32[8], b: f32[8]) -> f32[] {
  %a = f32[8]{0} parameter(0)
  %b = f32[8]{0} parameter(1)
  ROOT %f = f32[] fusion(%a, %b), kind=kInput, calls=%outer
}
"""


class HandWrittenTest(absltest.TestCase):
  def test_negate_in_a_nested_fusion_stops_it(self):
    # m -> nested fusion (negate: not an add) -> convert -> reduce(add):
    # the negate is not a move, so m does not reach the reduce.
    module = parse_hlo_module(_NESTED)
    insts = _fused(module, "outer") + _fused(module, "inner")
    self.assertEqual(fp_contract.multiply_adds(module, insts), ())

  def test_through_a_nested_fusion_to_an_add_reduce(self):
    text = _NESTED.replace("negate(%p0)", "copy(%p0)")
    module = parse_hlo_module(text)
    insts = _fused(module, "outer") + _fused(module, "inner")
    self.assertEqual(
      fp_contract.multiply_adds(module, insts), ("multiply m -> reduce r",)
    )

  def test_ptx_opcodes(self):
    text = """
      mul.rn.f32 %r1, %r2, %r3;
      add.rn.ftz.f32 %r4, %r1, %r5;
      add.s64 %rd1, %rd2, %rd3;
      mul.wide.u32 %rd4, %r6, 4;
      @%p1 fma.rn.f32 %r7, %r1, %r2, %r3;
      sub.f32 %r8, %r1, %r2;
    """
    self.assertEqual(fp_contract.ptx_fusable(text), ("fma.rn.f32", "sub.f32"))
    self.assertEqual(fp_contract.ptx_fusable("add.rn.f32 %r1, %r2, %r3;"), ())


if __name__ == "__main__":
  absltest.main()
