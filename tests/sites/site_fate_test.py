"""Dot-site fates and effective algorithms of recorded compiles, no XLA.

Each test reads tests/testdata/compiles/ (record.py there), as jaxlib
0.10.2 and 0.12.0.1 compiled it, through the stages a sweep's worker runs
after compiling (`recorded.fates`). Expected values are those the
compiling tests asserted before (read from the PTX, the program text and
XLA's rules, never from hloprobe); where a rule changed between the two
releases the expectation says so (`testutil.triton_tf32_under_high`). The
planted edits are the should-fail halves: the same fixture, one fact
changed, another answer.
"""

from __future__ import annotations

import dataclasses
import re

import recorded
import testutil
from absl.testing import absltest, parameterized

from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.report.site_words import conflict_words
from hloprobe.sites import dot_sites, effective, site_fate
from hloprobe.sites.site_fate import Fate

# (test name suffix, release) for parameterized.named_parameters.
_RELEASES = tuple((r.replace(".", "_"), r) for r in recorded.RELEASES)


def _fates(name: str, jaxlib: str, **edits) -> list[site_fate.SiteFate]:
  return recorded.fates(recorded.load(name, jaxlib), **edits)


class CpuSeedFatesTest(parameterized.TestCase):
  """What the seed's dot sites become on the CPU."""

  @parameterized.named_parameters(
    (f"{p}_{tag}", p, r)
    for p in ("bfloat16", "tensorfloat32", "float32")
    for tag, r in _RELEASES
  )
  def test_batch_1_last_site_is_strength_reduced(self, precision, jaxlib):
    fates = _fates(f"seed_cpu_n1_{precision}", jaxlib)
    self.assertEqual(
      [f.fate for f in fates], [Fate.DOT] * 3 + [Fate.MULTIPLY_REDUCE]
    )
    self.assertEqual(
      site_fate.fate_summary(fates), "dot x3, multiply+reduce x1"
    )

  @parameterized.named_parameters(*_RELEASES)
  def test_batch_2_last_site_stays_a_dot(self, jaxlib):
    fates = _fates("seed_cpu_n2_float32", jaxlib)
    self.assertEqual([f.fate for f in fates], [Fate.DOT] * 4)
    # Each site has its own carrier, and the precision config survives.
    self.assertLen({f.carriers for f in fates}, 4)
    self.assertEqual({f.precision_config for f in fates}, {"highest,highest"})

  @parameterized.named_parameters(*_RELEASES)
  def test_carriers_name_real_instructions(self, jaxlib):
    fates = _fates("seed_cpu_n2_tensorfloat32", jaxlib)
    self.assertEqual(fates[3].emitter, "top level")
    self.assertEqual(
      (
        fates[3].fusion_kind,
        fates[3].backend_config_kind,
        fates[3].custom_call_target,
      ),
      (None, None, None),
    )
    self.assertTrue(fates[3].carriers[-1].startswith("dot"))
    # XLA CPU prints `kind=kCustom` and
    # `backend_config={"fusion_config":{"kind":"__ynn_fusion"}}`.
    self.assertEqual(fates[0].emitter, "__ynn_fusion")
    self.assertEqual(
      (fates[0].fusion_kind, fates[0].backend_config_kind),
      ("kCustom", "__ynn_fusion"),
    )
    self.assertEqual(fates[0].precision_config, "high,high")

  @parameterized.named_parameters(*_RELEASES)
  def test_cpu_sites_by_rule(self, jaxlib):
    fates = _fates("seed_cpu_n2_bfloat16", jaxlib)
    self.assertEqual(
      {(f.effective_algorithm, f.algorithm_source, f.selection) for f in fates},
      {("F32_F32_F32", "rule", None)},
    )

  def test_unmatched_site_is_gone(self):
    rec = recorded.load("seed_cpu_n2_float32")
    module = parse_hlo_module(
      "HloModule m\n\nENTRY %main (p: f32[2]) -> f32[2] {\n"
      "  ROOT %p = f32[2]{0} parameter(0)\n}\n"
    )
    sites = parse_stablehlo_dots(rec.stablehlo)
    fates = dot_sites.map_dot_sites(sites, module)
    self.assertEqual({f.fate for f in fates}, {Fate.GONE})


