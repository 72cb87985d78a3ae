"""The fp8 cuBLASLt rewrite named at the fp8 site (issue 24, item 4), no XLA.

Reads the recorded compiles of the built-in case `fp8_scaled_matmul`
(tests/testdata/compiles/fp8_scaled_matmul_*, jaxlib 0.10.2 and 0.12.0.1,
compile-only targets) through the stages a sweep's worker runs
(`recorded.fates`). The independent source is the optimized HLO itself:
whether it holds a `__cublas$lt$matmul$f8` call (and which parameters are
its scale operands), read here with a regular expression, and XLA's rule
(gemm_rewriter.cc `CreateF8CustomCall`: compute capability >= 8.9; one
operand f8e4m3fn; gpu_compiler.cc: the Triton gemm fusion before
GemmRewriter). Planted edits (another compute capability, f8e5m2 operands)
are the should-fail halves.
"""

from __future__ import annotations

import re

import recorded
from absl.testing import absltest, parameterized

from hloprobe.compile import targets
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.numerics import site_notes
from hloprobe.numerics.candidates import chosen_algorithms
from hloprobe.numerics.verdicts import Verdict, VerdictKind
from hloprobe.report.site_words import (
  fp8_rewrite_words,
  site_json,
  site_note_words,
)
from hloprobe.report.verdict_words import verdict_words
from hloprobe.sites import dot_sites, fp8_operands, fp8_rewrite, site_fate
from hloprobe.sites.site_fate import Fate

_RELEASES = tuple((r.replace(".", "_"), r) for r in recorded.RELEASES)
_FP8_CALL = re.compile(
  r"custom-call\(%(\S+), %(\S+), %(\S+), %(\S+)\), "
  r'custom_call_target="__cublas\$lt\$matmul\$f8"'
)
_PARAMETER = re.compile(r"%(\S+) = f32\[\] parameter\((\d)\)")


def _words(f: site_fate.SiteFate) -> str:
  """The site's fp8 rewrite in report's words."""
  return fp8_rewrite_words(f.fp8_rewrite)


def _only(name: str, jaxlib: str, **edits) -> site_fate.SiteFate:
  (f,) = recorded.fates(recorded.load(name, jaxlib), **edits)
  return f


class NotFiredTest(parameterized.TestCase):
  """Where the optimized HLO has no FP8 call, the note says why."""

  @parameterized.named_parameters(*_RELEASES)
  def test_h100_default_triton_took_the_dot(self, jaxlib):
    name = "fp8_scaled_matmul_h100_n8_default"
    self.assertNotIn(
      "__cublas$lt$matmul$f8", recorded.load(name, jaxlib).optimized_hlo
    )
    f = _only(name, jaxlib)
    self.assertEqual(f.fate, Fate.TRITON_GEMM)
    gate = fp8_rewrite.Fp8Gate
    self.assertEqual(
      (f.fp8_rewrite.fired, f.fp8_rewrite.gates, f.fp8_rewrite.compile_only),
      (False, (gate.TRITON_GEMM,), True),
    )
    words = _words(f)
    self.assertTrue(
      words.startswith("did not fire: the Triton gemm took the dot first"),
      words,
    )
    self.assertIn("--xla_gpu_enable_triton_gemm=false", words)
    self.assertIn("compile-only", words)

  @parameterized.named_parameters(*_RELEASES)
  def test_a100_names_its_compute_capability(self, jaxlib):
    name = "fp8_scaled_matmul_a100_n8_default"
    self.assertNotIn(
      "__cublas$lt$matmul$f8", recorded.load(name, jaxlib).optimized_hlo
    )
    f = _only(name, jaxlib)
    self.assertEqual(f.fp8_rewrite.gates, (fp8_rewrite.Fp8Gate.OLD_GPU,))
    self.assertEqual(f.fp8_rewrite.compute_capability, "8.0")
    note = _words(f)
    self.assertTrue(note.startswith("did not fire: "), note)
    self.assertIn("compute capability 8.0 < 8.9", note)
    # The decisive condition only: the Triton gemm is not the reason.
    self.assertNotIn("Triton", note)

  @parameterized.named_parameters(*_RELEASES)
  def test_n1_strength_reduced(self, jaxlib):
    f = _only("fp8_scaled_matmul_h100_n1_default", jaxlib)
    self.assertEqual(f.fate, Fate.MULTIPLY_REDUCE)
    self.assertEqual(
      f.fp8_rewrite.gates, (fp8_rewrite.Fp8Gate.STRENGTH_REDUCED,)
    )
    self.assertIn("dot strength reduction", _words(f))

  @parameterized.named_parameters(*_RELEASES)
  def test_planted_f8e5m2_operands_name_the_type_rule(self, jaxlib):
    e5m2 = lambda text: text.replace("f8e4m3fn", "f8e5m2").replace(
      "f8E4M3FN", "f8E5M2"
    )
    f = _only(
      "fp8_scaled_matmul_h100_n8_default",
      jaxlib,
      edit_hlo=e5m2,
      edit_stablehlo=e5m2,
    )
    self.assertIn(fp8_rewrite.Fp8Gate.BOTH_E5M2, f.fp8_rewrite.gates)
    self.assertIn("both operands f8e5m2", _words(f))


