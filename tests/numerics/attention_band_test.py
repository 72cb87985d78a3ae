"""A cuDNN fused attention site has a band (issue 24 leftovers, attention).

cuDNN's SDPA runs FlashAttention-2 (cuDNN frontend docs,
operations/Attention) with f32 accumulation and P rounded to the input
type before P v; the band is the site's forward by that algorithm over key
blocks a kernel may use (64, 128 keys) against float64. Expected values
here come from numpy written in this file from the documented algorithm,
in closed form (not the online loop): FlashAttention-2's output is
sum_j exp(m_j - m) bf16(exp(S_j - m_j)) v_j / l, m_j the running row max
after block j, l the exact row sum (Dao, 2023, Algorithm 1); and from the
analytic size of a bf16 rounding of P (|dO| <= 2^-8 P|V| per element,
plus f32 terms far below it).
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest
import recorded
from absl.testing import absltest, parameterized

from hloprobe.compile import CASES
from hloprobe.numerics import emulate_attention, predict, reference

_CASE = CASES["cudnn_attention"]
_BF16 = ml_dtypes.bfloat16


def _inputs(t: int = 128, seed: int = 3):
  """q, k, v: bf16 [1, 2, t, 16] (BNTH), standard normal times 3 (peaked
  rows, so the running max moves between blocks)."""
  g = np.random.default_rng(seed)
  return tuple(
    (3 * g.standard_normal((1, 2, t, 16))).astype(_BF16) for _ in range(3)
  )


def _closed_form(q, k, v, scale, causal, block, rounded):
  """FlashAttention-2's forward in float64, written as a sum over blocks."""
  q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
  s = scale * np.einsum("bnth,bnsh->bnts", q, k)
  t, keys = s.shape[-2:]
  if causal:
    s = np.where(np.arange(keys)[None, :] <= np.arange(t)[:, None], s, -np.inf)
  m = s.max(-1, keepdims=True)
  total = np.exp(s - m).sum(-1, keepdims=True)
  out = np.zeros(q.shape[:-1] + v.shape[-1:])
  for start in range(0, keys, block or keys):
    cut = slice(start, start + (block or keys))
    m_j = s[..., : cut.stop].max(-1, keepdims=True)  # running max
    m_j = np.where(np.isfinite(m_j), m_j, m)  # rows masked so far: P_j = 0
    p = np.exp(s[..., cut] - m_j)
    if rounded:
      p = p.astype(_BF16).astype(np.float64)
    out += np.exp(m_j - m) * (p @ v[..., cut, :])
  return out / total


class FlashForwardTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("whole_rows", None, False),
    ("blocks_64", 64, False),
    ("blocks_32_causal", 32, True),
    ("blocks_64_causal", 64, True),
  )
  def test_float64_is_softmax(self, block, causal):
    q, k, v = _inputs()
    got = emulate_attention.flash_forward(
      q, k, v, 0.25, causal, block, None, np.float64
    )
    want = _closed_form(q, k, v, 0.25, causal, None, False)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)

  @parameterized.named_parameters(
    ("whole_rows", None, False),
    ("blocks_64", 64, False),
    ("blocks_32_causal", 32, True),
  )
  def test_bf16_p_rounded_against_the_running_max(self, block, causal):
    q, k, v = _inputs()
    got = emulate_attention.flash_forward(
      q, k, v, 0.25, causal, block, _BF16, np.float64
    )
    want = _closed_form(q, k, v, 0.25, causal, block, True)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    if block is not None:  # the block size shows (P rounded per block)
      whole = _closed_form(q, k, v, 0.25, causal, None, True)
      self.assertGreater(np.max(np.abs(got - whole)), 1e-6)

  def test_f32_near_float64(self):
    q, k, v = _inputs()
    got = emulate_attention.flash_forward(
      q, k, v, 0.25, False, 64, None, np.float32
    )
    self.assertEqual(got.dtype, np.float32)
    want = _closed_form(q, k, v, 0.25, False, None, False)
    scale = _closed_form(q, k, np.abs(v), 0.25, False, None, False)
    self.assertLess(np.max(np.abs(got - want) / scale), 1e-5)


@pytest.mark.compiles
class SiteBandTest(absltest.TestCase):
  """The band of `cudnn_attention`'s site on the recorded h100 compile
  (its float64 reference and emulation run here, on the CPU)."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.rec = recorded.load("cudnn_attention_h100_n2_bfloat16")
    cls.prediction = recorded.prediction(_CASE, cls.rec)
    q, k, v = (
      np.asarray(x, np.float64).transpose(0, 2, 1, 3)
      for x in _CASE.inputs_for(_CASE.full_inputs(), 2)
    )
    cls.qkv = q, k, v
    cls.exact = _closed_form(q, k, v, 0.125, False, None, False)
    cls.pv = _closed_form(q, k, np.abs(v), 0.125, False, None, False)

  def test_band_present(self):
    (band,) = self.prediction.bands
    self.assertIsNotNone(band)
    self.assertEqual(
      (band.site, band.algorithm, band.K), (0, "BF16_BF16_F32", 64)
    )
    # Its operand scale is P|V| at the largest size (n = 2 here).
    self.assertAlmostEqual(band.operand_scale_max, self.pv.max(), places=9)

  def test_band_covers_bf16_p_at_every_block_size(self):
    (band,) = self.prediction.bands
    for block in (None, 64, 128):
      rounded = _closed_form(*self.qkv, 0.125, False, block, True)
      self.assertLessEqual(
        np.max(np.abs(rounded - self.exact)), band.worst_abs * (1 + 1e-3)
      )
    # No bigger than a bf16 rounding of every P (plus f32 terms).
    self.assertLessEqual(band.worst_abs, 2.0**-8 * self.pv.max())
    self.assertGreater(band.worst_abs, 2.0**-14 * self.pv.max())
    self.assertLess(band.expected_abs, band.worst_abs)

  def test_f32_band_is_f32_sized(self):
    fates = recorded.fates(self.rec)
    f32 = [
      dataclasses.replace(f, effective_algorithm="F32_F32_F32") for f in fates
    ]
    full = _CASE.full_inputs()
    refs = reference.References(_CASE, full, (2,))
    (band,) = (
      predict.Predictor(_CASE, full, refs).predict(2, tuple(f32), None).bands
    )
    self.assertEqual(band.algorithm, "F32_F32_F32")
    self.assertLess(band.worst_abs, 2.0**-20 * self.pv.max())


if __name__ == "__main__":
  absltest.main()