class TritonKindTest(absltest.TestCase):
  """Which Triton fusion kinds hold a gemm (XLA: gpu/ir_emission_utils.h)."""

  def _fate(self, kind: str) -> site_fate.SiteFate:
    def plant(text):
      planted = text.replace('"__triton_nested_gemm_fusion"', f'"{kind}"')
      self.assertIn(f'"kind":"{kind}"', planted)
      return planted

    return _fates("seed_a100_n2_bfloat16", "0.12.0.1", edit_hlo=plant)[0]

  def test_gemm_kinds_are_triton_gemms(self):
    # kTritonGemmFusionKind and kTritonNestedGemmFusionKind.
    for kind in ("__triton_gemm", "__triton_nested_gemm_fusion"):
      self.assertEqual(self._fate(kind).fate, Fate.TRITON_GEMM, kind)

  def test_generic_triton_fusion_is_unknown(self):
    # kTritonFusionKind ("__triton") is XLA's generic Triton fusion, not a
    # gemm kind; a dot in it is not guessed to be a Triton gemm.
    fate = self._fate("__triton")
    self.assertEqual(fate.fate, Fate.UNKNOWN)
    self.assertEqual(fate.backend_config_kind, "__triton")


class SeedOnA100Test(parameterized.TestCase):
  """Compiled for an A100 without one, by both releases."""

  @parameterized.named_parameters(*_RELEASES)
  def test_n1_all_sites_multiply_reduce_in_f32(self, jaxlib):
    fates = _fates("seed_a100_n1_bfloat16", jaxlib)
    self.assertEqual([f.fate for f in fates], [Fate.MULTIPLY_REDUCE] * 4)
    self.assertEqual(
      {(f.effective_algorithm, f.algorithm_source) for f in fates},
      {("F32_F32_F32", "ptx")},
    )

  @parameterized.named_parameters(
    (f"{p}_{tag}", p, config, algorithm, r)
    for p, config, algorithm in (
      ("bfloat16", "default,default", "TF32_TF32_F32"),
      ("tensorfloat32", "high,high", "F32_F32_F32"),
      ("float32", "highest,highest", "F32_F32_F32"),
    )
    for tag, r in _RELEASES
  )
  def test_n2_triton_sites(
    self, precision, precision_config, algorithm, jaxlib
  ):
    if precision == "tensorfloat32" and testutil.triton_tf32_under_high(jaxlib):
      algorithm = "TF32_TF32_F32"  # XLA 251becc5: IsTf32Allowed <= HIGH
    fates = _fates(f"seed_a100_n2_{precision}", jaxlib)
    self.assertEqual(
      [f.fate for f in fates], [Fate.TRITON_GEMM] * 3 + [Fate.MULTIPLY_REDUCE]
    )
    for f in fates[:3]:
      self.assertEqual(
        (f.precision_config, f.effective_algorithm, f.algorithm_source),
        (precision_config, algorithm, "ptx"),
        f.algorithm_evidence,
      )
      self.assertEqual(f.selection, effective.HEURISTIC)
    self.assertEqual(fates[3].effective_algorithm, "F32_F32_F32")

  @parameterized.named_parameters(*_RELEASES)
  def test_tf32_evidence_is_the_mma(self, jaxlib):
    f = _fates("seed_a100_n2_bfloat16", jaxlib)[0]
    self.assertRegex(
      f.algorithm_evidence,
      r"^kernel gemm_fusion_dot: cvt\.rna\.tf32\.f32 x\d+, "
      r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32 x\d+$",
    )

  @parameterized.named_parameters(*_RELEASES)
  def test_float32_evidence_is_fma_only(self, jaxlib):
    f = _fates("seed_a100_n2_float32", jaxlib)[0]
    self.assertRegex(
      f.algorithm_evidence,
      r"^kernel gemm_fusion_dot: no mma; only f32 products \(fma\.rn\.f32 x\d+\)$",
    )

  def test_without_the_ptx_the_algorithm_is_not_read(self):
    # The tester's check: the TF32 answer comes from the kernel's PTX.
    rec = dataclasses.replace(recorded.load("seed_a100_n2_bfloat16"), ptx=())
    f = recorded.fates(rec)[0]
    self.assertNotEqual(f.algorithm_source, "ptx")
    self.assertNotEqual(f.effective_algorithm, "TF32_TF32_F32")

  @parameterized.named_parameters(*_RELEASES)
  def test_deduplicated_fusions_share_a_kernel(self, jaxlib):
    fates = _fates("seed_a100_n2_bfloat16", jaxlib)
    self.assertEqual(
      [f.carriers[0] for f in fates[1:3]],
      ["gemm_fusion_dot.1", "gemm_fusion_dot.2"],
    )
    for f in fates[1:3]:
      self.assertTrue(
        f.algorithm_evidence.startswith("kernel gemm_fusion_dot_1:"),
        f.algorithm_evidence,
      )


