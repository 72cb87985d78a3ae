"""cuBLAS and cuBLASLt gemm custom calls, as the libraries define them.

What the call computes (cuBLAS `cublasGemmEx` and cuBLASLt `cublasLtMatmul`
documentation, https://docs.nvidia.com/cuda/cublas/: D = alpha * op(A) @
op(B) + beta * C; `CUBLASLT_EPILOGUE_BIAS` adds the bias vector,
broadcast, "before applying the final postprocessing"; RELU is max(x, 0);
GELU is the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
x^3))), which is the pattern XLA fuses into it):

  D = epilogue(alpha * (A @ B) + beta * C + bias)

and for `__cublas$lt$matmul$f8` (cuBLASLt's FP8 scaling):

  D = d_scale * epilogue(alpha * a_scale * b_scale * (A @ B)
                         + beta * c_scale * C + bias)

Which operand is which is XLA's (xla/service/gpu/transforms/gemm_rewriter.cc,
openxla/xla at 01631ca8, read for this module; the calls jaxlib 0.10.2 and
0.12.0.1 compile for the a100/h100/t4 fixtures under tests/execute and
tests/testdata/compiles follow it, the FP8 call's A, B, a_scale,
b_scale included: fp8_scaled_matmul_h100_n8_default_no_triton_gemm, both
releases, run by tests/numerics/emulate_fp8_test.py): A and B first; a matrix
bias C is inserted at index 2 when `FuseMatrixBiasAdd` sets beta to 1 (so
C exists exactly when beta != 0); a vector bias is appended by
`FuseVectorBiasAdd` with epilogue BIAS (then BIAS_RELU / BIAS_GELU by the
activation fusions); the FP8 call has A, B, [C], the f32 scalar scales
(a_scale, b_scale, then d_scale appended by `F8ConvertD`, or c_scale and
d_scale in releases that pass four) and the bias, told apart here by rank
(scales are scalars). The vector bias covers the output's most minor
physical dimensions (`FuseVectorBiasAdd` checks the layouts): bias
dimension `bias_minor_to_major[i]` is output dimension
`output_minor_to_major[i]`. The result is a tuple whose last element is
the s8 workspace (given back as zeros), after the aux output of the *_AUX
epilogues (the pre-activation value) or the f32 d_amax of an FP8 call
with `damax_output`.

All of it is computed in float64 on the products of `contraction` (TF32
rounded 'rne', the cuBLAS model) and rounded once to D's type (an FP8 D
saturates at the type's largest finite value, as XLA's fused clamp asks).

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

import dataclasses
import math

import ml_dtypes
import numpy as np

from hloprobe.execute import contraction, shape_ops
from hloprobe.execute.values import Unsupported, minor_to_major
from hloprobe.ir import HloInstruction

__all__ = [
  "GEMM_TARGETS",
  "GemmFields",
  "gemm_fields",
  "run_gemm",
]

GEMM_TARGETS = (
  "__cublas$gemm",
  "__cublas$lt$matmul",
  "__cublas$lt$matmul$f8",
)
_EPILOGUES = (
  "DEFAULT",
  "BIAS",
  "RELU",
  "BIAS_RELU",
  "GELU",
  "BIAS_GELU",
  "GELU_AUX",
  "BIAS_GELU_AUX",
)


@dataclasses.dataclass(frozen=True, slots=True)
class GemmFields:
  """The `gemm_backend_config` fields a gemm's value depends on."""

  dims: contraction.DotDims
  alpha: complex
  beta: float
  epilogue: str
  damax_output: bool


def gemm_fields(inst: HloInstruction) -> GemmFields:
  """Reads `backend_config.gemm_backend_config`.

  Raises:
    Unsupported: no gemm_backend_config, no alpha_real, or an epilogue not
      in `_EPILOGUES` (the D_* backward epilogues are not modelled).
  """
  config = inst.backend_config.get("gemm_backend_config")
  if not isinstance(config, dict):
    raise Unsupported("no gemm_backend_config")
  if "alpha_real" not in config:
    raise Unsupported("gemm_backend_config has no alpha_real")
  numbers = config.get("dot_dimension_numbers", {})

  def dims(key):
    return tuple(int(d) for d in numbers.get(key, []))

  epilogue = str(config.get("epilogue", "DEFAULT"))
  if epilogue not in _EPILOGUES:
    raise Unsupported(f"epilogue {epilogue} is not modelled")
  return GemmFields(
    dims=contraction.DotDims(
      lhs_batch=dims("lhs_batch_dimensions"),
      rhs_batch=dims("rhs_batch_dimensions"),
      lhs_contracting=dims("lhs_contracting_dimensions"),
      rhs_contracting=dims("rhs_contracting_dimensions"),
    ),
    alpha=complex(
      float(config["alpha_real"]), float(config.get("alpha_imag", 0))
    ),
    beta=float(config.get("beta", 0)),
    epilogue=epilogue,
    damax_output=bool(config.get("damax_output", False)),
  )


