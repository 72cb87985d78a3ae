"""Tests for hloprobe.ir.ptx on PTX that XLA wrote (jaxlib 0.10.2) and on
hand-written PTX (see testdata/ptx/README.md)."""

from __future__ import annotations

import os

import recorded
from absl.testing import absltest, parameterized

from hloprobe.ir import ptx

_PTX = os.path.join(os.path.dirname(__file__), "testdata", "ptx")
_MMA_TF32 = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"


def _kernels(filename: str) -> dict[str, ptx.PtxKernel]:
  with open(os.path.join(_PTX, filename)) as f:
    return {k.name: k for k in ptx.parse_ptx(f.read())}


class ParsePtxTest(parameterized.TestCase):
  @parameterized.named_parameters(
    (
      "triton_default_tf32",
      "a100_seed_n2_default_gemm_fusion_dot.ptx",
      "gemm_fusion_dot",
      "TF32_TF32_F32",
      "rna",
    ),
    (
      "triton_high_fma",
      "a100_seed_n2_high_gemm_fusion_dot.ptx",
      "gemm_fusion_dot",
      "F32_F32_F32",
      None,
    ),
    (
      "triton_high_tf32_jaxlib_0_11_2",
      "h200_jaxlib0112_seed_n2_high_gemm_fusion_dot.ptx",
      "gemm_fusion_dot",
      "TF32_TF32_F32",
      "rna",
    ),
    (
      "triton_high_tf32_jaxlib_0_11_2_autotuned",
      "h200gpu_jaxlib0112_seed_n2_high_gemm_fusion_dot_1.ptx",
      "gemm_fusion_dot_1",
      "TF32_TF32_F32",
      "rna",
    ),
    (
      "reduce_f32_despite_f64_sin",
      "a100_seed_n2_input_reduce_fusion.ptx",
      "input_reduce_fusion",
      "F32_F32_F32",
      None,
    ),
    (
      "triton_bf16",
      "a100_bf16_256_gemm_fusion_dot.ptx",
      "gemm_fusion_dot",
      "BF16_BF16_F32",
      None,
    ),
    (
      "bf16_products",
      "h100_bf16_matvec_loop_multiply_fusion.ptx",
      "loop_multiply_fusion",
      None,
      None,
    ),
    (
      "callee_mma",
      "handwritten_sm90.ptx",
      "calls_tile_mma",
      "TF32_TF32_F32",
      "rna",
    ),
    ("wgmma", "handwritten_sm90.ptx", "wgmma_kernel", "BF16_BF16_F32", None),
    # jaxlib 0.12.0.1: HIGH is TF32 in the Triton gemm (XLA 251becc5), on
    # sm_80 and sm_90a alike.
    (
      "triton_high_0_12_a100",
      "a100_jaxlib01201_seed_n2_high_gemm_fusion_dot.ptx",
      "gemm_fusion_dot",
      "TF32_TF32_F32",
      "rna",
    ),
    (
      "triton_high_0_12_h100",
      "h100_jaxlib01201_seed_n2_high_gemm_fusion_dot.ptx",
      "gemm_fusion_dot",
      "TF32_TF32_F32",
      "rna",
    ),
  )
  def test_classifies(self, filename, name, algorithm, rounding):
    k = _kernels(filename)[name]
    self.assertEqual((k.algorithm, k.tf32_rounding), (algorithm, rounding))

  def test_real_tf32_kernel_counts(self):
    k = _kernels("a100_seed_n2_default_gemm_fusion_dot.ptx")["gemm_fusion_dot"]
    self.assertEqual(k.target, "sm_80")
    self.assertEqual(
      dict(k.instructions), {"cvt.rna.tf32.f32": 6, _MMA_TF32: 2}
    )
    self.assertEqual(k.evidence, f"cvt.rna.tf32.f32 x6, {_MMA_TF32} x2")

  def test_entries_only_and_declarations_skipped(self):
    self.assertEqual(
      set(_kernels("handwritten_sm90.ptx")), {"calls_tile_mma", "wgmma_kernel"}
    )

  def test_wgmma_bookkeeping_is_not_an_mma(self):
    k = _kernels("handwritten_sm90.ptx")["wgmma_kernel"]
    self.assertEqual(
      [op for op, _ in k.instructions],
      ["wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16"],
    )

  def test_bf16_products_have_no_preset(self):
    k = _kernels("h100_bf16_matvec_loop_multiply_fusion.ptx")[
      "loop_multiply_fusion"
    ]
    self.assertRegex(k.evidence, r"16-bit products \(mul\.rn\.bf16 x1\)")


class ClassifyTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("tf32_truncating", {_MMA_TF32: 1}, "TF32_TF32_F32", "truncate"),
    (
      "f16_f16_acc",
      {"mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16": 1},
      "F16_F16_F16",
      None,
    ),
    (
      "f16_f32_acc",
      {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32": 4},
      "F16_F16_F32",
      None,
    ),
    (
      "fp8_no_preset",
      {"mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32": 1},
      "E4M3_E4M3_F32 (no DotAlgorithmPreset)",
      None,
    ),
    (
      "mixed_mma",
      {_MMA_TF32: 1, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32": 1},
      None,
      None,
    ),
    ("f64_only", {"fma.rn.f64": 3}, "F64_F64_F64", None),
    ("integer_only", {"mul.lo.s32": 3}, None, None),
    ("nothing", {}, None, None),
  )
  def test_rules(self, counts, algorithm, rounding):
    got, _, got_rounding = ptx.classify_instructions(counts)
    self.assertEqual((got, got_rounding), (algorithm, rounding))

  @parameterized.named_parameters(
    (
      "f32_ops_f32",
      "a100_seed_n2_input_reduce_fusion.ptx",
      "input_reduce_fusion",
      "f32",
      "F32_F32_F32",
    ),
    (
      "bf16_ops_f32_products",
      "a100_seed_n2_input_reduce_fusion.ptx",
      "input_reduce_fusion",
      "bf16",
      "BF16_BF16_F32",
    ),
    (
      "bf16_ops_bf16_products",
      "h100_bf16_matvec_loop_multiply_fusion.ptx",
      "loop_multiply_fusion",
      "bf16",
      "BF16_PRODUCTS_F32",
    ),
    (
      "bf16_products_f32_sums",
      "h100_bf16_256_input_reduce_fusion.ptx",
      "input_reduce_fusion",
      "bf16",
      "BF16_PRODUCTS_F32",
    ),
    (
      "mma_wins",
      "a100_seed_n2_default_gemm_fusion_dot.ptx",
      "gemm_fusion_dot",
      "bf16",
      "TF32_TF32_F32",
    ),
    (
      "f64_ops_f64_products",
      "a100_seed_n2_input_reduce_fusion.ptx",
      "input_reduce_fusion",
      "f64",
      "F64_F64_F64",
    ),
  )
  def test_for_operands(self, filename, name, dtype, algorithm):
    kernel = _kernels(filename)[name]
    self.assertEqual(ptx.for_operands(kernel, dtype)[0], algorithm)
    self.assertEqual(kernel.algorithm_for(dtype)[0], algorithm)


class SixteenBitTest(parameterized.TestCase):
  """Kernels that multiply or add in 16 bits (issue 11, input 3): each
  names an algorithm the emulator computes. The products' and sums'
  rounding is read off the opcodes (PTX ISA: `mul.rn.bf16` rounds the
  product, `fma.rn.bf16` rounds only the sum, `add.rn.f32` sums in f32)."""

  @parameterized.named_parameters(
    ("mul_f32_sums", {"mul.rn.bf16": 4, "add.rn.f32": 3}, "BF16_PRODUCTS_F32"),
    (
      "mul_16bit_sums",
      {"mul.rn.bf16": 4, "add.rn.bf16": 3},
      "BF16_PRODUCTS_BF16",
    ),
    (
      "fma_as_multiply",
      {"fma.rn.bf16": 4, "add.rn.f32": 3},
      "BF16_PRODUCTS_F32",
    ),
    ("fma_accumulates", {"fma.rn.bf16": 4}, "BF16_BF16_BF16"),
    ("f16x2_mul", {"mul.rn.f16x2": 2, "add.rn.f32": 3}, "F16_PRODUCTS_F32"),
    ("f16_fma_adds", {"fma.rn.f16": 2, "add.rn.f16": 3}, "F16_F16_F16"),
  )
  def test_scalar_16_bit(self, counts, expected):
    dtype = "bf16" if "bf16" in next(iter(counts)) else "f16"
    kernel = ptx.PtxKernel(
      "k", "sm_90", tuple(sorted(counts.items())), None, "", None
    )
    self.assertEqual(ptx.for_operands(kernel, dtype)[0], expected)

  def test_every_class_is_emulated(self):
    from hloprobe.numerics import emulate_dot  # noqa: PLC0415 (one test)

    classes = [
      {_MMA_TF32: 1, "cvt.rna.tf32.f32": 1},
      {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32": 1},
      {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32": 1},
      {"mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16": 1},
      {"fma.rn.f32": 1},
      {"fma.rn.f64": 1},
    ]
    for counts in classes:
      algorithm = ptx.classify_instructions(counts)[0]
      self.assertIn(algorithm, emulate_dot.EMULATED_ALGORITHMS, counts)


class SplitOperandsTest(parameterized.TestCase):
  """f32 operands split into bf16 parts (review finding 11): the seed's
  gemm kernels for the a100 at n = 2, recorded under both releases
  (tests/testdata/compiles/preset_seed_a100_n2_BF16_BF16_F32{,_X3}). By
  hand (grep of the PTX): the X3 kernels hold cvt.f32.bf16 6 times
  (gemm_fusion_dot) and 12 times (gemm_fusion_dot_1), beside
  cvt.rn.bf16.f32 and a bf16 mma; the one-pass kernels hold none."""

  @parameterized.named_parameters(
    *(
      (f"{preset}_{release}", preset, release, want)
      for release in recorded.RELEASES
      for preset, want in (
        ("BF16_BF16_F32", {"gemm_fusion_dot": 0, "gemm_fusion_dot_1": 0}),
        ("BF16_BF16_F32_X3", {"gemm_fusion_dot": 6, "gemm_fusion_dot_1": 12}),
      )
    )
  )
  def test_recorded_gemm_kernels(self, preset, release, want):
    rec = recorded.load(f"preset_seed_a100_n2_{preset}", release)
    kernels = {k.name: k for text in rec.ptx for k in ptx.parse_ptx(text)}
    for name, widenings in want.items():
      k = kernels[name]
      self.assertEqual(k.algorithm, "BF16_BF16_F32")  # one mma flavour
      self.assertEqual(k.bf16_widenings, widenings)
      self.assertEqual(k.splits_f32_operands, widenings > 0)
      algorithm, evidence = k.algorithm_for("f32")
      self.assertEqual(algorithm, "BF16_BF16_F32")
      self.assertEqual("count not read" in evidence, widenings > 0)
      # bf16 operands are not split, whatever the kernel.
      self.assertNotIn("count not read", k.algorithm_for("bf16")[1])

  def test_widening_without_a_bf16_mma_is_no_split(self):
    text = (
      ".version 8.0\n.target sm_80\n.visible .entry k() {\n"
      "cvt.rn.bf16.f32 %rs1, %f1;\ncvt.f32.bf16 %f2, %rs1;\n"
      "fma.rn.f32 %f3, %f2, %f2, %f3;\nret;\n}\n"
    )
    (k,) = ptx.parse_ptx(text)
    self.assertEqual(k.bf16_widenings, 1)
    self.assertFalse(k.splits_f32_operands)


class KernelNameTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("dots", "gemm_fusion_dot.1", "gemm_fusion_dot_1"),
    ("dashes", "loop-add.fusion.2", "loop_add_fusion_2"),
    ("leading_digit", "1fusion", "_1fusion"),
    ("dollar_kept", "a$b", "a$b"),
  )
  def test_sanitizes_like_xla(self, hlo_name, expected):
    self.assertEqual(ptx.kernel_name(hlo_name), expected)


if __name__ == "__main__":
  absltest.main()
