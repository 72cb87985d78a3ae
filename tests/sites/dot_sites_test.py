"""What the seed's dot sites become on the CPU (real XLA compiles)."""

from __future__ import annotations

import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import program_cases
import pytest
from absl.testing import absltest, parameterized

from hloprobe import sweep
from hloprobe.compile import cases, lowering, targets
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.sites import dot_sites, effective
from hloprobe.sites.dot_sites import Fate


def _fates(n: int, precision: str = "float32", target: str = "cpu"):
  case = cases.get_case("seed_mlp")
  args = case.inputs_for(case.make_inputs(), n)
  compiled = lowering.compile_case(
    case, args, precision, targets.get_target(target)
  )
  sites = parse_stablehlo_dots(compiled.stablehlo)
  return dot_sites.map_dot_sites(
    sites, parse_hlo_module(compiled.optimized_hlo)
  )


@pytest.mark.compiles
class CpuSeedFatesTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("bfloat16", "bfloat16"),
    ("tensorfloat32", "tensorfloat32"),
    ("float32", "float32"),
  )
  def test_batch_1_last_site_is_strength_reduced(self, precision):
    fates = _fates(1, precision)
    self.assertEqual(
      [f.fate for f in fates], [Fate.DOT] * 3 + [Fate.MULTIPLY_REDUCE]
    )
    self.assertEqual(
      dot_sites.fate_summary(fates), "dot x3, multiply+reduce x1"
    )

  def test_batch_2_last_site_stays_a_dot(self):
    fates = _fates(2)
    self.assertEqual([f.fate for f in fates], [Fate.DOT] * 4)
    # Each site has its own carrier, and the precision config survives.
    self.assertLen({f.carriers for f in fates}, 4)
    self.assertEqual({f.precision_config for f in fates}, {"highest,highest"})

  def test_carriers_name_real_instructions(self):
    fates = _fates(2, "tensorfloat32")
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


class FixtureFatesTest(absltest.TestCase):
  def test_unmatched_site_is_gone(self):
    module = parse_hlo_module(
      "HloModule m\n\nENTRY %main (p: f32[2]) -> f32[2] {\n"
      "  ROOT %p = f32[2]{0} parameter(0)\n}\n"
    )
    case = cases.get_case("seed_mlp")
    args = case.inputs_for(case.make_inputs(), 2)
    compiled = lowering.compile_case(
      case, args, "float32", targets.get_target("cpu")
    )
    sites = parse_stablehlo_dots(compiled.stablehlo)
    fates = dot_sites.map_dot_sites(sites, module)
    self.assertEqual({f.fate for f in fates}, {Fate.GONE})


_MERGER = os.path.join(os.path.dirname(__file__), "testdata", "dot_merger")


def _fixture(stem: str, edit=lambda hlo: hlo):
  """(sites, optimized module) of a recorded compile
  (testdata/dot_merger/record.py)."""
  path = os.path.join(_MERGER, stem)
  with open(f"{path}.stablehlo.mlir") as f:
    sites = parse_stablehlo_dots(f.read())
  with open(f"{path}.hlo") as f:
    return sites, parse_hlo_module(edit(f.read()))


def _fixture_fates(stem: str, edit=lambda hlo: hlo):
  """The mapped sites of a recorded compile (`_fixture`)."""
  return dot_sites.map_dot_sites(*_fixture(stem, edit))


def _resolved(stem: str, edit=lambda hlo: hlo):
  """The resolved sites of a recorded A100 compile (`_fixture`)."""
  sites, module = _fixture(stem, edit)
  fates = dot_sites.map_dot_sites(sites, module)
  return effective.resolve(fates, module, [], targets.get_target("a100"))