def run_gemm(
  inst: HloInstruction,
  target: str,
  operands: list[np.ndarray],
  layouts: list[str | None],
  out_dtype: np.dtype,
  algorithm: str,
) -> tuple[tuple | np.ndarray, GemmFields, bool]:
  """Computes a gemm custom call (module docstring).

  Args:
    inst: the custom-call instruction.
    target: its custom_call_target, one of `GEMM_TARGETS`.
    operands: its operand values (logical order).
    layouts: each operand's printed layout.
    out_dtype: the dtype D is held in.
    algorithm: the preset of the product.

  Returns:
    (the value: D, or the tuple of the result shape; the fields; whether a
    vector bias was added).

  Raises:
    Unsupported: a complex alpha, operands that do not fit the fields, or
      a result tuple element it cannot tell.
  """
  fields = gemm_fields(inst)
  if fields.alpha.imag:
    raise Unsupported("a complex alpha")
  a, b, rest = operands[0], operands[1], list(zip(operands[2:], layouts[2:]))
  c = rest.pop(0)[0] if fields.beta != 0 else None
  scales = []
  if target.endswith("$f8"):
    while rest and rest[0][0].ndim == 0:
      scales.append(float(rest.pop(0)[0]))
  has_bias = fields.epilogue.startswith("BIAS")
  bias = rest.pop(0) if has_bias else None
  while rest and rest[0][0].ndim == 0 and target.endswith("$f8"):
    scales.append(float(rest.pop(0)[0]))
  if rest:
    raise Unsupported(f"{len(rest)} operands more than the fields explain")
  a_scale, b_scale, c_scale, d_scale = _scales(scales, target)
  element0 = inst.shape.elements[0] if inst.shape.is_tuple else inst.shape
  out_dims = tuple(element0.dims)
  # cuBLAS's TF32 rounding is not NVIDIA's word: 'rne' is the model
  # (`rounding`'s docstring gives the source and how it differs from the
  # prediction's 'rna').
  acc = contraction.contract(a, b, fields.dims, algorithm, tf32_mode="rne")
  if acc.shape != out_dims:
    raise Unsupported(f"product shape {acc.shape} is not D's {out_dims}")
  pre = fields.alpha.real * a_scale * b_scale * acc
  if c is not None:
    pre = pre + fields.beta * c_scale * c.astype(np.float64)
  if bias is not None:
    pre = pre + _broadcast_bias(bias[0], bias[1], element0)
  post = _activation(fields.epilogue, pre)
  amax = float(np.max(np.abs(post))) if post.size else 0.0
  d = _round_out(d_scale * post, out_dtype)
  if not inst.shape.is_tuple:
    return d, fields, has_bias
  values = [d]
  for element in inst.shape.elements[1:]:
    if element.dtype == "s8":
      values.append(np.zeros(tuple(element.dims), np.int8))
    elif fields.epilogue.endswith("_AUX") and tuple(element.dims) == out_dims:
      values.append(_round_out(pre, out_dtype))
    elif fields.damax_output and not element.dims:
      values.append(np.asarray(amax, np.float32))
    else:
      raise Unsupported(f"result element {element} of a {target}")
  return tuple(values), fields, has_bias


def _scales(scales: list[float], target: str):
  """(a_scale, b_scale, c_scale, d_scale) from the scalars given."""
  if not target.endswith("$f8"):
    return 1.0, 1.0, 1.0, 1.0
  if len(scales) == 2:
    return scales[0], scales[1], 1.0, 1.0
  if len(scales) == 3:
    return scales[0], scales[1], 1.0, scales[2]
  if len(scales) == 4:
    return tuple(scales)
  raise Unsupported(f"an FP8 gemm with {len(scales)} scale operands")


def _broadcast_bias(bias: np.ndarray, layout, out_shape) -> np.ndarray:
  """The vector bias over D's most minor physical dims (module docstring)."""
  out_m2m = minor_to_major(out_shape.layout, len(out_shape.dims))
  bias_m2m = minor_to_major(layout, bias.ndim)
  if bias.ndim > len(out_m2m):
    raise Unsupported(f"bias of rank {bias.ndim} for D {out_shape}")
  dims = [0] * bias.ndim
  for i in range(bias.ndim):
    dims[bias_m2m[i]] = out_m2m[i]
  return shape_ops.broadcast(
    bias.astype(np.float64), tuple(dims), tuple(out_shape.dims)
  )


def _activation(epilogue: str, x: np.ndarray) -> np.ndarray:
  if "RELU" in epilogue:
    return np.maximum(x, 0.0)
  if "GELU" in epilogue:
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
    return 0.5 * x * (1.0 + np.tanh(inner))
  return x


def _round_out(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
  dtype = np.dtype(dtype)
  if dtype.itemsize == 1 and dtype.kind == "V":
    top = float(ml_dtypes.finfo(dtype).max)
    x = np.clip(x, -top, top)
  return x.astype(dtype)
