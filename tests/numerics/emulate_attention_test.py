"""cuDNN attention as users call it (issue 40, item 4):
`jax.nn.dot_product_attention(..., implementation="cudnn")` with a bias, a
causal mask, padding (sequence lengths) and grouped-query attention,
forward and backward (jax-ml/jax#32242's form: bf16 q/k/v, an f32 bias),
emulated against float64 with a band and a verdict; the bias's other
dtype is named.

Expected values are numpy float64 written here: softmax(scale q k^T +
bias) v with the masks, and the textbook softmax backward (dV = P^T dO,
dS = P (dO V^T - rowsum(dO O)), dQ = scale dS K, dK = scale dS^T Q) for
the loss sum(O^2) (dO = 2 O), never hloprobe's emulation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from absl.testing import absltest

from hloprobe import engine
from hloprobe.compile import Case
from hloprobe.numerics import emulate, reference
from hloprobe.numerics.jaxpr_sites import jaxpr_sites
from hloprobe.report.verdict_words import prediction_words

pytestmark = [pytest.mark.compiles, pytest.mark.cpu_numerics]

_B, _T, _N, _H = 2, 64, 4, 32
_SCALE = 1 / np.sqrt(_H)


def _forward(q, k, v, bias):
  return jax.nn.dot_product_attention(
    q, k, v, bias=bias, is_causal=True, implementation="cudnn"
  )


def _loss(q, k, v, bias):
  return jnp.sum(_forward(q, k, v, bias).astype(jnp.float32) ** 2)


def _fwd_bwd(q, k, v, bias):
  """The forward and the gradients of sum(O^2) w.r.t. q, k, v."""
  return _forward(q, k, v, bias), jax.grad(_loss, argnums=(0, 1, 2))(
    q, k, v, bias
  )


def _inputs():
  g = np.random.default_rng(32242)
  qkv = (
    g.standard_normal((_B, _T, _N, _H)).astype(ml_dtypes.bfloat16)
    for _ in range(3)
  )
  bias = g.standard_normal((1, _N, _T, _T)).astype(np.float32)
  return (*qkv, bias)


def _bias_case():
  return Case(
    "attn_bias",
    "bf16 attention, f32 bias, causal, forward and backward",
    _fwd_bwd,
    _inputs,
    in_axes=(0, 0, 0, None),
  )


def _numpy(q, k, v, bias=None, causal=False, q_len=None, kv_len=None):
  """O, and the gradients of sum(O^2): [B, T, N, H] in float64. k and v
  may have fewer heads (each shared by N / N_kv query heads)."""
  q, k, v = (np.asarray(x, np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
  g = q.shape[1] // k.shape[1]
  kr, vr = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
  s = np.einsum("bnth,bnsh->bnts", q, kr) * _SCALE
  if bias is not None:
    s = s + np.asarray(bias, np.float64)
  t, keys = s.shape[-2:]
  keep = np.ones((1, 1, t, keys), bool)
  if causal:
    keep = keep & (np.arange(keys)[None, :] <= np.arange(t)[:, None])
  rows = np.ones((s.shape[0], 1, t, 1), bool)
  if kv_len is not None:
    keep = keep & (np.arange(keys) < np.asarray(kv_len)[:, None, None, None])
    rows = (
      np.arange(t)[None, None, :, None] < np.asarray(q_len)[:, None, None, None]
    )
  s = np.where(keep, s, -np.inf)
  p = np.exp(s - s.max(-1, keepdims=True))
  p = np.where(rows, p / p.sum(-1, keepdims=True), 0)
  o = p @ vr
  d_o = 2 * o
  dv = np.swapaxes(p, -1, -2) @ d_o
  ds = p * (d_o @ np.swapaxes(vr, -1, -2) - (d_o * o).sum(-1, keepdims=True))
  dq = ds @ kr * _SCALE
  dk = np.swapaxes(ds, -1, -2) @ q * _SCALE

  def heads(x):
    b, n, tt, h = x.shape
    return x.reshape(b, n // g, g, tt, h).sum(axis=2)

  back = lambda x: x.transpose(0, 2, 1, 3)
  return back(o), (back(dq), back(heads(dk)), back(heads(dv)))


class BiasCausalTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.case = _bias_case()
    cls.args = cls.case.inputs_for(cls.case.full_inputs(), 2)

  def test_forward_and_backward_are_sites(self):
    sites = [s.primitive for s in jaxpr_sites(self.case.fn, self.args)]
    self.assertEqual(sites.count("dot_product_attention_bwd_wrapper"), 1)
    self.assertEqual(sites.count("dot_product_attention_fwd_wrapper"), 2)

  def test_float64_reference_is_numpy_float64(self):
    refs = reference.References(self.case, self.case.full_inputs(), (2,))
    got = refs.at(2)
    o, grads = _numpy(*self.args, causal=True)
    for have, want in zip(got, (o, *grads)):
      np.testing.assert_allclose(have, want, rtol=1e-9, atol=1e-9)

  def test_bf16_emulation_is_near_float64(self):
    sites = jaxpr_sites(self.case.fn, self.args)
    out = jax.tree_util.tree_leaves(
      emulate.emulate_case(
        self.case.fn, self.args, ("BF16_BF16_F32",) * len(sites)
      )
    )
    o, grads = _numpy(*self.args, causal=True)
    for have, want in zip(out, (o, *grads)):
      self.assertEqual(have.dtype, ml_dtypes.bfloat16)
      # bf16 P and dS (2^-8 relative), f32 sums: a few bf16 steps of the
      # output's scale, far from an unmasked or unbiased answer.
      scale = np.abs(want).max()
      np.testing.assert_allclose(
        np.asarray(have, np.float64), want, atol=2**-5 * scale
      )


class PaddingGqaTest(absltest.TestCase):
  def test_padding_and_grouped_query_heads_in_float64(self):
    g = np.random.default_rng(40)
    q = g.standard_normal((2, 32, 4, 16)).astype(ml_dtypes.bfloat16)
    k, v = (
      g.standard_normal((2, 32, 2, 16)).astype(ml_dtypes.bfloat16)
      for _ in range(2)
    )
    q_len, kv_len = np.array([32, 20], np.int32), np.array([32, 24], np.int32)

    def fn(q, k, v):
      return jax.nn.dot_product_attention(
        q,
        k,
        v,
        implementation="cudnn",
        query_seq_lengths=q_len,
        key_value_seq_lengths=kv_len,
        scale=float(_SCALE),
      )

    case = Case("pad_gqa", "padding and GQA", fn, lambda: (q, k, v))
    (got,) = reference.References(case, case.full_inputs(), (2,)).at(2)
    want, _ = _numpy(q, k, v, q_len=q_len, kv_len=kv_len)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    self.assertTrue(np.all(got[1, 20:] == 0))  # padded queries: zeros


class H100SweepTest(absltest.TestCase):
  def test_a_band_and_a_verdict_with_the_bias_dtype_named(self):
    spec = engine.SweepSpec((_bias_case(),), (2,), ("bfloat16",), ("h100",))
    (r,) = engine.run_sweep(spec)
    self.assertTrue(r.ok, r.failure)
    p = r.prediction
    self.assertIsNotNone(p, r.prediction_error)
    forward = [b for b in p.bands if b is not None]
    self.assertEqual(len(forward), 2)  # the two forwards' measured bands
    self.assertTrue(all(b.worst_abs > 0 for b in forward))
    self.assertIn("bias float32, q/k/v bfloat16", prediction_words(p))


if __name__ == "__main__":
  absltest.main()
