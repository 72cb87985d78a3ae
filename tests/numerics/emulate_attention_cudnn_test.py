"""cuDNN fused attention emulated on the CPU (issue 24, item 2): the
float64 reference and the BF16_BF16_F32 emulation of `cudnn_attention`,
against numpy written here from cuDNN's documented algorithm (softmax(q
k^T / sqrt(64)) v; FlashAttention-2 with f32 sums and exp(S - m) in bf16
for the second matmul: cuDNN frontend docs, operations/Attention), not
from hloprobe. Runs jax on the CPU.
"""

from __future__ import annotations

import dataclasses

import jax
import ml_dtypes
import numpy as np
import pytest
from absl.testing import absltest

from hloprobe.compile import CASES
from hloprobe.errors import EmulationError
from hloprobe.numerics import emulate, reference
from hloprobe.numerics.jaxpr_sites import jaxpr_sites

pytestmark = [pytest.mark.compiles, pytest.mark.cpu_numerics]

_CASE = CASES["cudnn_attention"]
_N = 2


def _numpy_attention(q, k, v, round_e: bool) -> np.ndarray:
  """[B, T, N, H] attention: float64 sums; E rounded to bf16 if asked."""
  q, k, v = (np.asarray(x, np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
  s = np.einsum("bnth,bnsh->bnts", q, k) / 8.0  # 1 / sqrt(64), exact
  e = np.exp(s - s.max(-1, keepdims=True))
  row = e.sum(-1, keepdims=True)
  if round_e:
    e = e.astype(ml_dtypes.bfloat16).astype(np.float64)
  return (np.einsum("bnts,bnsh->bnth", e, v) / row).transpose(0, 2, 1, 3)


class AttentionEmulationTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.args = _CASE.inputs_for(_CASE.full_inputs(), _N)

  def test_one_site_numbered(self):
    (site,) = jaxpr_sites(_CASE.fn, self.args)
    self.assertEqual(site.primitive, "dot_product_attention_fwd_wrapper")

  def test_float64_reference(self):
    refs = reference.References(_CASE, _CASE.full_inputs(), (_N,))
    (out,) = refs.at(_N)
    want = _numpy_attention(*self.args, round_e=False)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-14)

  def test_bf16_emulation(self):
    (out,) = jax.tree_util.tree_leaves(
      emulate.emulate_case(_CASE.fn, self.args, ("BF16_BF16_F32",))
    )
    self.assertEqual(out.dtype, ml_dtypes.bfloat16)
    want = _numpy_attention(*self.args, round_e=True)
    # f32 sums against float64 ones (an E may round to the other bf16
    # neighbour), then one bf16 rounding of the output: within a bf16 ulp of
    # the output's scale (2^-8 of max |O|), and most of them equal.
    got = np.asarray(out, np.float64)
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=2**-8, atol=2**-8 * scale)
    bf16 = lambda x: x.astype(ml_dtypes.bfloat16).astype(np.float64)
    self.assertGreater(np.mean(got == bf16(want)), 0.99)  # 0.9995 seen
    # Without E rounded to bf16 the outputs differ (0.61 equal seen).
    unrounded = _numpy_attention(*self.args, round_e=False)
    self.assertLess(np.mean(got == bf16(unrounded)), 0.9)

  def test_a_sliding_window_is_named_not_emulated(self):
    # The backward is emulated since issue 40 (tests/numerics/emulate_attention_test.py).
    def windowed(q, k, v):
      return jax.nn.dot_product_attention(
        q,
        k,
        v,
        implementation="cudnn",
        is_causal=True,
        local_window_size=(16, 0),
      )

    case = dataclasses.replace(_CASE, fn=windowed)
    with self.assertRaisesRegex(
      EmulationError, "sliding window is not emulated"
    ):
      emulate.emulate_case(case.fn, self.args, ("BF16_BF16_F32",))


if __name__ == "__main__":
  absltest.main()
