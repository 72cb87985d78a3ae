"""sites/fp8_operands.py: the f8 type each operand of an fp8 gemm comes
from, on the recorded h100 compile of `fp8_scaled_matmul` with Triton
gemms off (jaxlib 0.12.0.1, tests/testdata/compiles/
fp8_scaled_matmul_h100_n8_default_no_triton_gemm). Expected is that
module read by hand: the entry takes x f8e4m3fn[8,64] and w
f8e4m3fn[64,32]; the cuBLAS gemm reads them through a pad fusion and a
transpose, while the program's StableHLO dot sees them dequantized to f32."""

from __future__ import annotations

import os

import testutil
from absl.testing import absltest

from hloprobe.ir import parse_hlo_module, parse_stablehlo_dots
from hloprobe.sites import dot_sites, fp8_operands

_DIR = os.path.join(
  testutil.ROOT,
  "tests/testdata/compiles/fp8_scaled_matmul_h100_n8_default_no_triton_gemm",
  "jaxlib0.12.0.1",
)


def _read(name: str) -> str:
  with open(os.path.join(_DIR, name), encoding="utf-8") as f:
    return f.read()


class Fp8OperandsTest(absltest.TestCase):
  def test_the_gemm_reads_the_f8_parameters(self):
    module = parse_hlo_module(_read("optimized.hlo"))
    (mapped,) = dot_sites.map_dot_sites(
      parse_stablehlo_dots(_read("stablehlo.mlir")), module
    )
    self.assertEqual(
      (mapped.site.lhs.dtype, mapped.site.rhs.dtype), ("f32", "f32")
    )
    self.assertEqual(
      fp8_operands.f8_operand_types(mapped, module), ("f8e4m3fn", "f8e4m3fn")
    )

  def test_is_f8(self):
    for t in ("f8e4m3fn", "f8e5m2", "f8e4m3fnuz"):
      self.assertTrue(fp8_operands.is_f8(t))
    for t in ("f16", "bf16", "s8", "f32"):
      self.assertFalse(fp8_operands.is_f8(t))


if __name__ == "__main__":
  absltest.main()
