"""Convolution sites in the jaxpr and their emulation (issue 24 item 1).

Expected values: numpy float64 convolutions written here as explicit
window loops (no jax, no XLA), with operands rounded to TF32 or BF16 by
integer bit arithmetic on their f32 encodings; the StableHLO op count of
the lowered program (text, counted by a regular expression).
"""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest
from absl.testing import absltest, parameterized
from jax import lax

from hloprobe.compile import get_case
from hloprobe.numerics import emulate
from hloprobe.numerics.emulate_conv import emulated_conv_general_dilated

pytestmark = [pytest.mark.compiles]


def _round_f32_bits(x, keep: int, ties_away: bool) -> np.ndarray:
  """f32 values rounded to `keep` explicit mantissa bits (finite inputs)."""
  bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
  drop = 23 - keep
  half = np.uint64(1 << (drop - 1))
  if ties_away:
    bits = bits + half
  else:  # to nearest even
    odd = (bits >> np.uint64(drop)) & np.uint64(1)
    bits = bits + half - np.uint64(1) + odd
  bits &= ~np.uint64((1 << drop) - 1)
  return bits.astype(np.uint32).view(np.float32)


def _tf32(x):
  return _round_f32_bits(x, 10, ties_away=True)  # cvt.rna.tf32.f32


def _bf16(x):
  return _round_f32_bits(x, 7, ties_away=False)


def _conv_nhwc(x, k, stride=(1, 1), pad=((1, 1), (1, 1)), dil=(1, 1), g=1):
  """float64 NHWC x HWIO convolution by explicit window loops."""
  x = np.pad(np.float64(x), ((0, 0), *pad, (0, 0)))
  kh, kw, cg, o = k.shape
  n, h, w, c = x.shape
  oh = (h - (kh - 1) * dil[0] - 1) // stride[0] + 1
  ow = (w - (kw - 1) * dil[1] - 1) // stride[1] + 1
  og = o // g
  out = np.zeros((n, oh, ow, o))
  for i in range(kh):
    for j in range(kw):
      win = x[
        :,
        i * dil[0] : i * dil[0] + stride[0] * (oh - 1) + 1 : stride[0],
        j * dil[1] : j * dil[1] + stride[1] * (ow - 1) + 1 : stride[1],
        :,
      ]
      for grp in range(g):
        out[..., grp * og : (grp + 1) * og] += np.einsum(
          "nhwc,co->nhwo",
          win[..., grp * cg : (grp + 1) * cg],
          np.float64(k[i, j, :, grp * og : (grp + 1) * og]),
        )
  return out


def _conv_params(x, k, **kw):
  f = lambda a, b: lax.conv_general_dilated(
    a, b, dimension_numbers=("NHWC", "HWIO", "NHWC"), **kw
  )
  return jax.make_jaxpr(f)(x, k).jaxpr.eqns[0].params


class EmulatedConvTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("same", {}, dict(window_strides=(1, 1), padding=((1, 1), (1, 1)))),
    (
      "strided_dilated_grouped",
      dict(stride=(2, 1), pad=((0, 1), (2, 2)), dil=(1, 2), g=2),
      dict(
        window_strides=(2, 1),
        padding=((0, 1), (2, 2)),
        rhs_dilation=(1, 2),
        feature_group_count=2,
      ),
    ),
  )
  def test_against_float64_loops(self, ours, theirs):
    g = np.random.default_rng(7)
    x = g.standard_normal((2, 7, 9, 8)).astype(np.float32)
    k = g.standard_normal((3, 3, 8 // ours.get("g", 1), 6)).astype(np.float32)
    params = _conv_params(x, k, **theirs)
    want = _conv_nhwc(x, k, **ours)
    scale = _conv_nhwc(np.abs(x), np.abs(k), **ours)
    k_size = 9 * k.shape[2]
    for algorithm, rounded in (
      ("F32_F32_F32", lambda v: v),
      ("TF32_TF32_F32", _tf32),
      ("BF16_BF16_F32", _bf16),
    ):
      with self.subTest(algorithm):
        got = np.asarray(emulated_conv_general_dilated(x, k, params, algorithm))
        exact = _conv_nhwc(rounded(x), rounded(k), **ours)
        self.assertEqual(got.shape, want.shape)
        # Only the f32 sums differ from the float64 sum of the rounded
        # operands' exact products: gamma_K * |A||B|.
        gamma = k_size * 2.0**-24 / (1 - k_size * 2.0**-24)
        np.testing.assert_array_less(np.abs(got - exact), gamma * scale + 1e-30)
        if algorithm != "F32_F32_F32":
          self.assertGreater(np.max(np.abs(got - want)), 1e-4)

  def test_batch_groups_are_named_not_emulated(self):
    x = np.ones((4, 5, 5, 2), np.float32)
    k = np.ones((3, 3, 2, 4), np.float32)
    params = _conv_params(
      x, k, window_strides=(1, 1), padding="SAME", batch_group_count=2
    )
    with self.assertRaisesRegex(Exception, "batch_group_count=2"):
      emulated_conv_general_dilated(x, k, params, "F32_F32_F32")


class ConvNetJaxprSitesTest(absltest.TestCase):
  def test_numbered_as_in_stablehlo(self):
    case = get_case("conv_net")
    args = case.inputs_for(case.make_inputs(), 3)
    sites = emulate.jaxpr_sites(case.fn, args)
    self.assertEqual(
      [s.primitive for s in sites],
      ["conv_general_dilated", "conv_general_dilated", "dot_general"],
    )
    text = jax.jit(case.fn).lower(*args).as_text()
    ops = re.findall(r"stablehlo\.(convolution|dot_general)\b", text)
    self.assertEqual(len(ops), len(sites))
    self.assertEqual(ops, ["convolution", "convolution", "dot_general"])

  def test_emulation_rounds_the_convolutions(self):
    """TF32 at the convolutions only: numpy float64 with TF32 operands."""
    case = get_case("conv_net")
    x, k1, b1, k2, b2, w = case.inputs_for(case.make_inputs(), 2)
    got = emulate.emulate_case(
      case.fn,
      (x, k1, b1, k2, b2, w),
      ("TF32_TF32_F32", "TF32_TF32_F32", "F32_F32_F32"),
    )
    relu = lambda v: np.maximum(v, 0.0)
    # The f32 result of the first conv is rounded again to TF32 at the
    # second: compute it in f32 as the emulation does, bias added in f32.
    h = relu(np.float32(_conv_nhwc(_tf32(x), _tf32(k1))) + b1).astype(
      np.float32
    )
    h = relu(_conv_nhwc(_tf32(h), _tf32(k2)) + b2)
    want = h.mean(axis=(1, 2)) @ np.float64(w)
    plain = emulate.emulate_case(case.fn, (x, k1, b1, k2, b2, w), "F32_F32_F32")
    moved = np.max(np.abs(np.float64(plain) - want))
    self.assertGreater(moved, 1e-5)  # TF32 moves it
    np.testing.assert_allclose(got, want, rtol=0, atol=moved / 20)


if __name__ == "__main__":
  absltest.main()
