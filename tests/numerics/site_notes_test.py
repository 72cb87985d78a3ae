"""Verdicts name every site below its request (issue 11, inputs 3 and 6).

Recorded compile-only GPU compiles (tests/testdata/compiles) and a CPU
sweep. Expected sites come from the StableHLO text (which dots take f32 x
f32 operands) and the rule checked on jaxlib 0.10.2 PTX (an f32 Triton gemm
at DEFAULT on sm_80+ runs TF32); expected numbers from numpy float64 and
ml_dtypes.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import program_cases
import pytest
import recorded
from absl.testing import absltest

from hloprobe import engine
from hloprobe.report.verdict_words import prediction_words

# Asserts CPU-computed floats: `make test-isa` reruns it under other ISAs.
pytestmark = [pytest.mark.cpu_numerics, pytest.mark.compiles]


def _sweep(case, target, n, precision="default"):
  spec = engine.SweepSpec((case,), (n,), (precision,), (target,))
  (r,) = engine.run_sweep(spec)
  assert r.ok and r.prediction is not None, (r.failure, r.prediction_error)
  return r


def _recorded(case, fixture: str, jaxlib: str = recorded.RELEASES[-1]):
  """(StableHLO text, prediction) of a recorded compile-only compile of
  `case` (tests/testdata/compiles)."""
  rec = recorded.load(fixture, jaxlib)
  return rec.stablehlo, recorded.prediction(case, rec)


def _f32_sites(stablehlo: str) -> list[int]:
  """Indices of the dot_generals whose two operands are f32 tensors."""
  dots = re.findall(r"stablehlo\.dot_general.* : \((.*)\) ->", stablehlo)
  return [i for i, ops in enumerate(dots) if ops.count("xf32>") == 2]


class HiddenSiteTest(absltest.TestCase):
  def test_tf32_site_hidden_by_bf16_output_is_named(self):
    stablehlo, p = _recorded(
      program_cases.attention_bf16(), "attention_bf16_a100_n8_default"
    )
    sites = _f32_sites(stablehlo)
    self.assertNotEmpty(sites)
    self.assertTrue(
      prediction_words(p).endswith(
        f"TF32_TF32_F32 at sites {sites}, hidden by bf16 output rounding"
      ),
      prediction_words(p),
    )

  def test_forward_variant(self):
    stablehlo, p = _recorded(
      program_cases.attention_bf16(backward=False),
      "attention_bf16_forward_h100_n8_default",
    )
    self.assertIn(
      f"TF32_TF32_F32 at sites {_f32_sites(stablehlo)}, hidden by bf16",
      prediction_words(p),
    )


class Bf16ProductsTest(absltest.TestCase):
  def test_h100_prediction_matches_numpy(self):
    case = program_cases.bf16_matmul()
    _, p = _recorded(case, "bf16_matmul_h100_n1_default")
    self.assertEqual(p.site_algorithms, ("BF16_PRODUCTS_F32",))
    x, w = (a.astype(np.float64) for a in case.make_inputs())
    products = x[0][:, None] * w  # exact: 8-bit x 8-bit significands
    ref = products.sum(0)
    rounded = products.astype(ml_dtypes.bfloat16).astype(np.float64).sum(0)
    want = rounded.astype(np.float32).astype(ml_dtypes.bfloat16)
    want = want.astype(np.float64)
    self.assertEqual(p.stats.row0, want[0])
    # Row 0's error: the max over its 64 values.
    self.assertAlmostEqual(
      p.stats.row0_abs, float(np.max(np.abs(want - ref))), places=12
    )
    self.assertIn("BF16_PRODUCTS_F32 at sites [0]", prediction_words(p))


class CpuIgnoresPresetTest(absltest.TestCase):
  def test_cpu_bf16_preset_says_so(self):
    case = program_cases.free_dims_matmul((4, 64), (64, 8), "t_small")
    r = _sweep(case, "cpu", 4, precision="BF16_BF16_F32")
    self.assertEqual(r.compilation.fates[0].effective_algorithm, "F32_F32_F32")
    self.assertIn(
      "site 0 ran F32_F32_F32 for declared BF16_BF16_F32: the target "
      "ignores the preset",
      prediction_words(r.prediction),
    )


if __name__ == "__main__":
  absltest.main()