class Fp8SiteTest(parameterized.TestCase):
  """Which sites are fp8: GemmRewriter's walk from the dot's operands."""

  @parameterized.named_parameters(*_RELEASES)
  def test_operands_from_f8_through_the_kernels(self, jaxlib):
    for name in (
      "fp8_scaled_matmul_h100_n8_default",  # converts inside the gemm
      "fp8_scaled_matmul_a100_n8_default",  # converts in their own fusions
      "fp8_scaled_matmul_h100_n1_default",  # a multiply+reduce
      "fp8_scaled_matmul_h100_n8_default_no_triton_gemm",  # the FP8 call
    ):
      rec = recorded.load(name, jaxlib)
      module = parse_hlo_module(rec.optimized_hlo)
      (mapped,) = dot_sites.map_dot_sites(
        parse_stablehlo_dots(rec.stablehlo), module
      )
      self.assertEqual(
        fp8_operands.f8_operand_types(mapped, module),
        ("f8e4m3fn", "f8e4m3fn"),
        name,
      )

  @parameterized.named_parameters(*_RELEASES)
  def test_planted_maximum_breaks_the_path(self, jaxlib):
    """Should fail: a max(x, 0) between the convert and the dot is no
    dequantization (FindF8SubgraphRecursive stops at it): no note."""

    def relu(text):
      edited = re.sub(
        r"(%mul\.\d = f32\[8,64\]\{1,0\} )multiply\(",
        r"\1maximum(",
        text,
      )
      self.assertNotEqual(edited, text)
      return edited

    f = _only("fp8_scaled_matmul_h100_n8_default", jaxlib, edit_hlo=relu)
    self.assertEqual(f.fate, Fate.TRITON_GEMM)
    self.assertIsNone(f.fp8_rewrite)