class T4Test(parameterized.TestCase):
  @parameterized.named_parameters(*_RELEASES)
  def test_t4_n2_cublaslt_bias_without_tf32(self, jaxlib):
    fates = _fates("seed_t4_n2_bfloat16", jaxlib)
    self.assertEqual(
      [f.fate for f in fates], [Fate.CUBLASLT] * 3 + [Fate.MULTIPLY_REDUCE]
    )
    for f in fates[:3]:
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


class SharedOperandsTest(parameterized.TestCase):
  """Which instruction computes which dot site (issue 11, input 1): two
  dots on the same operands, told apart by precision and source line."""

  @parameterized.named_parameters(
    (f"{name}_{tag}", fixture, expected, r)
    for name, fixture, expected in (
      (
        "plain_first",
        "two_dots_a100_n2_default",
        ["TF32_TF32_F32", "F32_F32_F32"],
      ),
      (
        "highest_first",
        "two_dots_swapped_a100_n2_default",
        ["F32_F32_F32", "TF32_TF32_F32"],
      ),
    )
    for tag, r in _RELEASES
  )
  def test_each_site_gets_its_own_gemm(self, fixture, expected, jaxlib):
    fates = _fates(fixture, jaxlib)
    self.assertEqual([f.effective_algorithm for f in fates], expected)
    # Each site's precision config is the one its program line asked for.
    self.assertEqual(
      [f.precision_config for f in fates],
      [
        "default,default" if alg == "TF32_TF32_F32" else "highest,highest"
        for alg in expected
      ],
    )
    self.assertEqual({f.mapping for f in fates}, {"source location"})
    self.assertEqual([f.conflict for f in fates], [None, None])

  @parameterized.named_parameters(*_RELEASES)
  def test_cpu_maps_by_source_too(self, jaxlib):
    fates = _fates("two_dots_cpu_n2_default", jaxlib)
    self.assertEqual(
      [f.precision_config for f in fates],
      ["default,default", "highest,highest"],
    )


class DownstreamOfMergedDotTest(parameterized.TestCase):
  """Dots whose operands are slices of a merged dot (issue: a new user's
  transformer block): x @ wq, x @ wk, x @ wv become one dot over wq, wk,
  wv concatenated (dot-merger), so XLA's attention dots of q, k and v
  depend on all three weights, not on the site's two alone. Carriers read
  by hand from each release's optimized.hlo: the merged
  f32[64,192] gemm fusion, q k^T f32[8,32,32] (K = 16), probabilities @ v
  f32[8,16,32] (K = 32) and @ wo f32[64,64]; TF32 from each kernel's
  `mma ... tf32` (a Triton gemm at DEFAULT, both releases)."""

  _CARRIERS = {
    "0.10.2": ["gemm_fusion_dot.7"] * 3
    + ["gemm_fusion_dot.8", "gemm_fusion_dot.9", "gemm_fusion_dot.5"],
    "0.12.0.1": ["gemm_fusion_dot.9"] * 3
    + ["gemm_fusion_dot.11", "gemm_fusion_dot.12", "gemm_fusion_dot.5"],
  }

  @parameterized.named_parameters(*_RELEASES)
  def test_attention_dots_are_found_not_gone(self, jaxlib):
    fates = _fates("qkv_xla_attention_a100_n2_bfloat16", jaxlib)
    self.assertEqual([f.fate for f in fates], [Fate.TRITON_GEMM] * 6)
    self.assertEqual([f.carriers[0] for f in fates], self._CARRIERS[jaxlib])
    self.assertEqual({f.effective_algorithm for f in fates}, {"TF32_TF32_F32"})


class DataParallelTrainStepTest(parameterized.TestCase):
  """A train step over a mesh of 2 devices along the batch (issue: a new
  user's sharded grad + SGD step): each device's dot holds half of a
  site's outputs or, for the weight gradients, half of its K (the
  batch). Carriers read by hand from each optimized.hlo: the dot whose
  shape is the site's per-device share and whose operands are the site's
  (site 2, dres^T @ h, K = 8: `f32[4,64] dot(...)` contracting dims {0}
  of 4 rows), never a multiply of the backward pass."""

  _CARRIERS = {
    "cpu": ["dot.7", "dot.6", "dot.4", "dot.5", "dot.3"],
    "a100": ["dot.12", "dot.8", "dot.11", "dot.13", "dot.14"],
  }

  @parameterized.product(target=("cpu", "a100"), jaxlib=recorded.RELEASES)
  def test_per_device_dots_are_the_sites(self, target, jaxlib):
    fates = _fates(f"sgd_step_{target}_n8_float32", jaxlib)
    self.assertEqual([f.carriers[-1] for f in fates], self._CARRIERS[target])
    want = Fate.DOT if target == "cpu" else Fate.TRITON_GEMM
    self.assertEqual({f.fate for f in fates}, {want})


