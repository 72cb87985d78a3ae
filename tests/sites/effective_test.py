"""Tests for hloprobe.sites.effective: the rule tables, and that the CPU
rule holds on a real CPU run; effective algorithms of recorded compiles of
two releases are in site_fate_test.py."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import program_cases
import pytest
import recorded
from absl.testing import absltest, parameterized

from hloprobe import numerics
from hloprobe.compile import Case, get_target, lowering, targets
from hloprobe.engine.measure import run_config
from hloprobe.sites import effective


class BlasRuleTest(parameterized.TestCase):
  @parameterized.named_parameters(
    (
      "a100_default_tf32",
      "f32",
      "default,default",
      None,
      "8.0",
      "TF32_TF32_F32",
    ),
    ("a100_high_still_tf32", "f32", "high,high", None, "8.0", "TF32_TF32_F32"),
    ("a100_highest_f32", "f32", "highest,highest", None, "8.0", "F32_F32_F32"),
    (
      "a100_mixed_highest_wins",
      "f32",
      "default,highest",
      None,
      "8.0",
      "F32_F32_F32",
    ),
    (
      "t4_no_tf32_hardware",
      "f32",
      "default,default",
      None,
      "7.5",
      "F32_F32_F32",
    ),
    ("unknown_cc", "f32", "default,default", None, None, None),
    (
      "declared_algorithm",
      "f32",
      "default,default",
      "BF16_BF16_F32_X3",
      "9.0a",
      "BF16_BF16_F32_X3",
    ),
    # XLA rejects TF32/BF16 presets below sm_80 (algorithm_util.cc
    # IsSupportedDotAlgorithmOnGpu: IsAtLeastAmpere): no outcome.
    (
      "declared_tf32_on_turing",
      "f32",
      "default,default",
      "TF32_TF32_F32",
      "7.5",
      None,
    ),
    (
      "declared_tf32_x3_on_turing",
      "f32",
      "default,default",
      "TF32_TF32_F32_X3",
      "7.5",
      None,
    ),
    (
      "declared_bf16_on_turing",
      "bf16",
      "default,default",
      "BF16_BF16_F32",
      "7.5",
      None,
    ),
    (
      "declared_bf16_x6_on_volta",
      "f32",
      "default,default",
      "BF16_BF16_F32_X6",
      "7.0",
      None,
    ),
    (
      "declared_f32_on_turing",
      "f32",
      "default,default",
      "F32_F32_F32",
      "7.5",
      "F32_F32_F32",
    ),
    (
      "declared_tf32_on_ampere",
      "f32",
      "default,default",
      "TF32_TF32_F32",
      "8.0",
      "TF32_TF32_F32",
    ),
    ("bf16_operands", "bf16", "default,default", None, "8.0", "BF16_BF16_F32"),
    ("f64_operands", "f64", "highest,highest", None, "8.0", "F64_F64_F64"),
    ("s8_operands", "s8", "default,default", None, "8.0", None),
  )
  def test_rule(self, dtype, precision, algorithm, cc, expected):
    got, evidence = effective.blas_algorithm(
      "cuBLASLt", dtype, precision, algorithm, cc
    )
    self.assertEqual(got, expected, evidence)
    self.assertIn("cuBLASLt", evidence)

  @parameterized.named_parameters(
    ("default", "default,default"), ("high", "high,high")
  )
  def test_tf32_is_allowed_not_required(self, precision):
    # A real H200 (jaxlib 0.11.2) ran a K = 2 cuBLASLt gemm in f32 that
    # this rule allows TF32 for (tests/versions/gpu_check_h200_test.py).
    got, evidence = effective.blas_algorithm(
      "cuBLASLt", "f32", precision, None, "9.0"
    )
    self.assertEqual(got, "TF32_TF32_F32")
    self.assertIn("TF32 allowed, not required", evidence)
    self.assertIn("runs TF32_TF32_F32 or F32_F32_F32", evidence)

  def test_highest_evidence_allows_no_tf32(self):
    got, evidence = effective.blas_algorithm(
      "cuBLAS", "f32", "highest,highest", None, "9.0"
    )
    self.assertEqual(got, "F32_F32_F32")
    self.assertNotIn("allowed", evidence)

  @parameterized.parameters("packed_nibble,default", "default,bogus")
  def test_unknown_operand_precision_has_no_outcome(self, precision):
    # xla_data.proto's PrecisionConfig has PACKED_NIBBLE beside
    # DEFAULT/HIGH/HIGHEST; the TF32 rule is keyed on the last three only,
    # so another word must not be taken for DEFAULT (TF32 allowed).
    got, evidence = effective.blas_algorithm(
      "cuBLAS", "f32", precision, None, "9.0"
    )
    self.assertIsNone(got)
    self.assertIn("unknown operand precision", evidence)

  def test_cpu_rule(self):
    self.assertEqual(effective.cpu_algorithm("f32")[0], "F32_F32_F32")
    self.assertEqual(effective.cpu_algorithm("f64")[0], "F64_F64_F64")
    self.assertIsNone(effective.cpu_algorithm("bf16")[0])

  @pytest.mark.compiles
  def test_cpu_ignores_precision(self):
    """What cpu_algorithm encodes: DEFAULT gives the bits HIGHEST gives."""
    case = program_cases.ones_matmul(64, 512, 64)
    rng = np.random.default_rng(0)
    args = (
      rng.standard_normal((64, 512), np.float32),
      rng.standard_normal((512, 64), np.float32),
    )
    cpu = targets.get_target("cpu")
    outs = [
      lowering.compile_case(case, args, p, cpu).run(args)[0][0]
      for p in ("default", "highest")
    ]
    np.testing.assert_array_equal(outs[0], outs[1])


class SplitPassesTest(parameterized.TestCase):
  """f32 operands on a bf16 mma (review finding 11). The seed declared
  BF16_BF16_F32_X3 at n = 2 for the a100 (both releases): the gemm kernels
  split the operands into bf16 parts (cvt.f32.bf16 in their PTX, see
  tests/ir/ptx_test.py's SplitOperandsTest), and the declared preset
  names the passes. With the declaration planted away (XLA splitting on
  its own, e.g. under a debug option), the kernel alone does not say how
  many passes: no preset, said, instead of one-pass BF16_BF16_F32."""

  @parameterized.named_parameters(*((r, r) for r in recorded.RELEASES))
  def test_declared_preset_names_the_passes(self, jaxlib):
    rec = recorded.load("preset_seed_a100_n2_BF16_BF16_F32_X3", jaxlib)
    fates = recorded.fates(rec)
    self.assertLen(fates, 4)
    for f in fates[:3]:
      self.assertEqual(f.effective_algorithm, "BF16_BF16_F32_X3")
      self.assertIn("f32 operands split into bf16 parts", f.algorithm_evidence)

  @parameterized.named_parameters(*((r, r) for r in recorded.RELEASES))
  def test_undeclared_split_has_no_preset(self, jaxlib):
    rec = recorded.load("preset_seed_a100_n2_BF16_BF16_F32_X3", jaxlib)
    hlo = lambda t: t.replace(", algorithm=dot_bf16_bf16_f32_x3", "")
    mlir = lambda t: re.sub(r", algorithm = <[^>]*>", "", t)
    self.assertNotIn("algorithm = <", mlir(rec.stablehlo))
    fates = recorded.fates(rec, hlo, mlir)
    for f in fates[:3]:
      self.assertIsNone(f.algorithm)
      self.assertEqual(f.fate.value, "Triton gemm")
      self.assertIsNone(f.effective_algorithm)
      self.assertIsNone(f.algorithm_source)
      self.assertIn("count not read", f.algorithm_evidence)
      # Nor does the kernel model take it as one bf16 pass.
      m = numerics.site_model(
        f.fate.value,
        f.mma_opcodes,
        "8.0",
        f.split_k,
        f.effective_algorithm,
        f.ptx_tf32_rounding,
      )
      self.assertEqual(m.kind, "band")

  @parameterized.named_parameters(*((r, r) for r in recorded.RELEASES))
  def test_one_pass_kernels_stay_one_pass(self, jaxlib):
    rec = recorded.load("preset_seed_a100_n2_BF16_BF16_F32", jaxlib)
    for f in recorded.fates(rec)[:3]:
      self.assertEqual(f.effective_algorithm, "BF16_BF16_F32")
      self.assertNotIn("split", f.algorithm_evidence)


# XLA:CPU's release-dependent path of a bf16 dot (operand_upcaster at
# n = 1, YNNPACK at n = 4), checked on both releases (make test-old) and
# under AVX (make test-isa: the dot-library rewrite is not ISA-gated).
@pytest.mark.compiles
@pytest.mark.release_rules
@pytest.mark.cpu_numerics
class CpuBf16DotTest(absltest.TestCase):
  def test_bf16_dot_on_the_cpu_is_bf16_bf16_f32(self):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 64)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((64, 32)).astype(ml_dtypes.bfloat16)
    case = Case(
      "bf16_cpu",
      "bf16 x bf16 -> f32",
      lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32),
      lambda: (x, w),
    )
    for n in (1, 4):
      r = run_config(case, (x, w), None, get_target("cpu"), "default", n)
      (f,) = r.compilation.fates
      self.assertEqual(f.effective_algorithm, "BF16_BF16_F32")
      hlo = r.compilation.optimized_hlo
      if n == 1:  # operand_upcaster: both operands converted to f32
        self.assertRegex(hlo, r"f32\[64,32\]\{1,0\} convert\(")
      else:  # YNNPACK takes the bf16 operands, f32 result
        self.assertIn("__ynn_fusion", hlo)
        self.assertIn("bf16[4,64]", hlo)
        self.assertNotRegex(hlo, r"f32\[64,32\]\{1,0\} convert\(")
    # The run: exact products summed in f32, within K u sum|a||b| of f64.
    got = np.asarray(jax.jit(case.fn)(x, w), np.float64)
    a, b = x.astype(np.float64), w.astype(np.float64)
    bound = 64 * 2.0**-24 * (np.abs(a) @ np.abs(b))
    self.assertTrue(np.all(np.abs(got - a @ b) <= bound))


class OperandRoundingTest(parameterized.TestCase):
  """A declared BF16_BF16_F32 on the seed at n = 2 (a100): XLA strength-
  reduces site 3 (K = 48, one output column) to a multiply+reduce whose
  multiply reads the weight through convert(f32 -> bf16) and back, and the
  activation in f32 (read below in each release's optimized HLO). The
  products are then neither F32_F32_F32 (what was said) nor
  BF16_BF16_F32."""

  # The multiply's first operand is named %broadcast.8.3 by 0.12.0.1,
  # %broadcast.18.3 by 0.10.2.
  _MULTIPLY = re.compile(
    r"%multiply\.4 = f32\[2,48\]\{1,0\} multiply\((%broadcast\.\d+\.3), "
    r"%mul\.35\.3\)"
  )

  @parameterized.named_parameters(*((r, r) for r in recorded.RELEASES))
  def test_one_operand_rounded_has_no_preset(self, jaxlib):
    rec = recorded.load("preset_seed_a100_n2_BF16_BF16_F32", jaxlib)
    hlo = rec.optimized_hlo
    self.assertIsNotNone(self._MULTIPLY.search(hlo))
    self.assertRegex(hlo, r"%convert\.4\.1 = bf16\[1,48\]\{1,0\} convert\(")
    self.assertRegex(hlo, r"%convert\.8\.3 = f32\[48\]\{0\} convert\(")
    site = recorded.fates(rec)[3]
    self.assertEqual(site.fate.value, "multiply+reduce")
    self.assertIsNone(site.effective_algorithm)
    self.assertIn("operand 0 bf16, operand 1 f32", site.algorithm_evidence)
    self.assertIn("one operand rounded", site.algorithm_evidence)

  def test_both_operands_rounded_are_bf16_bf16_f32(self):
    # Planted: the activation rounded through bf16 as well.
    def plant(text):
      m = self._MULTIPLY.search(text)
      self.assertIsNotNone(m)
      return text.replace(
        m.group(0),
        "%r1 = bf16[2,48]{1,0} convert(%mul.35.3)\n"
        "  %r2 = f32[2,48]{1,0} convert(%r1)\n"
        f"  %multiply.4 = f32[2,48]{{1,0}} multiply({m.group(1)}, %r2)",
      )

    rec = recorded.load("preset_seed_a100_n2_BF16_BF16_F32")
    site = recorded.fates(rec, plant)[3]
    self.assertEqual(site.effective_algorithm, "BF16_BF16_F32")

  def test_without_a_declared_preset_the_products_stay_f32(self):
    rec = recorded.load("seed_a100_n2_bfloat16")
    site = recorded.fates(rec)[3]
    self.assertEqual(site.effective_algorithm, "F32_F32_F32")


if __name__ == "__main__":
  absltest.main()


class PtxFieldsTest(parameterized.TestCase):
  """Review finding 8: the kernel a site was read from is a record field
  (`SiteFate.ptx_kernel`, `mma_opcodes`, `ptx_tf32_rounding`), and what
  reads it (the kernel model, the invariance kernel identity, the PTX an
  --output_dir keeps) never re-reads `algorithm_evidence`, words for
  people."""

  _TF32 = ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",)

  @parameterized.named_parameters(*[(r, r) for r in recorded.RELEASES])
  def test_fields_name_the_kernel_read(self, jaxlib):
    fates = recorded.fates(recorded.load("seed_a100_n2_bfloat16", jaxlib))
    # The kernels named by hand from the recorded PTX's .entry lines
    # (sites 1 and 2 are deduplicated fusions sharing gemm_fusion_dot_1).
    self.assertEqual(
      [f.ptx_kernel for f in fates[:3]],
      ["gemm_fusion_dot", "gemm_fusion_dot_1", "gemm_fusion_dot_1"],
    )
    for f in fates[:3]:
      self.assertEqual(
        (f.mma_opcodes, f.ptx_tf32_rounding), (self._TF32, "rna")
      )
    cpu = recorded.fates(recorded.load("seed_cpu_n2_bfloat16", jaxlib))
    self.assertEqual(
      {(f.ptx_kernel, f.mma_opcodes, f.ptx_tf32_rounding) for f in cpu},
      {(None, (), None)},
    )

  def test_evidence_words_do_not_change_what_code_reads(self):
    import dataclasses

    from hloprobe.engine.compiled import evidence_ptx
    from hloprobe.invariance.kernel_identity import site_kernels
    from hloprobe.ir import parse_ptx
    from hloprobe.numerics import site_model

    rec = recorded.load("seed_a100_n2_bfloat16")
    result = recorded.config_result(rec)
    reworded = dataclasses.replace(
      result,
      compilation=dataclasses.replace(
        result.compilation,
        fates=tuple(
          dataclasses.replace(f, algorithm_evidence=f"said otherwise {i}")
          for i, f in enumerate(result.compilation.fates)
        ),
      ),
    )
    files = [(text, parse_ptx(text)) for text in rec.ptx]

    def read(r):
      fates = r.compilation.fates
      models = [
        site_model(
          f.fate.value,
          f.mma_opcodes,
          "8.0",
          f.split_k,
          f.effective_algorithm,
          f.ptx_tf32_rounding,
        )
        for f in fates
      ]
      return (
        [(m.kind, m.band, m.ins, m.tf32_rounding) for m in models],
        sorted(evidence_ptx(fates, files)),
        site_kernels(r),
      )

    models, kept, kernels = read(result)
    self.assertEqual(read(reworded), (models, kept, kernels))
    self.assertEqual([m[0] for m in models], ["bit-exact model"] * 3 + ["band"])
    self.assertEqual(models[0][3], "rna")
    # Site 3's multiply+reduce was read from its reduce fusion's kernel.
    self.assertEqual(
      kept, ["gemm_fusion_dot", "gemm_fusion_dot_1", "input_reduce_fusion"]
    )
