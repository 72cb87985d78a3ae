"""A user's own model, as the README's "your own program" shows it: dense
-> layernorm -> gelu -> dense, the parameters shared (`in_axes=(None, 0)`),
x f32[n, 128] batched along axis 0 (issue 39).

`tests/report/explain_user_model_test.py` explains it on cpu, a100 and t4.
"""

import jax
import numpy as np

import hloprobe


def layernorm(h, gain, bias):
  mean = h.mean(axis=-1, keepdims=True)
  var = ((h - mean) ** 2).mean(axis=-1, keepdims=True)
  return (h - mean) * jax.lax.rsqrt(var + 1e-5) * gain + bias


def model(params, x):
  w1, b1, gain, bias, w2 = params
  h = x @ w1 + b1
  h = jax.nn.gelu(layernorm(h, gain, bias))
  return h @ w2


def inputs():
  g = np.random.default_rng(39)
  x = g.standard_normal((9, 128)).astype(np.float32)
  w1 = (g.standard_normal((128, 256)) / np.sqrt(128)).astype(np.float32)
  b1 = g.standard_normal(256).astype(np.float32)
  gain = np.ones(256, np.float32)
  bias = np.zeros(256, np.float32)
  w2 = (g.standard_normal((256, 16)) / np.sqrt(256)).astype(np.float32)
  return (w1, b1, gain, bias, w2), x


def make_case():
  return hloprobe.Case(
    name="my_model",
    description="dense -> layernorm -> gelu -> dense",
    fn=model,
    make_inputs=inputs,
    in_axes=(None, 0),
  )
