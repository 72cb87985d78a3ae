"""Built-in cases that come from hloprobe's own issues, not a public report:
`int8_dots` (issue 24, integer dots), `conv_net` (issue 24,
convolutions), `sharded_matmul` (issue 24, a contraction sharded over 8
devices), `cudnn_attention` (issue 24, cuDNN's fused attention) and
`fp8_scaled_matmul` (issue 24, an fp8 matmul with its scales).
`builtin_cases.CASES` lists them, in `ISSUE_CASES`' order.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec

from hloprobe.compile.case_model import Case

__all__ = [
  "ISSUE_CASES",
  "conv_net",
  "cudnn_attention",
  "fp8_scaled_matmul",
  "int8_dots",
  "sharded_matmul",
]


def _int8_dots(x, w, v):
  """s8 x s8 -> s32 (exact here) and s8 x s8 -> s8 (wraps: |sum| > 127)."""
  dims = (((1,), (0,)), ((), ()))
  wide = jax.lax.dot_general(x, w, dims, preferred_element_type=jnp.int32)
  return {"s32": wide, "s8": jax.lax.dot_general(x, v, dims)}


def _int8_inputs():
  """x: s8[9,64], w: s8[64,32], v: s8[64,16], uniform over s8 (seed 24).

  With K = 64, every s32 sum is exact (|sum| <= 64 * 128^2 < 2^31) and
  nearly every s8 one overflows (a sum of 64 products of size ~ 5000).
  """
  rng = np.random.default_rng(24)
  ints = lambda *shape: rng.integers(-128, 128, shape, dtype=np.int8)
  return ints(9, 64), ints(64, 32), ints(64, 16)


int8_dots = Case(
  "int8_dots",
  "int8 x int8 dots: exact into int32, overflowing (wrapping) into int8",
  _int8_dots,
  _int8_inputs,
  rows_independent=True,
)

# A small conv net, NHWC, 16 -> 32 -> 32 channels, 3x3 windows, bias and
# relu after each convolution, then a dense head on the pooled features.
# On a GPU XLA gives each convolution to cuDNN
# (`__cudnn$convBiasActivationForward`), whose TF32 rule is not the gemms'
# (`sites.conv_rules.cudnn_conv_algorithm`).
_CONV_DN = ("NHWC", "HWIO", "NHWC")


def _conv_net(x, k1, b1, k2, b2, w):
  h = lax.conv_general_dilated(
    x, k1, (1, 1), "SAME", dimension_numbers=_CONV_DN
  )
  h = jax.nn.relu(h + b1)
  h = lax.conv_general_dilated(
    h, k2, (1, 1), "SAME", dimension_numbers=_CONV_DN
  )
  h = jax.nn.relu(h + b2)
  return jnp.mean(h, axis=(1, 2)) @ w


def _conv_net_inputs():
  """x f32[9,8,8,16] standard normal; kernels scaled by 1/sqrt(K) (seed 24)."""
  g = np.random.default_rng(24)
  x = g.standard_normal((9, 8, 8, 16)).astype(np.float32)
  k1 = (g.standard_normal((3, 3, 16, 32)) / 12).astype(np.float32)
  b1 = (0.1 * g.standard_normal(32)).astype(np.float32)
  k2 = (g.standard_normal((3, 3, 32, 32)) / 17).astype(np.float32)
  b2 = (0.1 * g.standard_normal(32)).astype(np.float32)
  w = (g.standard_normal((32, 10)) / 6).astype(np.float32)
  return x, k1, b1, k2, b2, w


conv_net = Case(
  "conv_net",
  "conv net: x f32[n, 8, 8, 16] (NHWC), two 3x3 convolutions 16 -> 32 -> 32 "
  "with bias and relu, mean pool, dense head f32[32, 10]; on a GPU each "
  "convolution is a cuDNN call (issue 24)",
  _conv_net,
  _conv_net_inputs,
  in_axes=(0, None, None, None, None, None),
  output_axis=0,
  rows_independent=True,
)


def _matmul(x, w):
  """x @ w at the ambient matmul precision (one dot_general)."""
  return x @ w


def _sharded_inputs():
  """x: f32[9,256], w: f32[256,32], standard normal (seed 245).

  K = 256 splits into 8 shards of 32: each device sums 32 products, and
  the all-reduce adds the 8 partial sums, an order no single-device dot
  of K = 256 has.
  """
  rng = np.random.default_rng(245)
  x = rng.standard_normal((9, 256)).astype(np.float32)
  return x, rng.standard_normal((256, 32)).astype(np.float32)


sharded_matmul = Case(
  "sharded_matmul",
  "x @ w with K = 256 sharded over 8 devices: per-device dots, then an "
  "all-reduce of the partial sums",
  _matmul,
  _sharded_inputs,
  rows_independent=True,
  mesh_shape=(8,),
  mesh_axes=("k",),
  in_specs=(PartitionSpec(None, "k"), PartitionSpec("k", None)),
  out_specs=PartitionSpec(),
)


# q, k, v: bf16[batch, T, heads, head_dim] (jax.nn.dot_product_attention's
# BTNH layout). A head dim of 64 and T = 128 meet cuDNN flash attention's
# conditions on every target (jax/_src/cudnn/fused_attention_stablehlo.py,
# `check_is_flash_attention`: head dim <= 128 before Hopper, a multiple of 8).
_SHAPE = (9, 128, 4, 64)


def _cudnn_attention(q, k, v):
  """softmax(q k^T / sqrt(64)) v per batch element and head, by cuDNN."""
  return jax.nn.dot_product_attention(q, k, v, implementation="cudnn")


def _cudnn_attention_inputs():
  """q, k, v: bf16[9, 128, 4, 64], standard normal (seed 24)."""
  g = np.random.default_rng(24)
  return tuple(
    g.standard_normal(_SHAPE).astype(ml_dtypes.bfloat16) for _ in range(3)
  )


cudnn_attention = Case(
  "cudnn_attention",
  "jax.nn.dot_product_attention(implementation='cudnn') on bf16 q, k, v "
  "[n, 128, 4, 64]: cuDNN's fused flash attention (GPU targets only, "
  "compile-only ones included; needs the nvidia-cudnn-cu12 wheel)",
  _cudnn_attention,
  _cudnn_attention_inputs,
  in_axes=(0, 0, 0),
  output_axis=0,
  rows_independent=True,
)


def _fp8_scaled_matmul(x, w, x_scale, w_scale):
  """Dequantize-then-dot: (f32(x) * x_scale) @ (f32(w) * w_scale).

  The shape XLA's GemmRewriter matches for an FP8 cuBLASLt gemm (a convert
  of each f8 operand, then a multiply by a broadcast scalar scale:
  `MatchFp8Param` in xla/service/gpu/transforms/gemm_rewriter.cc).
  """
  f32 = jnp.float32
  return (x.astype(f32) * x_scale) @ (w.astype(f32) * w_scale)


def _fp8_inputs():
  """x: f8e4m3fn[9,64], w: f8e4m3fn[64,32], x_scale, w_scale: f32[] (seed 24).

  Per-tensor scaling as fp8 training recipes do it: scale = amax / 448
  (f8e4m3fn's largest finite value), the f8 value the standard normal
  data over its scale, rounded to nearest even by ml_dtypes.
  """
  g = np.random.default_rng(24)
  top = float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max)

  def quantize(data):
    scale = np.float32(np.abs(data).max() / top)
    return (data / scale).astype(ml_dtypes.float8_e4m3fn), scale

  x, x_scale = quantize(g.standard_normal((9, 64)).astype(np.float32))
  w, w_scale = quantize(g.standard_normal((64, 32)).astype(np.float32))
  return x, w, x_scale, w_scale


fp8_scaled_matmul = Case(
  "fp8_scaled_matmul",
  "fp8 scaled matmul: (f32(x) * x_scale) @ (f32(w) * w_scale), x "
  "f8e4m3fn[n, 64], w f8e4m3fn[64, 32], f32 scales; on an H100 the fp8 "
  "cuBLASLt rewrite (__cublas$lt$matmul$f8) fires only without the "
  "Triton gemm (issue 24)",
  _fp8_scaled_matmul,
  _fp8_inputs,
  in_axes=(0, None, None, None),
  output_axis=0,
  rows_independent=True,
)

# The issues' cases, in the order `hloprobe cases` lists them.
ISSUE_CASES = (
  int8_dots,
  conv_net,
  sharded_matmul,
  cudnn_attention,
  fp8_scaled_matmul,
)
