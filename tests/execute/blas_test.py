"""cuBLAS / cuBLASLt gemm custom calls against the formula the libraries
document: D = epilogue(alpha * (A @ B) + beta * C + bias), in numpy
float64 on small integer inputs (exact in f32)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
from absl.testing import absltest, parameterized

from hloprobe.execute import execute_module
from hloprobe.ir import parse_hlo_module

_DOT = (
  '"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],'
  '"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],'
  '"rhs_batch_dimensions":[]}'
)


def _config(alpha, beta, epilogue):
  fields = (
    f'"alpha_real":{alpha},"alpha_imag":0,"beta":{beta},{_DOT},'
    f'"epilogue":"{epilogue}"'
  )
  return '{"gemm_backend_config":{' + fields + "}}"


_AB = [("a", "f32[2,3]{1,0}"), ("b", "f32[3,4]{1,0}")]
_LT = "__cublas$lt$matmul"
_LT_RESULT = "(f32[2,4]{1,0}, s8[1024]{0})"


def _module(params, result, target, config, out="f32[2,4]{1,0}"):
  """A module calling one gemm on all its `params`, (name, shape) pairs."""
  operands = [n for n, _ in params]
  heads = ", ".join(f"{n}: {s.split('{')[0]}" for n, s in params)
  lines = [f"  %{n} = {s} parameter({i})" for i, (n, s) in enumerate(params)]
  args = ", ".join(f"%{n}" for n in operands)
  lines.append(
    f"  %gemm = {result} custom-call({args}), "
    f'custom_call_target="{target}", backend_config={config}'
  )
  if result.startswith("("):
    lines.append(f"  ROOT %d = {out} get-tuple-element(%gemm), index=0")
  else:
    lines[-1] = "  ROOT " + lines[-1].lstrip()
  layout = ", ".join(s for _, s in params)
  return (
    f"HloModule m, entry_computation_layout={{({layout})->{out}}}\n\n"
    f"ENTRY %main ({heads}) -> {out.split('{')[0]} {{\n"
    + "\n".join(lines)
    + "\n}\n"
  )


def _gelu(x):
  return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


class GemmTest(parameterized.TestCase):
  def setUp(self):
    super().setUp()
    g = np.random.default_rng(1)
    self.a = g.integers(-3, 4, (2, 3)).astype(np.float32)
    self.b = g.integers(-3, 4, (3, 4)).astype(np.float32)
    self.c = g.integers(-3, 4, (2, 4)).astype(np.float32)
    self.bias = g.integers(-3, 4, (4,)).astype(np.float32)
    self.prod = self.a.astype(np.float64) @ self.b.astype(np.float64)

  @parameterized.named_parameters(
    ("default", "DEFAULT", lambda x: x),
    ("relu", "RELU", lambda x: np.maximum(x, 0)),
    ("gelu", "GELU", _gelu),
  )
  def test_lt_matmul_alpha_beta_c_and_activation(self, epilogue, act):
    text = _module(
      [*_AB, ("c", "f32[2,4]{1,0}")],
      _LT_RESULT,
      _LT,
      _config(2, 0.5, epilogue),
    )
    run = execute_module(parse_hlo_module(text), [self.a, self.b, self.c])
    want = act(2 * self.prod + 0.5 * self.c)
    np.testing.assert_allclose(run.outputs[0], want, rtol=2**-23, atol=1e-6)
    (gemm,) = run.gemms
    self.assertEqual((gemm.alpha, gemm.beta, gemm.epilogue), (2, 0.5, epilogue))

  @parameterized.named_parameters(
    ("bias", "BIAS", lambda x: x),
    ("bias_relu", "BIAS_RELU", lambda x: np.maximum(x, 0)),
    ("bias_gelu", "BIAS_GELU", _gelu),
  )
  def test_lt_matmul_bias_epilogues_add_bias_before_activation(
    self, epilogue, act
  ):
    text = _module(
      [*_AB, ("v", "f32[4]{0}")],
      _LT_RESULT,
      _LT,
      _config(0.25, 0, epilogue),
    )
    run = execute_module(parse_hlo_module(text), [self.a, self.b, self.bias])
    want = act(0.25 * self.prod + self.bias)
    np.testing.assert_allclose(run.outputs[0], want, rtol=2**-23, atol=1e-6)
    self.assertTrue(run.gemms[0].has_bias)

  def test_bias_follows_the_minor_physical_dimension(self):
    # D is column-major ({0,1}): its most minor dimension is dim 0, so the
    # bias vector runs along the rows (gemm_rewriter's FuseVectorBiasAdd).
    bias = np.array([10, -20], np.float32)
    text = _module(
      [*_AB, ("v", "f32[2]{0}")],
      "(f32[2,4]{0,1}, s8[16]{0})",
      "__cublas$lt$matmul",
      _config(1, 0, "BIAS"),
      out="f32[2,4]{0,1}",
    )
    run = execute_module(parse_hlo_module(text), [self.a, self.b, bias])
    np.testing.assert_array_equal(run.outputs[0], self.prod + bias[:, None])

  def test_gelu_aux_returns_the_pre_activation(self):
    text = _module(
      _AB,
      "(f32[2,4]{1,0}, f32[2,4]{1,0}, s8[16]{0})",
      "__cublas$lt$matmul",
      _config(1, 0, "GELU_AUX"),
    ).replace("index=0", "index=1")
    run = execute_module(parse_hlo_module(text), [self.a, self.b])
    np.testing.assert_array_equal(run.outputs[0], self.prod)

  def test_legacy_gemm_with_c(self):
    text = _module(
      [*_AB, ("c", "f32[2,4]{1,0}")],
      "f32[2,4]{1,0}",
      "__cublas$gemm",
      _config(1, 1, "DEFAULT"),
    )
    run = execute_module(parse_hlo_module(text), [self.a, self.b, self.c])
    np.testing.assert_array_equal(run.outputs[0], self.prod + self.c)
    self.assertEqual(run.gemms[0].kind, "__cublas$gemm")

  def test_f8_scales(self):
    f8 = ml_dtypes.float8_e4m3fn
    a, b = self.a.astype(f8), self.b.astype(f8)
    params = [
      ("a", "f8e4m3fn[2,3]{1,0}"),
      ("b", "f8e4m3fn[3,4]{1,0}"),
      ("sa", "f32[]"),
      ("sb", "f32[]"),
      ("sd", "f32[]"),
    ]
    text = _module(
      params,
      "(f32[2,4]{1,0}, s8[16]{0})",
      "__cublas$lt$matmul$f8",
      _config(1, 0, "DEFAULT"),
    )
    scales = [np.float32(2), np.float32(0.5), np.float32(3)]
    run = execute_module(parse_hlo_module(text), [a, b, *scales])
    np.testing.assert_array_equal(run.outputs[0], 3 * (2 * 0.5 * self.prod))

  def test_tf32_in_cublas_rounds_ties_to_even(self):
    # 1 + 2**-11 is halfway between two TF32 values: cuBLAS's model (rne)
    # keeps 1, Triton's (rna) would give 1 + 2**-10.
    tie = np.float32(1 + 2**-11)
    a = np.array([[tie]], np.float32)
    b = np.array([[1.0]], np.float32)
    params = [("a", "f32[1,1]{1,0}"), ("b", "f32[1,1]{1,0}")]
    text = _module(
      params,
      "f32[1,1]{1,0}",
      "__cublas$gemm",
      _config(1, 0, "DEFAULT"),
      out="f32[1,1]{1,0}",
    )
    run = execute_module(
      parse_hlo_module(text), [a, b], default_algorithm="TF32"
    )
    self.assertEqual(run.outputs[0][0, 0], 1.0)


if __name__ == "__main__":
  absltest.main()