class DotMergerFixtureTest(parameterized.TestCase):
  """Sites XLA's dot-merger made one dot of (issue 21): never "gone".

  Expected values read by hand from the recorded optimized HLO (A100,
  n = 2, bfloat16): the same-side pair is one `dot(concatenate(w1, w2), x)`
  in fusion `gemm_fusion_dot` (`__triton_nested_gemm_fusion`) on both
  releases, whose metadata is site 0's (program_cases.py:70:10); the
  cross-side pair is one dot over `concatenate(w1^T, w2)` in
  `gemm_fusion_dot.1` on jaxlib 0.12.0.1, two gemm fusions on 0.10.2.
  """

  @parameterized.named_parameters(
    ("same_side_0_12", "t_merged-jaxlib0.12.0.1", ("gemm_fusion_dot", "dot.2")),
    ("same_side_0_10", "t_merged-jaxlib0.10.2", ("gemm_fusion_dot", "dot.2")),
    (
      "cross_side_0_12",
      "t_merged_cross-jaxlib0.12.0.1",
      ("gemm_fusion_dot.1", "dot.3"),
    ),
  )
  def test_merged_sites_share_one_gemm(self, stem, carriers):
    fates = _fixture_fates(stem)
    self.assertEqual([f.fate for f in fates], [Fate.TRITON_GEMM] * 2)
    self.assertEqual([f.carriers for f in fates], [carriers] * 2)
    self.assertEqual([f.merged_with for f in fates], [(1,), (0,)])
    self.assertEqual(
      [f.mapping for f in fates], ["source location", "data flow"]
    )
    self.assertEqual(
      [f.backend_config_kind for f in fates],
      ["__triton_nested_gemm_fusion"] * 2,
    )
    self.assertEqual(
      dot_sites.merge_words(fates[1]), "merged by dot-merger with site 0"
    )
    record = dot_sites.site_record(_resolved(stem)[0])
    self.assertEqual(record["merged_with"], [1])

  def test_cross_side_not_merged_on_0_10(self):
    fates = _fixture_fates("t_merged_cross-jaxlib0.10.2")
    self.assertEqual([f.fate for f in fates], [Fate.TRITON_GEMM] * 2)
    self.assertEqual(
      [f.carriers for f in fates],
      [("gemm_fusion_dot_general.2", "dot.3"), ("gemm_fusion_dot", "dot.4")],
    )
    self.assertEqual([f.merged_with for f in fates], [None, None])

  def test_unsplittable_merge_is_unknown_not_gone(self):
    # Planted: a third part in the concatenate, so no part's share of it is
    # a site's share of the dot's outputs (2 x 128 for parts of 256 x 64).
    plant = lambda hlo: hlo.replace(
      "f32[256,128]{1,0} concatenate(%param_1.1, %param_2)",
      "f32[256,192]{1,0} concatenate(%param_1.1, %param_2, %param_2)",
    )
    fates = _fixture_fates("t_merged-jaxlib0.12.0.1", plant)
    self.assertNotIn(Fate.GONE, [f.fate for f in fates])
    self.assertEqual([f.fate for f in fates], [Fate.UNKNOWN] * 2)
    self.assertEqual(fates[0].candidates, (("gemm_fusion_dot", "dot.2"),))
    self.assertIn("none of whose parts fits", fates[0].unknown_reason)
    # `effective.resolve` gives the mapping's reason as the evidence.
    resolved = _resolved("t_merged-jaxlib0.12.0.1", plant)
    self.assertEqual(resolved[0].algorithm_evidence, fates[0].unknown_reason)

  def test_without_the_concatenate_the_sites_are_gone(self):
    # The tester's check: with the concatenate's parts hidden (a plain
    # parameter), nothing reads the sites' operands and they are gone.
    plant = lambda hlo: hlo.replace(
      "concatenate(%param_1.1, %param_2), dimensions={1}",
      "add(%param_1.1, %param_2)",
    ).replace("f32[256,128]{1,0} add", "f32[256,64]{1,0} add")
    fates = _fixture_fates("t_merged-jaxlib0.12.0.1", plant)
    self.assertEqual([f.fate for f in fates], [Fate.GONE] * 2)


def _probe(fn, args, target: str, precision: str = "bfloat16"):
  """Fates of an ad-hoc function (real compile)."""
  case = cases.Case("probe", "probe", fn, lambda: args)
  r = sweep.run_config(
    case,
    args,
    None,
    targets.get_target(target),
    precision,
    case.full_size(args),
  )
  assert r.ok, r.failure
  return r.compilation.fates


_RNG = np.random.default_rng(0)
_X = _RNG.standard_normal((8, 64)).astype(np.float32)
_W = _RNG.standard_normal((64, 64)).astype(np.float32)


@pytest.mark.compiles
class ControlFlowFatesTest(parameterized.TestCase):
  """Sites in loops, branches and after them (a review found them 'gone')."""

  @parameterized.named_parameters(
    (
      "scan",
      lambda x, w: jax.lax.scan(
        lambda h, _: (jnp.tanh(h @ w), None), x, None, length=3
      )[0],
    ),
    (
      "fori",
      lambda x, w: jax.lax.fori_loop(0, 3, lambda i, h: jnp.tanh(h @ w), x),
    ),
    (
      "after_cond",
      lambda x, w: jax.lax.cond(x[0, 0] > 0, lambda a: a * 2, jnp.sin, x) @ w,
    ),
  )
  def test_a100_gemm_found(self, fn):
    (fate,) = _probe(fn, (_X, _W), "a100")
    self.assertEqual(fate.fate, Fate.TRITON_GEMM)
    # `kind=kCustom` with `"fusion_backend_config":{"kind":
    # "__triton_nested_gemm_fusion"}` on jaxlib 0.10.2.
    self.assertEqual(
      (fate.fusion_kind, fate.backend_config_kind, fate.custom_call_target),
      ("kCustom", "__triton_nested_gemm_fusion", None),
    )
    self.assertEqual(fate.effective_algorithm, "TF32_TF32_F32")

  def test_cond_branches_are_two_sites(self):
    fn = lambda x, w: jax.lax.cond(
      x[0, 0] > 0, lambda a: a @ w, lambda a: jnp.tanh(a @ w), x
    )
    fates = _probe(fn, (_X, _W), "a100")
    self.assertEqual([f.fate for f in fates], [Fate.TRITON_GEMM] * 2)
    self.assertNotEqual(fates[0].carriers, fates[1].carriers)

  def test_same_ancestry_told_apart_by_shape(self):
    # W @ x[0] (a matrix-vector product, strength-reduced) and x @ W (a gemm)
    # read the same parameters; shapes and K tell which is which.
    fates = _probe(
      lambda x, w: (w @ x[0]).sum() + (x @ w).sum(), (_X, _W), "a100"
    )
    self.assertEqual(
      [f.fate for f in fates], [Fate.MULTIPLY_REDUCE, Fate.TRITON_GEMM]
    )
    self.assertEqual(
      [f.effective_algorithm for f in fates], ["F32_F32_F32", "TF32_TF32_F32"]
    )


