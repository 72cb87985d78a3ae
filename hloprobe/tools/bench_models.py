"""Real-size cases for `make bench`'s scale lines (`bench_scale`): each a
`package.module:factory` case (`--case=hloprobe.tools.bench_models:gpt2_12`).

  gpt2_L     a GPT-2-small-shaped stack of L pre-LayerNorm blocks (d_model
             768, 12 heads of 64, MLP 3072 with gelu, causal attention over
             seq 128), random weights (seed per layer, scaled 1/sqrt(fan
             in)); x f32[n, 128, 768]. L = 1, 2, 4, 12 (`gpt2_1` ...).
  resnet     a ResNet-ish conv net, NHWC: x f32[n, 32, 32, 3], a 3x3 stem
             to 32 channels, three residual stages of two 3x3 convolutions
             (32, 64, 128 channels, stride 2 between stages), mean pool,
             dense head to 10.
  decode     one LLM-decode-shaped layer: one token, d 2048, attention
             against a 256-token cache of 16 heads, MLP 8192; x f32[n, 1,
             2048] (n = 1-64 sequences).

Rows are independent (each batch element alone), so the float64
reference and the fixed orders are made once at the largest size.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hloprobe.compile import Case

__all__ = ["decode", "gpt2_1", "gpt2_2", "gpt2_4", "gpt2_12", "resnet"]

_D, _HEADS, _MLP, _SEQ = 768, 12, 3072, 128


def _layer_norm(x, g, b):
  mean = jnp.mean(x, -1, keepdims=True)
  var = jnp.mean(jnp.square(x - mean), -1, keepdims=True)
  return (x - mean) * lax.rsqrt(var + 1e-5) * g + b


def _attention(q, k, v, heads, causal):
  """q (S, D), k and v (T, D): multi-head softmax attention, (S, D)."""
  s, d = q.shape
  t = k.shape[0]
  split = lambda x, n: x.reshape(n, heads, d // heads)
  scores = jnp.einsum("shd,thd->hst", split(q, s), split(k, t))
  scores = scores / np.sqrt(d // heads).astype(np.float32)
  if causal:
    scores = jnp.where(jnp.tril(jnp.ones((s, t), bool)), scores, -1e9)
  weights = jax.nn.softmax(scores, axis=-1)
  return jnp.einsum("hst,thd->shd", weights, split(v, t)).reshape(s, d)


def _block(x, p):
  """One GPT-2 block on x (S, D)."""
  h = _layer_norm(x, p["ln1_g"], p["ln1_b"])
  q, k, v = jnp.split(h @ p["qkv"], 3, axis=-1)
  x = x + _attention(q, k, v, _HEADS, True) @ p["proj"]
  h = _layer_norm(x, p["ln2_g"], p["ln2_b"])
  return x + jax.nn.gelu(h @ p["fc"]) @ p["out"]


def _gpt2(layers):
  def fn(x, params):
    def one(row):
      for p in params:
        row = _block(row, p)
      return row

    return jax.vmap(one)(x)

  return fn


def _dense(g, fan_in, *shape):
  return (g.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def _gpt2_inputs(layers, rows=8):
  params = []
  for i in range(layers):
    g = np.random.default_rng(100 + i)
    params.append(
      {
        "ln1_g": np.ones(_D, np.float32),
        "ln1_b": np.zeros(_D, np.float32),
        "qkv": _dense(g, _D, _D, 3 * _D),
        "proj": _dense(g, _D, _D, _D),
        "ln2_g": np.ones(_D, np.float32),
        "ln2_b": np.zeros(_D, np.float32),
        "fc": _dense(g, _D, _D, _MLP),
        "out": _dense(g, _MLP, _MLP, _D),
      }
    )
  x = np.random.default_rng(99).standard_normal((rows, _SEQ, _D))
  return x.astype(np.float32), params


def _gpt2_case(layers):
  return Case(
    f"gpt2_{layers}",
    f"GPT-2-small-shaped stack of {layers} layers (d 768, 12 heads, MLP "
    "3072, seq 128, causal), random weights: make bench",
    _gpt2(layers),
    functools.partial(_gpt2_inputs, layers),
    in_axes=(0, None),
    rows_independent=True,
  )


def gpt2_1():
  """The GPT-2-shaped case with 1 layer (`_gpt2_case`)."""
  return _gpt2_case(1)


def gpt2_2():
  """The GPT-2-shaped case with 2 layers."""
  return _gpt2_case(2)


def gpt2_4():
  """The GPT-2-shaped case with 4 layers."""
  return _gpt2_case(4)


def gpt2_12():
  """The GPT-2-shaped case with 12 layers (GPT-2 small's depth)."""
  return _gpt2_case(12)


_NHWC = ("NHWC", "HWIO", "NHWC")


def _conv(x, k, stride=1):
  return lax.conv_general_dilated(
    x, k, (stride, stride), "SAME", dimension_numbers=_NHWC
  )


def _resnet(x, params):
  stem, stages, head = params
  h = jax.nn.relu(_conv(x, stem))
  for i, (k1, k2, skip) in enumerate(stages):
    stride = 1 if i == 0 else 2
    y = jax.nn.relu(_conv(h, k1, stride))
    y = _conv(y, k2)
    h = jax.nn.relu(y + (_conv(h, skip, stride) if skip is not None else h))
  return jnp.mean(h, axis=(1, 2)) @ head


def _resnet_inputs(rows=8):
  g = np.random.default_rng(7)
  kernel = lambda c_in, c_out, w=3: _dense(g, w * w * c_in, w, w, c_in, c_out)
  stages, c = [], 32
  for i, width in enumerate((32, 64, 128)):
    skip = None if i == 0 else kernel(c, width, 1)
    stages.append((kernel(c, width), kernel(width, width), skip))
    c = width
  x = g.standard_normal((rows, 32, 32, 3)).astype(np.float32)
  return x, (kernel(3, 32), stages, _dense(g, 128, 128, 10))


def resnet():
  """The ResNet-shaped convolution case (its description says the shape)."""
  return Case(
    "resnet",
    "ResNet-ish conv net (32x32x3, stages of 32/64/128 channels), random "
    "weights: make bench",
    _resnet,
    _resnet_inputs,
    in_axes=(0, None),
    rows_independent=True,
  )


_DEC, _DEC_HEADS, _DEC_MLP, _CACHE = 2048, 16, 8192, 256


def _decode(x, cache, params):
  def one(row, kv):
    k, v = kv
    h = _layer_norm(row, 1.0, 0.0)
    q = h @ params["q"]
    new_k, new_v = h @ params["k"], h @ params["v"]
    k = jnp.concatenate([k, new_k])
    v = jnp.concatenate([v, new_v])
    row = row + _attention(q, k, v, _DEC_HEADS, False) @ params["o"]
    h = _layer_norm(row, 1.0, 0.0)
    return row + jax.nn.gelu(h @ params["up"]) @ params["down"]

  return jax.vmap(one)(x, cache)


def _decode_inputs(rows=64):
  g = np.random.default_rng(11)
  names = ("q", "k", "v", "o")
  params = {n: _dense(g, _DEC, _DEC, _DEC) for n in names}
  params["up"] = _dense(g, _DEC, _DEC, _DEC_MLP)
  params["down"] = _dense(g, _DEC_MLP, _DEC_MLP, _DEC)
  x = g.standard_normal((rows, 1, _DEC)).astype(np.float32)
  cache = g.standard_normal((2, rows, _CACHE, _DEC)).astype(np.float32)
  return x, (cache[0], cache[1]), params


def decode():
  """The LLM-decode-shaped case (its description says the shape)."""
  return Case(
    "decode",
    "LLM-decode-shaped layer (d 2048, one token against a 256-token cache, "
    "16 heads, MLP 8192), random weights: make bench",
    _decode,
    _decode_inputs,
    in_axes=(0, 0, None),
    rows_independent=True,
  )