def _strip_metadata(text: str) -> str:
  return re.sub(r", metadata=\{[^}]*\}", "", text)


class AmbiguityAndConflictTest(parameterized.TestCase):
  """The two-dots A100 compile edited as XLA could have printed it."""

  @parameterized.named_parameters(*_RELEASES)
  def test_without_metadata_precision_decides(self, jaxlib):
    fates = _fates("two_dots_a100_n2_default", jaxlib, edit_hlo=_strip_metadata)
    self.assertEqual(
      [f.precision_config for f in fates],
      ["default,default", "highest,highest"],
    )
    self.assertEqual({f.mapping for f in fates}, {"data flow"})

  @parameterized.named_parameters(*_RELEASES)
  def test_contradicting_precision_is_reported(self, jaxlib):
    # The dots' operand_precision moved: site 0's carrier (by source) now
    # says highest, site 1's default.
    def plant(text):
      text = text.replace(", operand_precision={highest,highest}", "")
      # Fusion parameters are %parameter_N in 0.10.2, %param_N in 0.12.
      return re.sub(
        r"(%\S+ = f32\[2,2\]\{1,0\} dot\(%param(?:eter)?_0, "
        r"%param(?:eter)?_1\)[^\n]*?"
        r"rhs_contracting_dims=\{0\})",
        r"\1, operand_precision={highest,highest}",
        text,
      )

    fates = _fates("two_dots_a100_n2_default", jaxlib, edit_hlo=plant)
    self.assertEqual([f.mapping for f in fates], ["source location"] * 2)
    self.assertEqual(fates[0].conflict.stablehlo, ("DEFAULT", "DEFAULT"))
    self.assertEqual(fates[1].conflict.stablehlo, ("HIGHEST", "HIGHEST"))
    self.assertEqual(
      conflict_words(fates[0].conflict),
      "optimized precision config highest,highest contradicts StableHLO "
      "DEFAULT,DEFAULT",
    )

  @parameterized.named_parameters(*_RELEASES)
  def test_differing_carriers_without_any_key_are_ambiguous(self, jaxlib):
    # Both sites DEFAULT, no metadata: one carrier a Triton gemm, the other
    # a dot in a loop fusion. Nothing says which is which.
    def plant(text):
      text = _strip_metadata(text).replace(
        ", operand_precision={highest,highest}", ""
      )
      return text.replace('"__triton_nested_gemm_fusion"', '"__other"', 1)

    fates = _fates(
      "two_dots_a100_n2_default",
      jaxlib,
      edit_hlo=plant,
      edit_stablehlo=lambda text: text.replace("HIGHEST", "DEFAULT"),
    )
    self.assertEqual([f.fate for f in fates], [Fate.AMBIGUOUS] * 2)
    self.assertLen(fates[0].candidates, 2)


class ControlFlowFatesTest(parameterized.TestCase):
  """Sites in loops, branches and after them (a review found them 'gone');
  `program_cases.CONTROL_FLOW` on an A100 under bfloat16."""

  @parameterized.named_parameters(
    (f"{kind}_{tag}", kind, r)
    for kind in ("scan", "fori", "after_cond")
    for tag, r in _RELEASES
  )
  def test_a100_gemm_found(self, kind, jaxlib):
    (fate,) = _fates(f"control_flow_{kind}_a100_n8_bfloat16", jaxlib)
    self.assertEqual(fate.fate, Fate.TRITON_GEMM)
    # `kind=kCustom` with `"fusion_backend_config":{"kind":
    # "__triton_nested_gemm_fusion"}`.
    self.assertEqual(
      (fate.fusion_kind, fate.backend_config_kind, fate.custom_call_target),
      ("kCustom", "__triton_nested_gemm_fusion", None),
    )
    self.assertEqual(fate.effective_algorithm, "TF32_TF32_F32")

  @parameterized.named_parameters(*_RELEASES)
  def test_cond_branches_are_two_sites(self, jaxlib):
    fates = _fates("control_flow_cond_branches_a100_n8_bfloat16", jaxlib)
    self.assertEqual([f.fate for f in fates], [Fate.TRITON_GEMM] * 2)
    self.assertNotEqual(fates[0].carriers, fates[1].carriers)

  @parameterized.named_parameters(*_RELEASES)
  def test_same_ancestry_told_apart_by_shape(self, jaxlib):
    # W @ x[0] (a matrix-vector product, strength-reduced) and x @ W (a
    # gemm) read the same parameters; shapes and K tell which is which.
    fates = _fates("control_flow_same_ancestry_a100_n8_bfloat16", jaxlib)
    self.assertEqual(
      [f.fate for f in fates], [Fate.MULTIPLY_REDUCE, Fate.TRITON_GEMM]
    )
    self.assertEqual(
      [f.effective_algorithm for f in fates], ["F32_F32_F32", "TF32_TF32_F32"]
    )


