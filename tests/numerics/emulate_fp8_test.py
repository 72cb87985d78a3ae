"""cuBLASLt's FP8 gemm emulated with its scales (issue 24, item 4), no XLA.

The reference is numpy float64 on the fp8-rounded operands times the
scales (ml_dtypes' f8 values, exact in float64): the emulation
(`emulate_fp8.fp8_gemm`) and the numpy executor running the recorded
`__cublas$lt$matmul$f8` module must agree with it within f32
accumulation's bound (Higham's gamma_{K+1} times the sum of |products|
times the scales); a sum rounded to bf16 must not (the should-fail half).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import recorded
from absl.testing import absltest, parameterized

from hloprobe.compile import CASES
from hloprobe.execute import execute_module
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.numerics import emulate_fp8
from hloprobe.report.listings import cases_listing

_E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
_E5M2 = np.dtype(ml_dtypes.float8_e5m2)


def _inputs(n: int = 8):
  x, w, x_scale, w_scale = CASES["fp8_scaled_matmul"].make_inputs()
  return x[:n], w, x_scale, w_scale


def _float64(x, w, x_scale, w_scale) -> np.ndarray:
  """The exact scaled product, in float64 (f8 values are exact there)."""
  return (
    float(x_scale)
    * float(w_scale)
    * (x.astype(np.float64) @ w.astype(np.float64))
  )


class ProductsTest(parameterized.TestCase):
  @parameterized.named_parameters(("e4m3fn", _E4M3), ("e5m2", _E5M2))
  def test_every_f8_product_is_exact_in_f32(self, dtype):
    values = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)
    values = values[np.isfinite(values)]
    products = np.multiply.outer(values, values)
    np.testing.assert_array_equal(
      products.astype(np.float32).astype(np.float64), products
    )


class Fp8GemmTest(absltest.TestCase):
  def test_within_f32_accumulation_bound(self):
    x, w, sx, sw = _inputs(9)
    got = emulate_fp8.fp8_gemm(x, w, sx, sw).astype(np.float64)
    exact = _float64(x, w, sx, sw)
    bound = emulate_fp8.fp8_gemm_bound(x, w, sx, sw)
    self.assertEqual(got.shape, (9, 32))
    self.assertTrue(np.all(np.abs(got - exact) <= bound))
    # gamma_{K+1} = 65 u / (1 - 65 u), u = 2^-24, of the |products|' sum.
    size = abs(float(sx) * float(sw)) * (
      np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64))
    )
    u65 = 65 * 2.0**-24
    np.testing.assert_allclose(bound / size, u65 / (1 - u65), rtol=1e-12)

  def test_bf16_sum_breaks_the_bound(self):
    """Should fail: a sum rounded to bf16 is outside the f32 bound."""
    x, w, sx, sw = _inputs(9)
    bf16 = (
      emulate_fp8.fp8_gemm(x, w, sx, sw)
      .astype(ml_dtypes.bfloat16)
      .astype(np.float64)
    )
    exact = _float64(x, w, sx, sw)
    bound = emulate_fp8.fp8_gemm_bound(x, w, sx, sw)
    self.assertTrue(np.any(np.abs(bf16 - exact) > bound))

  def test_fp8_output_saturates(self):
    x, w, _, _ = _inputs(2)
    d = emulate_fp8.fp8_gemm(x, w, 1.0, 1.0, out_dtype=_E4M3)
    self.assertEqual(d.dtype, _E4M3)
    self.assertEqual(float(np.max(np.abs(d.astype(np.float32)))), 448.0)

  def test_rejects_non_fp8_operands(self):
    x, w, sx, sw = _inputs(2)
    with self.assertRaisesRegex(ValueError, "f8e4m3fn or f8e5m2"):
      emulate_fp8.fp8_gemm(x.astype(np.float32), w, sx, sw)

  def test_jaxpr_algorithm(self):
    self.assertEqual(
      emulate_fp8.jaxpr_algorithm("ANY_F8_ANY_F8_F32"), "F32_F32_F32"
    )
    self.assertEqual(
      emulate_fp8.jaxpr_algorithm("BF16_BF16_F32"), "BF16_BF16_F32"
    )


class ExecutedCallTest(parameterized.TestCase):
  """The numpy executor runs the recorded FP8 call with its scales."""

  @parameterized.named_parameters(
    (r.replace(".", "_"), r) for r in recorded.RELEASES
  )
  def test_recorded_call_within_bound(self, jaxlib):
    rec = recorded.load(
      "fp8_scaled_matmul_h100_n8_default_no_triton_gemm", jaxlib
    )
    x, w, sx, sw = _inputs(8)
    run = execute_module(parse_hlo_module(rec.optimized_hlo), [x, w, sx, sw])
    self.assertTrue(run.complete, run.not_executed)
    self.assertIn("__cublas$lt$matmul$f8", {g.kind for g in run.gemms})
    exact = _float64(x, w, sx, sw)
    (out,) = run.outputs
    self.assertEqual(out.shape, (8, 32))
    bound = emulate_fp8.fp8_gemm_bound(x, w, sx, sw)
    self.assertTrue(np.all(np.abs(out.astype(np.float64) - exact) <= bound))
    # A scale dropped is far outside it (should fail).
    self.assertTrue(np.all(np.abs(exact / float(sx) - exact) > bound))


class CaseTest(absltest.TestCase):
  def test_listed_last_by_hloprobe_cases(self):
    names = [line.split()[0] for line in cases_listing().splitlines()]
    # The last of issue 24's cases; issue 38's (batch invariance) follow.
    self.assertEqual(names[-6], "fp8_scaled_matmul")
    self.assertEqual(
      names[-5:],
      [
        "tm_mm",
        "jax_34080",
        "transformer_block",
        "elementwise_only",
        "dense_ln_softmax",
      ],
    )

  def test_f8_operands_and_amax_scales(self):
    x, w, sx, sw = CASES["fp8_scaled_matmul"].make_inputs()
    self.assertEqual((x.dtype, w.dtype), (_E4M3, _E4M3))
    self.assertEqual((x.shape, w.shape), ((9, 64), (64, 32)))
    self.assertEqual((sx.dtype, sw.dtype), (np.float32, np.float32))
    # scale = amax / 448: the largest f8 magnitude is f8e4m3fn's 448.
    for q in (x, w):
      self.assertEqual(float(np.max(np.abs(q.astype(np.float32)))), 448.0)


class PresetNamesTest(absltest.TestCase):
  def test_jax_preset_names_as_the_sites_give_them(self):
    from hloprobe.ir import precisions
    from hloprobe.numerics import site_notes
    from hloprobe.sites import effective, fp8_rewrite

    # Spelled in both stages; each is a jax.lax.DotAlgorithmPreset name.
    pairs = (
      (emulate_fp8.FP8_ALGORITHM, fp8_rewrite.FP8_ALGORITHM),
      (
        emulate_fp8.FP8_FAST_ACCUM_ALGORITHM,
        fp8_rewrite.FP8_FAST_ACCUM_ALGORITHM,
      ),
      (site_notes.TF32, effective.TF32),
    )
    for mine, theirs in pairs:
      self.assertEqual(mine, theirs)
      self.assertIn(mine, precisions.PRECISION_NAMES)


if __name__ == "__main__":
  absltest.main()
