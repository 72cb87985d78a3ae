"""XLA:CPU's rule for 16-bit convolutions (issue 24 leftovers, item 8's
"bf16/f16 on the CPU" for convolutions).

XLA:CPU has no bf16 or f16 convolution: `float-normalization-bf16`
(FloatNormalization with the base FloatSupport(BF16)) and
`change-op-data-type` (ChangeOpDataType(F16, F32) for dots and
convolutions) in xla/service/cpu/cpu_compiler.cc convert the operands to
f32, run the convolution in f32 and convert the result back. Checked
here from independent sources: the optimized HLO jax compiles (read with
regexes: f32 converts of both bf16 operands, a convert of the result to
bf16) and XLA:CPU's own output against numpy float64 (exact products of
the bf16 values, summed, rounded once to bf16): a bf16 accumulation would
not match it.
"""

from __future__ import annotations

import re

import jax
import ml_dtypes
import numpy as np
import pytest
from absl.testing import absltest, parameterized
from jax import lax

from hloprobe.compile import targets
from hloprobe.ir import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.sites import effective, map_dot_sites
from hloprobe.sites.conv_rules import cpu_conv_algorithm

_DN = ("NHWC", "HWIO", "NHWC")


def _conv(x, w):
  return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=_DN)


class RuleTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("bf16", "bf16", "BF16_BF16_F32", "float-normalization-bf16"),
    ("f16", "f16", "F16_F16_F32", "change-op-data-type"),
    ("f32", "f32", "F32_F32_F32", "in f32"),
  )
  def test_rule(self, dtype, algorithm, words):
    got, evidence = cpu_conv_algorithm(dtype)
    self.assertEqual(got, algorithm)
    self.assertIn(words, evidence)

  def test_other_types_stay_unknown(self):
    got, evidence = cpu_conv_algorithm("f8e4m3fn")
    self.assertIsNone(got)
    self.assertIn("no rule checked for f8e4m3fn convolutions", evidence)


@pytest.mark.compiles
@pytest.mark.cpu_numerics
class CompiledTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    g = np.random.default_rng(8)
    cls.x = g.standard_normal((2, 6, 6, 64)).astype(ml_dtypes.bfloat16)
    cls.w = g.standard_normal((3, 3, 64, 8)).astype(ml_dtypes.bfloat16)
    cpu = jax.devices("cpu")[0]
    args = [jax.device_put(a, cpu) for a in (cls.x, cls.w)]
    lowered = jax.jit(_conv).lower(*args)
    cls.stablehlo = lowered.as_text(debug_info=True)
    compiled = lowered.compile()
    cls.hlo = compiled.as_text()
    cls.out = np.asarray(compiled(*args))

  def test_hlo_widens_to_f32(self):
    converts = re.findall(r"= (\w+)\[[\d,]*\]\{[\d,]*\} convert\(", self.hlo)
    self.assertEqual(sorted(converts), ["bf16", "f32", "f32"], self.hlo)
    self.assertNotRegex(self.hlo, r"= bf16\[[\d,]*\]\{[\d,]*\} convolution\(")

  def test_site_resolved_by_the_rule(self):
    sites = parse_stablehlo_dots(self.stablehlo)
    module = parse_hlo_module(self.hlo)
    (fate,) = effective.resolve(
      map_dot_sites(sites, module), module, [], targets.get_target("cpu"), None
    )
    self.assertEqual(fate.effective_algorithm, "BF16_BF16_F32")
    self.assertIn("float-normalization-bf16", fate.algorithm_evidence)

  def test_xla_cpu_sums_in_f32_not_bf16(self):
    x, w = (a.astype(np.float64) for a in (self.x, self.w))
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    # Exact products of bf16 values, summed in float64, rounded once.
    exact = np.zeros(self.out.shape)
    bf16_sum = np.zeros(self.out.shape, ml_dtypes.bfloat16)
    for i in range(3):
      for j in range(3):
        patch = padded[:, i : i + 6, j : j + 6, :]
        for c in range(64):  # a bf16 accumulator, one term at a time
          term = patch[..., c : c + 1] * w[i, j, c]
          exact += term
          bf16_sum = (bf16_sum.astype(np.float64) + term).astype(
            ml_dtypes.bfloat16
          )
    got = self.out.astype(np.float64)
    want = exact.astype(ml_dtypes.bfloat16).astype(np.float64)
    ulp = np.abs(want) * 2.0**-7 + 1e-30
    self.assertTrue(np.all(np.abs(got - want) <= ulp))
    self.assertGreater(np.mean(got == want), 0.97)
    self.assertLess(np.mean(bf16_sum.astype(np.float64) == want), 0.8)


if __name__ == "__main__":
  absltest.main()
