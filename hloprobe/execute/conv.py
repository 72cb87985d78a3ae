"""Convolutions: HLO `convolution` and cuDNN's forward convolution custom
calls, in numpy.

A convolution is computed as a sum, over the kernel's spatial offsets, of
contractions of the input's feature dimension with the kernel's input
feature dimension (`contraction.contract`, so each runs at the dot
algorithm given, its products summed in float64), as XLA's operation
semantics define it (https://openxla.org/xla/operation_semantics#conv_convolution):
`dim_labels` (`b01f_01io->b01f`) name the batch, feature and spatial
dimensions of input, kernel and output; `window={size stride pad
lhs_dilate rhs_dilate}` gives per spatial dimension the stride, the
padding (negative crops), the input (base) dilation and the kernel
(window) dilation; `feature_group_count` splits the features into groups.
`batch_group_count` > 1 is not modelled.

cuDNN's calls (targets written by XLA's `ConvRewriter` and
`CudnnFusedConvRewriter`, xla/service/gpu/transforms/; names from
xla/service/gpu/cublas_cudnn.h): `__cudnn$convForward` (input, filter) is
the convolution times `conv_result_scale`; `__cudnn$convBiasActivationForward`
(input, filter, bias[, side input]) is, as cuDNN documents
`cudnnConvolutionBiasActivationForward`,
y = act(conv_result_scale * conv(x, w) + side_input_scale * z + bias), the
bias broadcast along the output's feature dimension, `activation_mode`
from `cudnn_conv_backend_config`. Their result is a tuple (y, scratch);
the scratch is given back as zeros. The backward convolutions are not
modelled.

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

import re

import numpy as np

from hloprobe.execute import contraction, shape_ops
from hloprobe.execute.values import Unsupported, numpy_dtype
from hloprobe.ir import HloInstruction

__all__ = [
  "CONV_TARGETS",
  "conv_scales",
  "convolution",
  "cudnn_conv",
]

CONV_TARGETS = (
  "__cudnn$convForward",
  "__cudnn$convBiasActivationForward",
)
_ACTIVATIONS = {
  "kNone": lambda x, a: x,
  "kRelu": lambda x, a: np.maximum(x, 0.0),
  "kRelu6": lambda x, a: np.clip(x, 0.0, 6.0),
  "kElu": lambda x, a: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0))),
  "kLeakyRelu": lambda x, a: np.where(x > 0, x, a * x),
  "kSigmoid": lambda x, a: 1.0 / (1.0 + np.exp(-x)),
  "kTanh": lambda x, a: np.tanh(x),
}


def _labels(inst: HloInstruction):
  """(input, kernel, output) label strings of `dim_labels`."""
  text = inst.attrs.get("dim_labels", "")
  m = re.fullmatch(r"(\w+)_(\w+)->(\w+)", text.strip())
  if not m:
    raise Unsupported(f"dim_labels {text!r}")
  return m.group(1), m.group(2), m.group(3)


def _order(labels: str, first: str, second: str) -> tuple[int, ...]:
  """The dims of `labels` as (first, second, spatial 0, spatial 1, ...)."""
  spatial = sorted((c, i) for i, c in enumerate(labels) if c.isdigit())
  return (labels.index(first), labels.index(second), *(i for _, i in spatial))


def _window(inst: HloInstruction, rank: int):
  """Per spatial dim: (size, stride, pad lo, pad hi, lhs dil, rhs dil)."""
  text = inst.attrs.get("window", "").strip().strip("{}")
  fields = dict(re.findall(r"(\w+)=(\S+)", text))

  def ints(key, default):
    if key not in fields:
      return [default] * rank
    return [int(v) for v in fields[key].split("x")]

  pads = [(0, 0)] * rank
  if "pad" in fields:
    pads = [
      tuple(int(p) for p in v.split("_")) for v in fields["pad"].split("x")
    ]
  return (
    ints("size", 1),
    ints("stride", 1),
    pads,
    ints("lhs_dilate", 1),
    ints("rhs_dilate", 1),
  )


def convolution(
  inst: HloInstruction,
  x: np.ndarray,
  w: np.ndarray,
  algorithm: str,
  tf32_mode: str,
) -> np.ndarray:
  """The convolution `inst` describes of input `x` and kernel `w`, in
  float64 (module docstring), in the output's dimension order.

  Raises:
    Unsupported: batch groups, or attributes it cannot read.
  """
  if int(inst.attrs.get("batch_group_count", "1")) != 1:
    raise Unsupported("a convolution with batch_group_count > 1")
  groups = int(inst.attrs.get("feature_group_count", "1"))
  lhs, rhs, out = _labels(inst)
  xs = np.transpose(x, _order(lhs, "b", "f"))  # (B, F, S...)
  ws = np.transpose(w, _order(rhs, "o", "i"))  # (O, I, S...)
  rank = xs.ndim - 2
  size, stride, pads, lhs_dil, rhs_dil = _window(inst, rank)
  spec = "x".join(
    ["0_0", "0_0"]
    + [f"{lo}_{hi}_{d - 1}" for (lo, hi), d in zip(pads, lhs_dil)]
  )
  zero = np.zeros((), xs.dtype)
  xs = shape_ops.pad(xs, zero, spec)
  sizes = [
    (xs.shape[2 + d] - (size[d] - 1) * rhs_dil[d] - 1) // stride[d] + 1
    for d in range(rank)
  ]
  o, i = ws.shape[0], ws.shape[1]
  if xs.shape[1] != i * groups or o % groups:
    raise Unsupported("feature dimensions do not fit feature_group_count")
  dims = contraction.DotDims((), (), (1,), (1,))
  total = np.zeros((xs.shape[0], *sizes, o), np.float64)
  for offset in np.ndindex(*size):
    window = xs[
      (slice(None), slice(None))
      + tuple(
        slice(
          k * rhs_dil[d], k * rhs_dil[d] + stride[d] * (n - 1) + 1, stride[d]
        )
        for d, (k, n) in enumerate(zip(offset, sizes))
      )
    ]
    kernel = ws[(slice(None), slice(None), *offset)]
    og = o // groups
    for g in range(groups):
      total[..., g * og : (g + 1) * og] += contraction.contract(
        window[:, g * i : (g + 1) * i],
        kernel[g * og : (g + 1) * og],
        dims,
        algorithm,
        tf32_mode,
      ).reshape(total[..., :og].shape)
  # total is (B, S..., O); put it in the output's label order.
  have = ("b", *sorted(c for c in out if c.isdigit()), "f")
  return np.transpose(total, [have.index(c) for c in out])


def conv_scales(inst: HloInstruction) -> dict:
  """`cudnn_conv_backend_config` (empty when absent)."""
  config = inst.backend_config.get("cudnn_conv_backend_config")
  return config if isinstance(config, dict) else {}


def cudnn_conv(
  inst: HloInstruction,
  target: str,
  operands: list[np.ndarray],
  algorithm: str,
  out_dtype: np.dtype,
):
  """A cuDNN forward convolution call (module docstring): its value (the
  tuple of its result shape) and (conv_result_scale, side_input_scale).

  Raises:
    Unsupported: an activation mode not modelled (`_ACTIVATIONS`), or a
      plain convForward with more than two operands.
  """
  config = conv_scales(inst)
  act = _ACTIVATIONS.get(str(config.get("activation_mode", "kNone")))
  if act is None:
    raise Unsupported(f"activation {config.get('activation_mode')}")
  scale = float(config.get("conv_result_scale", 1))
  side_scale = float(config.get("side_input_scale", 0))
  y = scale * convolution(inst, operands[0], operands[1], algorithm, "rne")
  if target == "__cudnn$convBiasActivationForward":
    out_labels = _labels(inst)[2]
    if len(operands) > 2:
      bias = operands[2].astype(np.float64)
      y = y + shape_ops.broadcast(bias, (out_labels.index("f"),), y.shape)
    if len(operands) > 3 and side_scale:
      y = y + side_scale * operands[3].astype(np.float64)
    y = act(y, float(config.get("leakyrelu_alpha", 0)))
  elif len(operands) > 2:
    raise Unsupported("a convForward with more than two operands")
  d = y.astype(out_dtype)
  if not inst.shape.is_tuple:
    return d, (scale, side_scale)
  rest = [
    np.zeros(tuple(e.dims), numpy_dtype(e.dtype))
    for e in inst.shape.elements[1:]
  ]
  return (d, *rest), (scale, side_scale)
