"""Which instruction computes which dot site (issue 11, input 1).

Real compiles for an A100 without a GPU. Expected algorithms come from the
rule checked on jaxlib 0.10.2 PTX (a Triton gemm at DEFAULT runs
`mma ... tf32`, at HIGHEST `fma.rn.f32`), and each site's precision from
the program text, never from hloprobe.
"""

from __future__ import annotations

import re

import jax.numpy as jnp
import program_cases
import pytest
from absl.testing import absltest, parameterized

from hloprobe import sweep
from hloprobe.compile import cases, targets
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.sites import dot_sites
from hloprobe.sites.dot_sites import Fate

# Compiles with XLA (`make test-fast` skips it).
pytestmark = pytest.mark.compiles


def _helper_dots(a, b):
  """The two dots of input 1 written in one helper called twice."""
  dot = lambda p: jnp.matmul(a, b, precision=p)
  return dot(None), dot("highest")


def _config(case, target="a100", precision="default", n=2):
  r = sweep.run_config(
    case, case.make_inputs(), None, targets.get_target(target), precision, n
  )
  assert r.ok, r.failure
  return r


class SharedOperandsTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("plain_first", False, ["TF32_TF32_F32", "F32_F32_F32"]),
    ("highest_first", True, ["F32_F32_F32", "TF32_TF32_F32"]),
  )
  def test_each_site_gets_its_own_gemm(self, swap, expected):
    r = _config(program_cases.two_dots(swap))
    self.assertEqual(
      [f.effective_algorithm for f in r.compilation.fates], expected
    )
    # Each site's precision config is the one its program line asked for.
    self.assertEqual(
      [f.precision_config for f in r.compilation.fates],
      [
        "default,default" if alg == "TF32_TF32_F32" else "highest,highest"
        for alg in expected
      ],
    )
    self.assertEqual(
      {f.mapping for f in r.compilation.fates}, {"source location"}
    )
    self.assertEqual([f.conflict for f in r.compilation.fates], [None, None])

  def test_helper_called_twice_told_apart_by_caller(self):
    # Both sites share the innermost frame (the helper's line); the
    # calling line tells them apart.
    case = cases.Case(
      "t_helper", "helper", _helper_dots, program_cases.two_dots().make_inputs
    )
    r = _config(case)
    self.assertEqual(
      [f.effective_algorithm for f in r.compilation.fates],
      ["TF32_TF32_F32", "F32_F32_F32"],
    )

  def test_cpu_maps_by_source_too(self):
    r = _config(program_cases.two_dots(), target="cpu")
    self.assertEqual(
      [f.precision_config for f in r.compilation.fates],
      ["default,default", "highest,highest"],
    )


def _strip_metadata(text: str) -> str:
  return re.sub(r", metadata=\{[^}]*\}", "", text)


class AmbiguityAndConflictTest(absltest.TestCase):
  """Optimized HLO edited as XLA could have printed it (fixtures)."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.r = _config(program_cases.two_dots())
    cls.sites = parse_stablehlo_dots(cls.r.compilation.stablehlo)

  def test_without_metadata_precision_decides(self):
    module = parse_hlo_module(_strip_metadata(self.r.compilation.optimized_hlo))
    fates = dot_sites.map_dot_sites(self.sites, module)
    self.assertEqual(
      [f.precision_config for f in fates],
      ["default,default", "highest,highest"],
    )
    self.assertEqual({f.mapping for f in fates}, {"data flow"})

  def test_contradicting_precision_is_reported(self):
    # The dots' operand_precision moved: site 0's carrier (by source) now
    # says highest, site 1's default.
    text = self.r.compilation.optimized_hlo.replace(
      ", operand_precision={highest,highest}", ""
    )
    text = re.sub(
      r"(%\S+ = f32\[2,2\]\{1,0\} dot\(%parameter_0, %parameter_1\)[^\n]*?"
      r"rhs_contracting_dims=\{0\})",
      r"\1, operand_precision={highest,highest}",
      text,
    )
    fates = dot_sites.map_dot_sites(self.sites, parse_hlo_module(text))
    self.assertEqual([f.mapping for f in fates], ["source location"] * 2)
    self.assertIn("contradicts StableHLO DEFAULT,DEFAULT", fates[0].conflict)
    self.assertIn("contradicts StableHLO HIGHEST,HIGHEST", fates[1].conflict)

  def test_differing_carriers_without_any_key_are_ambiguous(self):
    # Both sites DEFAULT, no metadata: one carrier a Triton gemm, the other
    # a dot in a loop fusion. Nothing says which is which.
    text = _strip_metadata(self.r.compilation.optimized_hlo).replace(
      ", operand_precision={highest,highest}", ""
    )
    text = text.replace('"__triton_nested_gemm_fusion"', '"__other"', 1)
    sites = [
      parse_stablehlo_dots(
        self.r.compilation.stablehlo.replace("HIGHEST", "DEFAULT")
      )[i]
      for i in (0, 1)
    ]
    fates = dot_sites.map_dot_sites(sites, parse_hlo_module(text))
    self.assertEqual([f.fate for f in fates], [Fate.AMBIGUOUS] * 2)
    self.assertLen(fates[0].candidates, 2)


@pytest.mark.cpu_numerics
class VerdictTest(absltest.TestCase):
  def test_verdict_names_site_0(self):
    case = program_cases.two_dots()
    with program_cases.registered(case):
      spec = sweep.SweepSpec((case.name,), (2,), ("default",), ("a100",))
      (r,) = sweep.run_sweep(spec)
    self.assertEqual(
      r.prediction.verdict, "explained by TF32_TF32_F32 at sites [0]"
    )


if __name__ == "__main__":
  absltest.main()
