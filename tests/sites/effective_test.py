"""Tests for hloprobe.sites.effective: the rule tables, and effective algorithms of
real compile-only compiles of seed_mlp (jaxlib 0.10.2, no GPU needed)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import testutil
from absl.testing import absltest, parameterized

from hloprobe import sweep
from hloprobe.compile import cases, lowering, targets
from hloprobe.sites import effective
from hloprobe.sites.dot_sites import Fate

pytestmark = pytest.mark.compiles

_SEED = cases.get_case("seed_mlp")


@functools.cache
def _seed(target: str, precision: str, n: int) -> sweep.ConfigResult:
  """One compile-only config of seed_mlp; fails the test if it failed."""
  result = sweep.run_config(
    _SEED, _SEED.make_inputs(), None, targets.get_target(target), precision, n
  )
  if not result.ok:
    raise AssertionError(f"{target} n={n} {precision}: {result.failure}")
  return result


def _matmul_case(m: int, k: int, n: int) -> cases.Case:
  return cases.Case(
    f"matmul_{m}x{k}x{n}",
    "x @ y in f32",
    lambda x, y: x @ y,
    lambda: (np.ones((m, k), np.float32), np.ones((k, n), np.float32)),
  )


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
    (
      "declared_tf32_on_turing",
      "f32",
      "default,default",
      "TF32_TF32_F32",
      "7.5",
      "F32_F32_F32",
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
    # this rule allows TF32 for (tests/gpu_measurements_test.py).
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

  def test_cpu_rule(self):
    self.assertEqual(effective.cpu_algorithm("f32")[0], "F32_F32_F32")
    self.assertEqual(effective.cpu_algorithm("f64")[0], "F64_F64_F64")
    self.assertIsNone(effective.cpu_algorithm("bf16")[0])

  def test_cpu_ignores_precision(self):
    """What cpu_algorithm encodes: DEFAULT gives the bits HIGHEST gives."""
    case = _matmul_case(64, 512, 64)
    rng = np.random.default_rng(0)
    args = (
      rng.standard_normal((64, 512), np.float32),
      rng.standard_normal((512, 64), np.float32),
    )
    cpu = targets.get_target("cpu")
    outs = [
      lowering.run_compiled(lowering.compile_case(case, args, p, cpu), args)[0][
        0
      ]
      for p in ("default", "highest")
    ]
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.release_rules
class SeedOnA100Test(parameterized.TestCase):
  """Measured with jaxlib 0.10.2 and 0.12.0.1, compiling for an A100
  without one."""

  def test_n1_all_sites_multiply_reduce_in_f32(self):
    r = _seed("a100", "bfloat16", 1)
    self.assertEqual(
      [f.fate for f in r.compilation.fates], [Fate.MULTIPLY_REDUCE] * 4
    )
    self.assertEqual(
      {
        (f.effective_algorithm, f.algorithm_source) for f in r.compilation.fates
      },
      {("F32_F32_F32", "ptx")},
    )

  @parameterized.named_parameters(
    ("bfloat16_default", "bfloat16", "default,default", "TF32_TF32_F32"),
    ("tensorfloat32_high", "tensorfloat32", "high,high", "F32_F32_F32"),
    ("float32_highest", "float32", "highest,highest", "F32_F32_F32"),
  )
  def test_n2_triton_sites(self, precision, precision_config, algorithm):
    if precision == "tensorfloat32" and testutil.triton_tf32_under_high():
      algorithm = "TF32_TF32_F32"  # XLA 251becc5: IsTf32Allowed <= HIGH
    r = _seed("a100", precision, 2)
    self.assertEqual(
      [f.fate for f in r.compilation.fates],
      [Fate.TRITON_GEMM] * 3 + [Fate.MULTIPLY_REDUCE],
    )
    for f in r.compilation.fates[:3]:
      self.assertEqual(
        (f.precision_config, f.effective_algorithm, f.algorithm_source),
        (precision_config, algorithm, "ptx"),
        f.algorithm_evidence,
      )
      self.assertEqual(f.selection, effective.HEURISTIC)
    self.assertEqual(r.compilation.fates[3].effective_algorithm, "F32_F32_F32")

  def test_tf32_evidence_is_the_mma(self):
    f = _seed("a100", "bfloat16", 2).compilation.fates[0]
    self.assertRegex(
      f.algorithm_evidence,
      r"^kernel gemm_fusion_dot: cvt\.rna\.tf32\.f32 x\d+, "
      r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32 x\d+$",
    )

  def test_float32_evidence_is_fma_only(self):
    f = _seed("a100", "float32", 2).compilation.fates[0]
    self.assertRegex(
      f.algorithm_evidence,
      r"^kernel gemm_fusion_dot: no mma; only f32 products \(fma\.rn\.f32 x\d+\)$",
    )

  def test_deduplicated_fusions_share_a_kernel(self):
    fates = _seed("a100", "bfloat16", 2).compilation.fates
    self.assertEqual(
      [f.carriers[0] for f in fates[1:3]],
      ["gemm_fusion_dot.1", "gemm_fusion_dot.2"],
    )
    for f in fates[1:3]:
      self.assertTrue(
        f.algorithm_evidence.startswith("kernel gemm_fusion_dot_1:"),
        f.algorithm_evidence,
      )


class OtherTargetsTest(absltest.TestCase):
  def test_t4_n2_cublaslt_bias_without_tf32(self):
    r = _seed("t4", "bfloat16", 2)
    self.assertEqual(
      [f.fate for f in r.compilation.fates],
      [Fate.CUBLASLT] * 3 + [Fate.MULTIPLY_REDUCE],
    )
    for f in r.compilation.fates[:3]:
      self.assertEqual(f.gemm_config["gemm_backend_config"]["epilogue"], "BIAS")
      # A top-level `custom_call_target="__cublas$lt$matmul"`, no fusion.
      self.assertEqual(
        (f.custom_call_target, f.backend_config_kind, f.fusion_kind),
        ("__cublas$lt$matmul", None, None),
      )
      self.assertEqual(
        (f.effective_algorithm, f.algorithm_source), ("F32_F32_F32", "rule")
      )
      self.assertIn("sm_75 has no TF32", f.algorithm_evidence)

  def test_h100_512_cube_is_split_k(self):
    case = _matmul_case(512, 512, 512)
    r = sweep.run_config(
      case, case.make_inputs(), None, targets.get_target("h100"), "float32", 512
    )
    self.assertTrue(r.ok, r.failure)
    (f,) = r.compilation.fates
    self.assertEqual(
      (f.fate, f.split_k, f.effective_algorithm),
      (Fate.TRITON_GEMM, 4, "F32_F32_F32"),
    )

  def test_a100_512_cube_is_not_split(self):
    case = _matmul_case(512, 512, 512)
    r = sweep.run_config(
      case, case.make_inputs(), None, targets.get_target("a100"), "float32", 512
    )
    self.assertEqual(
      (r.compilation.fates[0].fate, r.compilation.fates[0].split_k),
      (Fate.TRITON_GEMM, None),
    )

  def test_cpu_sites_by_rule(self):
    r = _seed("cpu", "bfloat16", 2)
    self.assertEqual(
      {
        (f.effective_algorithm, f.algorithm_source, f.selection)
        for f in r.compilation.fates
      },
      {("F32_F32_F32", "rule", None)},
    )


if __name__ == "__main__":
  absltest.main()