class EpilogueTest(parameterized.TestCase):
  @parameterized.named_parameters(*_RELEASES)
  def test_multiply_fused_into_a_gemm_is_f32(self, jaxlib):
    # jax_15362 at n = 2 on a100: site 2 (1x512 @ 512) is a multiply+reduce
    # fused into site 1's Triton gemm; the mma is site 1's.
    fates = _fates("jax_15362_a100_n2_bfloat16", jaxlib)
    self.assertEqual(fates[1].effective_algorithm, "TF32_TF32_F32")
    self.assertEqual(fates[2].fate, Fate.MULTIPLY_REDUCE)
    self.assertEqual(fates[2].effective_algorithm, "F32_F32_F32")
    self.assertIn("fused into gemm kernel", fates[2].algorithm_evidence)


def _gemm_fusion_shapes(optimized_hlo: str) -> list[tuple[int, ...]]:
  """Output dims of each Triton gemm fusion, read from the text with a regex."""
  found = re.findall(
    r"%gemm_fusion\S* = f32\[([\d,]+)\]\S* fusion\(.*__triton", optimized_hlo
  )
  return [tuple(int(d) for d in dims.split(",")) for dims in found]


class SplitKTest(parameterized.TestCase):
  """Split-K of gemms whose free dimensions XLA flattened (issue 11, 2).

  Expected factors: the issue's reading of the optimized HLO (f32[4,512,64]
  on an A100, f32[8,512,64] on an H100, then a reduce), checked here
  against the gemm fusion's own shape by a regex, and unchanged by
  reshaping the free dimensions (the flattened program is the same gemm).
  """

  @parameterized.named_parameters(
    (f"{name}_{tag}", name, split, r)
    for name, split in (
      ("a100_two_free_dims", 4),
      ("h100_two_free_dims", 8),
      ("a100_flat", 4),
      ("h100_three_free_dims", 8),
    )
    for tag, r in _RELEASES
  )
  def test_split_k(self, name, split, jaxlib):
    rec = recorded.load(f"free_dims_{name}", jaxlib)
    (fate,) = recorded.fates(rec)
    self.assertEqual(fate.fate, Fate.TRITON_GEMM)
    self.assertEqual(_gemm_fusion_shapes(rec.optimized_hlo), [(split, 512, 64)])
    self.assertEqual(fate.split_k, split)

  @parameterized.named_parameters(*_RELEASES)
  def test_einsum_split_on_h100_at_n1(self, jaxlib):
    # jax_22557 at n = 1 on an H100: f32[4,300,300] partial sums (K = 300).
    rec = recorded.load("jax_22557_h100_n1_default", jaxlib)
    self.assertEqual(_gemm_fusion_shapes(rec.optimized_hlo), [(4, 300, 300)])
    self.assertEqual(recorded.fates(rec)[0].split_k, 4)

  @parameterized.named_parameters(*_RELEASES)
  def test_h100_512_cube_is_split_k(self, jaxlib):
    (f,) = _fates("matmul_512_h100_n512_float32", jaxlib)
    self.assertEqual(
      (f.fate, f.split_k, f.effective_algorithm),
      (Fate.TRITON_GEMM, 4, "F32_F32_F32"),
    )

  @parameterized.named_parameters(*_RELEASES)
  def test_a100_512_cube_is_not_split(self, jaxlib):
    (f,) = _fates("matmul_512_a100_n512_float32", jaxlib)
    self.assertEqual((f.fate, f.split_k), (Fate.TRITON_GEMM, None))


if __name__ == "__main__":
  absltest.main()
