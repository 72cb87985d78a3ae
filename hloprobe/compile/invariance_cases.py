"""Built-in cases of issue 38 (batch invariance), each with the answer an
independent source gives (the tests check hloprobe against it):

  tm_mm             Thinking Machines' `torch.mm(a[:1], b)` against
                    `torch.mm(a, b)[:1]` ("Defeating Nondeterminism in LLM
                    Inference", 2025), shrunk: linspace operands, K = 512.
  jax_34080         jax-ml/jax#34080 shrunk: a bf16 `dot_general`
                    (preferred bf16) whose row 0 changes with the padding
                    rows after it; K = 512, N = 512.
  transformer_block two pre-norm layers: RMSNorm, 4-head causal attention,
                    RMSNorm, a GELU MLP; per sequence (vmapped).
  elementwise_only  the negative control: relu((x - b) * s), elementwise
                    only (no operation mixes elements), so every row's
                    bits are numpy's own float32 ones at any batch size.
  dense_ln_softmax  issue 38's model: dense -> layernorm -> gelu -> dense
                    -> softmax (float32, in_axes=(0, None, ...)).

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

from hloprobe.compile.case_model import Case

__all__ = ["INVARIANCE_CASES", "elementwise_only_numpy"]

_ROWS = 64  # every case's full batch: the sweep's sizes go up to 64


def _mm(a, b):
  return a @ b


def _tm_inputs():
  # As the blog's torch.linspace(-1000, 1000, ...) operands, at K = 512.
  a = np.linspace(-1000, 1000, _ROWS * 512, dtype=np.float32)
  b = np.linspace(-1000, 1000, 512 * 256, dtype=np.float32)
  return a.reshape(_ROWS, 512), b.reshape(512, 256)


tm_mm = Case(
  "tm_mm",
  "Thinking Machines' mm(a[:1], b) vs mm(a, b)[:1]: a f32[n, 512] @ b "
  "f32[512, 256] (linspace operands); row 0 should not depend on n",
  _mm,
  _tm_inputs,
  in_axes=(0, None),
  rows_independent=True,
  url="https://thinkingmachines.ai/blog/defeating-nondeterminism-in-llm-"
  "inference",
)


def _bf16_dot(x, w):
  return lax.dot_general(
    x, w, (((1,), (0,)), ((), ())), preferred_element_type=jnp.bfloat16
  )


def _jax_34080_inputs():
  g = np.random.default_rng(34080)
  x = g.standard_normal((_ROWS, 512)).astype(ml_dtypes.bfloat16)
  w = g.standard_normal((512, 512)).astype(ml_dtypes.bfloat16)
  return x, w


jax_34080 = Case(
  "jax_34080",
  "bf16 dot_general (preferred bf16) x bf16[n, 512] @ w bf16[512, 512]: "
  "row 0 with and without padding rows after it (jax-ml/jax#34080, shrunk "
  "from [1|8, 4096] @ [4096, 151936])",
  _bf16_dot,
  _jax_34080_inputs,
  in_axes=(0, None),
  rows_independent=True,
  url="https://github.com/jax-ml/jax/issues/34080",
)

_SEQ, _D, _HEADS, _MLP = 8, 64, 4, 128


def _rms(x, g):
  return x * lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * g


def _layer(x, p):
  g1, wq, wk, wv, wo, g2, w1, w2 = p
  h = _rms(x, g1)
  q, k, v = (
    (h @ w).reshape(_SEQ, _HEADS, _D // _HEADS).transpose(1, 0, 2)
    for w in (wq, wk, wv)
  )
  s = q @ k.transpose(0, 2, 1) / np.sqrt(_D // _HEADS).astype(np.float32)
  mask = np.tril(np.ones((_SEQ, _SEQ), dtype=bool))
  s = jnp.where(mask, s, -1e30)
  a = jax.nn.softmax(s, axis=-1) @ v
  x = x + a.transpose(1, 0, 2).reshape(_SEQ, _D) @ wo
  return x + jax.nn.gelu(_rms(x, g2) @ w1) @ w2


def _block_one(x, layers):
  for p in layers:
    x = _layer(x, p)
  return x


def _block(xs, layers):
  return jax.vmap(_block_one, in_axes=(0, None))(xs, layers)


def _block_inputs():
  g = np.random.default_rng(38)

  def w(*shape):
    return (g.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

  layers = tuple(
    (
      np.ones(_D, np.float32),
      w(_D, _D),
      w(_D, _D),
      w(_D, _D),
      w(_D, _D),
      np.ones(_D, np.float32),
      w(_D, _MLP),
      w(_MLP, _D),
    )
    for _ in range(2)
  )
  xs = g.standard_normal((_ROWS, _SEQ, _D)).astype(np.float32)
  return xs, layers


transformer_block = Case(
  "transformer_block",
  "2 pre-norm transformer layers (RMSNorm, 4-head causal attention, "
  "RMSNorm, GELU MLP 64 -> 128 -> 64) over f32[n, 8, 64] sequences",
  _block,
  _block_inputs,
  in_axes=(0, None),
  rows_independent=True,
)


def _elementwise(x, b, s):
  return jnp.maximum((x - b) * s, 0.0)


def elementwise_only_numpy(x, b, s) -> np.ndarray:
  """`elementwise_only`'s function in numpy float32 (each operation
  correctly rounded, IEEE 754): the independent bits its rows must have."""
  return np.maximum((x - b) * s, np.float32(0))


def _elementwise_inputs():
  g = np.random.default_rng(7)
  x = g.standard_normal((_ROWS, 256)).astype(np.float32)
  b = g.standard_normal(256).astype(np.float32)
  s = g.standard_normal(256).astype(np.float32)
  return x, b, s


elementwise_only = Case(
  "elementwise_only",
  "negative control: relu((x - b) * s), x f32[n, 256], elementwise only "
  "(no operation mixes elements): must be batch-invariant",
  _elementwise,
  _elementwise_inputs,
  in_axes=(0, None, None),
  rows_independent=True,
)


def _dense_ln(x, w1, b1, gamma, beta, w2, b2):
  h = x @ w1 + b1
  mu = jnp.mean(h, axis=-1, keepdims=True)
  var = jnp.mean((h - mu) ** 2, axis=-1, keepdims=True)
  h = (h - mu) * lax.rsqrt(var + 1e-5) * gamma + beta
  return jax.nn.softmax(jax.nn.gelu(h) @ w2 + b2, axis=-1)


def _dense_ln_inputs():
  g = np.random.default_rng(380)
  x = g.standard_normal((_ROWS, 64)).astype(np.float32)
  w1 = (0.1 * g.standard_normal((64, 256))).astype(np.float32)
  b1 = (0.1 * g.standard_normal(256)).astype(np.float32)
  gamma = g.standard_normal(256).astype(np.float32)
  beta = (0.1 * g.standard_normal(256)).astype(np.float32)
  w2 = (0.1 * g.standard_normal((256, 32))).astype(np.float32)
  b2 = (0.1 * g.standard_normal(32)).astype(np.float32)
  return x, w1, b1, gamma, beta, w2, b2


dense_ln_softmax = Case(
  "dense_ln_softmax",
  "issue 38's model: dense 64 -> 256, layernorm, gelu, dense 256 -> 32, "
  "softmax (float32, in_axes=(0, None, ...))",
  _dense_ln,
  _dense_ln_inputs,
  in_axes=(0, None, None, None, None, None, None),
  rows_independent=True,
)

# In the order `hloprobe cases` lists them.
INVARIANCE_CASES = (
  tm_mm,
  jax_34080,
  transformer_block,
  elementwise_only,
  dense_ln_softmax,
)
