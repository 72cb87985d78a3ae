"""Convolutions in the executor against a direct loop over the definition
of XLA's operation semantics (input coordinate = output * stride + kernel
offset * rhs_dilate - pad_low, on the lhs-dilated input), and cuDNN's
bias-activation formula."""

from __future__ import annotations

import itertools

import numpy as np
from absl.testing import absltest, parameterized

from hloprobe.execute import execute_module
from hloprobe.ir import parse_hlo_module


def _direct(x, w, stride, pad_lo, lhs_dil, rhs_dil, groups, out_hw):
  """x (B, H, W, F) b01f, w (KH, KW, I, O) 01io -> (B, OH, OW, O)."""
  b, h, wd, f = x.shape
  kh, kw, i, o = w.shape
  og = o // groups
  out = np.zeros((b, *out_hw, o))
  for n, oy, ox, oc in itertools.product(
    range(b), range(out_hw[0]), range(out_hw[1]), range(o)
  ):
    g = oc // og
    total = 0.0
    for ky, kx, ic in itertools.product(range(kh), range(kw), range(i)):
      coords = []
      for o_, k, s, p, ld, rd, size in (
        (oy, ky, stride[0], pad_lo[0], lhs_dil[0], rhs_dil[0], h),
        (ox, kx, stride[1], pad_lo[1], lhs_dil[1], rhs_dil[1], wd),
      ):
        c = o_ * s + k * rd - p
        if c < 0 or c % ld or c // ld >= size:
          break
        coords.append(c // ld)
      else:
        total += x[n, coords[0], coords[1], g * i + ic] * w[ky, kx, ic, oc]
    out[n, oy, ox, oc] = total
  return out


def _conv_module(x_shape, w_shape, out_shape, window, groups=1):
  def t(s):
    return "f32[" + ",".join(map(str, s)) + "]"

  return f"""HloModule m, entry_computation_layout={{({t(x_shape)}{{3,2,1,0}}, {t(w_shape)}{{3,2,1,0}})->{t(out_shape)}{{3,2,1,0}}}}

ENTRY %main (x: {t(x_shape)}, w: {t(w_shape)}) -> {t(out_shape)} {{
  %x = {t(x_shape)}{{3,2,1,0}} parameter(0)
  %w = {t(w_shape)}{{3,2,1,0}} parameter(1)
  ROOT %c = {t(out_shape)}{{3,2,1,0}} convolution(%x, %w), window={{{window}}}, dim_labels=b01f_01io->b01f, feature_group_count={groups}
}}
"""


class ConvolutionTest(parameterized.TestCase):
  @parameterized.named_parameters(
    (
      "same",
      (1, 5, 5, 2),
      (3, 3, 2, 3),
      "size=3x3 pad=1_1x1_1",
      1,
      (1, 1),
      (1, 1),
      (1, 1),
      (1, 1),
    ),
    (
      "strided_dilated",
      (2, 7, 6, 2),
      (2, 3, 2, 2),
      "size=2x3 stride=2x1 pad=0_1x2_0 rhs_dilate=2x1",
      1,
      (2, 1),
      (0, 2),
      (1, 1),
      (2, 1),
    ),
    (
      "grouped",
      (1, 4, 4, 4),
      (3, 3, 2, 4),
      "size=3x3 pad=1_1x1_1",
      2,
      (1, 1),
      (1, 1),
      (1, 1),
      (1, 1),
    ),
    (
      "lhs_dilated",
      (1, 3, 3, 1),
      (2, 2, 1, 1),
      "size=2x2 pad=1_1x1_1 lhs_dilate=2x2",
      1,
      (1, 1),
      (1, 1),
      (2, 2),
      (1, 1),
    ),
  )
  def test_against_the_definition(
    self, x_shape, w_shape, window, groups, stride, pad_lo, lhs_dil, rhs_dil
  ):
    g = np.random.default_rng(6)
    x = g.integers(-3, 4, x_shape).astype(np.float32)
    w = g.integers(-3, 4, w_shape).astype(np.float32)
    # Output size from the window (its definition), then the module.
    fields = dict(f.split("=") for f in window.split())
    pads = [tuple(map(int, p.split("_"))) for p in fields["pad"].split("x")]
    out_hw = []
    for d in range(2):
      dilated = (x_shape[1 + d] - 1) * lhs_dil[d] + 1 + sum(pads[d])
      span = (w_shape[d] - 1) * rhs_dil[d] + 1
      out_hw.append((dilated - span) // stride[d] + 1)
    out_shape = (x_shape[0], *out_hw, w_shape[3])
    text = _conv_module(x_shape, w_shape, out_shape, window, groups)
    run = execute_module(parse_hlo_module(text), [x, w])
    self.assertEmpty(run.not_executed)
    want = _direct(x, w, stride, pad_lo, lhs_dil, rhs_dil, groups, out_hw)
    np.testing.assert_array_equal(run.outputs[0], want)
    self.assertEqual(run.gemms[0].kind, "convolution")

  def test_cudnn_bias_activation(self):
    text = """HloModule m, entry_computation_layout={(f32[1,4,4,2]{3,2,1,0}, f32[3,3,2,3]{3,2,1,0}, f32[3]{0}, f32[1,4,4,3]{3,2,1,0})->f32[1,4,4,3]{3,2,1,0}}

ENTRY %main (x: f32[1,4,4,2], w: f32[3,3,2,3], b: f32[3], z: f32[1,4,4,3]) -> f32[1,4,4,3] {
  %x = f32[1,4,4,2]{3,2,1,0} parameter(0)
  %w = f32[3,3,2,3]{3,2,1,0} parameter(1)
  %b = f32[3]{0} parameter(2)
  %z = f32[1,4,4,3]{3,2,1,0} parameter(3)
  %cc = (f32[1,4,4,3]{3,2,1,0}, u8[0]{0}) custom-call(%x, %w, %b, %z), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, custom_call_target="__cudnn$convBiasActivationForward", backend_config={"cudnn_conv_backend_config":{"activation_mode":"kRelu","conv_result_scale":2,"side_input_scale":0.5,"leakyrelu_alpha":0}}
  ROOT %y = f32[1,4,4,3]{3,2,1,0} get-tuple-element(%cc), index=0
}
"""
    g = np.random.default_rng(7)
    x = g.integers(-3, 4, (1, 4, 4, 2)).astype(np.float32)
    w = g.integers(-3, 4, (3, 3, 2, 3)).astype(np.float32)
    b = g.integers(-3, 4, (3,)).astype(np.float32)
    z = g.integers(-3, 4, (1, 4, 4, 3)).astype(np.float32)
    run = execute_module(parse_hlo_module(text), [x, w, b, z])
    conv = _direct(x, w, (1, 1), (1, 1), (1, 1), (1, 1), 1, (4, 4))
    want = np.maximum(2 * conv + 0.5 * z + b, 0)
    np.testing.assert_array_equal(run.outputs[0], want)
    (call,) = run.gemms
    self.assertEqual(
      (call.kind, call.alpha, call.beta, call.epilogue, call.has_bias),
      ("cudnn conv", 2.0, 0.5, "kRelu", True),
    )


if __name__ == "__main__":
  absltest.main()