@pytest.mark.compiles
class TritonKindTest(absltest.TestCase):
  """Which Triton fusion kinds hold a gemm (XLA: gpu/ir_emission_utils.h)."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    case = cases.Case("probe", "probe", lambda x, w: x @ w, lambda: (_X, _W))
    cls.r = sweep.run_config(
      case, (_X, _W), None, targets.get_target("a100"), "default", 8
    )
    assert cls.r.ok, cls.r.failure
    cls.sites = parse_stablehlo_dots(cls.r.compilation.stablehlo)

  def _fate(self, kind: str) -> dot_sites.MappedSite:
    text = self.r.compilation.optimized_hlo.replace(
      '"__triton_nested_gemm_fusion"', f'"{kind}"'
    )
    self.assertIn(f'"kind":"{kind}"', text)
    (fate,) = dot_sites.map_dot_sites(self.sites, parse_hlo_module(text))
    return fate

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


@pytest.mark.compiles
class EpilogueTest(absltest.TestCase):
  def test_multiply_fused_into_a_gemm_is_f32(self):
    # jax_15362 at n = 2 on a100: site 2 (1x512 @ 512) is a multiply+reduce
    # fused into site 1's Triton gemm; the mma is site 1's.
    case = cases.get_case("jax_15362")
    r = sweep.run_config(
      case, case.make_inputs(), None, targets.get_target("a100"), "bfloat16", 2
    )
    self.assertEqual(
      r.compilation.fates[1].effective_algorithm, "TF32_TF32_F32"
    )
    self.assertEqual(r.compilation.fates[2].fate, Fate.MULTIPLY_REDUCE)
    self.assertEqual(r.compilation.fates[2].effective_algorithm, "F32_F32_F32")
    self.assertIn(
      "fused into gemm kernel", r.compilation.fates[2].algorithm_evidence
    )


def _gemm_fusion_shapes(optimized_hlo: str) -> list[tuple[int, ...]]:
  """Output dims of each Triton gemm fusion, read from the text with a regex."""
  found = re.findall(
    r"%gemm_fusion\S* = f32\[([\d,]+)\]\S* fusion\(.*__triton", optimized_hlo
  )
  return [tuple(int(d) for d in dims.split(",")) for dims in found]


class FlattenedFreeDimsTest(parameterized.TestCase):
  """Split-K of gemms whose free dimensions XLA flattened (issue 11, 2).

  Expected factors: the issue's reading of the optimized HLO (f32[4,512,64]
  on an A100, f32[8,512,64] on an H100, then a reduce), checked here
  against the gemm fusion's own shape by a regex, and unchanged by
  reshaping the free dimensions (the flattened program is the same gemm).
  """

  @parameterized.named_parameters(
    ("a100_two_free_dims", "a100", (16, 32, 1000), (1000, 64), 4),
    ("h100_two_free_dims", "h100", (16, 32, 1000), (1000, 64), 8),
    ("a100_flat", "a100", (512, 1000), (1000, 64), 4),
    ("h100_three_free_dims", "h100", (4, 4, 32, 1000), (1000, 64), 8),
  )
  def test_split_k(self, target, lhs, rhs, split):
    case = program_cases.free_dims_matmul(lhs, rhs, "t_free_dims")
    args = case.make_inputs()
    r = sweep.run_config(
      case, args, None, targets.get_target(target), "default", lhs[0]
    )
    self.assertTrue(r.ok, r.failure)
    (fate,) = r.compilation.fates
    self.assertEqual(fate.fate, Fate.TRITON_GEMM)
    self.assertEqual(
      _gemm_fusion_shapes(r.compilation.optimized_hlo), [(split, 512, 64)]
    )
    self.assertEqual(fate.split_k, split)

  def test_einsum_split_on_h100_at_n1(self):
    # jax_22557 at n = 1 on an H100: f32[4,300,300] partial sums (K = 300).
    case = cases.get_case("jax_22557")
    r = sweep.run_config(
      case, case.make_inputs(), None, targets.get_target("h100"), "default", 1
    )
    self.assertEqual(
      _gemm_fusion_shapes(r.compilation.optimized_hlo), [(4, 300, 300)]
    )
    self.assertEqual(r.compilation.fates[0].split_k, 4)


if __name__ == "__main__":
  absltest.main()