class FiredTest(parameterized.TestCase):
  """--xla_gpu_enable_triton_gemm=false: the FP8 call, with its scales."""

  @parameterized.named_parameters(*_RELEASES)
  def test_names_the_call_and_its_scales(self, jaxlib):
    rec = recorded.load(
      "fp8_scaled_matmul_h100_n8_default_no_triton_gemm", jaxlib
    )
    self.assertEqual(
      rec.config["xla_options"], {"xla_gpu_enable_triton_gemm": False}
    )
    (call,) = _FP8_CALL.findall(rec.optimized_hlo)
    params = dict(_PARAMETER.findall(rec.optimized_hlo))
    # The case's arguments: x, w, x_scale (2), w_scale (3).
    self.assertEqual((params[call[2]], params[call[3]]), ("2", "3"))
    f = _only(rec.name, jaxlib)
    self.assertEqual(f.fate, Fate.CUBLASLT)
    self.assertEqual(f.custom_call_target, "__cublas$lt$matmul$f8")
    self.assertTrue(f.fp8_rewrite.fired)
    self.assertEqual(
      f.fp8_rewrite.scales[:2], (("a", "x_scale"), ("b", "w_scale"))
    )
    self.assertTrue(
      _words(f).startswith(
        "fired (`__cublas$lt$matmul$f8`, scales a=x_scale, b=w_scale"
      ),
      _words(f),
    )
    # XLA pads the non-batch dims to multiples of 16 (8 rows -> 16) and
    # makes B column-major (PadShapeToMultipleOf16, TransposeMatrix).
    self.assertEqual(
      f.fp8_rewrite.operands,
      (("A", "f8e4m3fn", (16, 64)), ("B", "f8e4m3fn", (32, 64))),
    )
    self.assertIn("A f8e4m3fn[16,64], B f8e4m3fn[32,64]", _words(f))
    # The call's precision_config is DEFAULT,DEFAULT with ALG_UNSET, so
    # cuBLASLt's fast accumulation is on (cuda_blas_lt.cc
    # IsFastAccumEnabled: ALG_UNSET, an f8 operand, compute_precision 0).
    self.assertIn(
      '"precision_config":{"operand_precision":["DEFAULT","DEFAULT"],'
      '"algorithm":"ALG_UNSET"}',
      rec.optimized_hlo,
    )
    self.assertEqual(f.effective_algorithm, "ANY_F8_ANY_F8_F32_FAST_ACCUM")
    self.assertEqual(site_json(f)["fp8_rewrite"], _words(f))

  @parameterized.named_parameters(*_RELEASES)
  def test_scales_are_part_of_the_data_flow(self, jaxlib):
    """Without the scale operands' ancestry, the call is not the site's."""
    rec = recorded.load(
      "fp8_scaled_matmul_h100_n8_default_no_triton_gemm", jaxlib
    )
    module = parse_hlo_module(rec.optimized_hlo)
    sites = parse_stablehlo_dots(rec.stablehlo)
    self.assertEqual(
      (sites[0].lhs_ancestry, sites[0].rhs_ancestry), ({0, 2}, {1, 3})
    )
    (mapped,) = dot_sites.map_dot_sites(sites, module)
    self.assertEqual(mapped.fate, Fate.CUBLASLT)
    self.assertEqual(
      fp8_rewrite.fp8_carrier_ancestry(
        "__cublas$lt$matmul", ({0}, {1}, frozenset(), frozenset()), ()
      ),
      ({0}, {1}),
    )

  @parameterized.named_parameters(
    # (jaxlib, operand_precision printed, algorithm printed, expected):
    # cuda_blas_lt.cc IsFastAccumEnabled (openxla/xla cbfd6e86).
    *(
      (f"{r.replace('.', '_')}_{n}", r, p, a, e)
      for r in recorded.RELEASES
      for n, p, a, e in (
        ("highest", "HIGHEST", "ALG_UNSET", "ANY_F8_ANY_F8_F32"),
        ("high", "HIGH", "ALG_UNSET", "ANY_F8_ANY_F8_F32"),
        (
          "fast_preset",
          "HIGHEST",
          "ALG_DOT_ANY_F8_ANY_F8_F32_FAST_ACCUM",
          "ANY_F8_ANY_F8_F32_FAST_ACCUM",
        ),
        (
          "f8_preset",
          "DEFAULT",
          "ALG_DOT_ANY_F8_ANY_F8_F32",
          "ANY_F8_ANY_F8_F32",
        ),
      )
    )
  )
  def test_fast_accumulation_rule(self, jaxlib, precision, algorithm, expected):
    def edit(text):
      old = (
        '"precision_config":{"operand_precision":["DEFAULT","DEFAULT"],'
        '"algorithm":"ALG_UNSET"}'
      )
      self.assertIn(old, text)
      return text.replace(
        old,
        f'"precision_config":{{"operand_precision":["{precision}",'
        f'"{precision}"],"algorithm":"{algorithm}"}}',
      )

    f = _only(
      "fp8_scaled_matmul_h100_n8_default_no_triton_gemm",
      jaxlib,
      edit_hlo=edit,
    )
    self.assertEqual(f.custom_call_target, "__cublas$lt$matmul$f8")
    self.assertEqual(f.effective_algorithm, expected)

  @parameterized.named_parameters(*_RELEASES)
  def test_verdict_says_fast_accumulation_is_not_modelled(self, jaxlib):
    f = _only("fp8_scaled_matmul_h100_n8_default_no_triton_gemm", jaxlib)
    chosen, note = chosen_algorithms((f,))
    self.assertEqual(chosen, ("F32_F32_F32",))
    self.assertEqual(note.sites, ((0, "ANY_F8_ANY_F8_F32_FAST_ACCUM"),))
    self.assertIn(
      "not modelled: cuBLASLt FP8 fast accumulation", site_note_words(note)
    )
    words = verdict_words(
      site_notes.annotate(
        Verdict(VerdictKind.WITHIN_NOISE), (f,), chosen, "float32"
      )
    )
    self.assertIn(
      "site 0 ANY_F8_ANY_F8_F32_FAST_ACCUM: not modelled: cuBLASLt FP8 "
      "fast accumulation",
      words,
    )
    self.assertIn(f"site 0: fp8 cuBLASLt rewrite {_words(f)}", words)


class RuleTest(parameterized.TestCase):
  """The rule on a mapped site, at planted compute capabilities."""

  @parameterized.named_parameters(
    ("ampere_8_6", "8.6", "compute capability 8.6 < 8.9"),
    ("ada_8_9", "8.9", "the Triton gemm took the dot first"),
    ("hopper_9_0", "9.0", "the Triton gemm took the dot first"),
    ("unknown", None, "unknown: the target's compute capability"),
  )
  def test_compute_capability(self, cc, expected):
    rec = recorded.load("fp8_scaled_matmul_h100_n8_default")
    module = parse_hlo_module(rec.optimized_hlo)
    (mapped,) = dot_sites.map_dot_sites(
      parse_stablehlo_dots(rec.stablehlo), module
    )
    note = fp8_rewrite_words(
      fp8_rewrite.rewrite_note(mapped, module, targets.get_target("h100"), cc)
    )
    self.assertIn(expected, note)

  def test_no_note_off_fp8_or_on_the_cpu(self):
    (f, *_) = recorded.fates(recorded.load("seed_a100_n2_bfloat16"))
    self.assertIsNone(f.fp8_rewrite)
    rec = recorded.load("fp8_scaled_matmul_h100_n8_default")
    module = parse_hlo_module(rec.optimized_hlo)
    (mapped,) = dot_sites.map_dot_sites(
      parse_stablehlo_dots(rec.stablehlo), module
    )
    cpu = targets.get_target("cpu")
    self.assertIsNone(fp8_rewrite.rewrite_note(mapped, module, cpu, None))


if __name__ == "__main__":
  absltest.main()
