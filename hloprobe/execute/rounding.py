"""The operand rounding of dot algorithms, in numpy.

The same rules as `hloprobe.numerics.rounding` (whose docstring gives the
sources: XLA's Triton emitter `stablehlo_lower_to_triton.cc`
`InferDotPrecision` and `SplitF32`, Triton's `F32DotTC.cpp`, and
`algorithm_util.cc` `GetBlasComputationType` for cuBLAS; checked there on
jaxlib 0.10.2 in the PTX), written again on numpy arrays so that the
executor shares no code with JAX:

  TF32: 10 explicit mantissa bits, f32 exponent range; 'rna' (ties away
    from zero, PTX cvt.rna.tf32.f32) for XLA's Triton gemms, 'rne' (ties to
    even) as the model of cuBLAS/cuBLASLt. NVIDIA does not document how
    cuBLAS rounds f32 to TF32 (CUBLAS_COMPUTE_32F_FAST_TF32 says only that
    tensor cores may run TF32); 'rne' is TensorFlow's own TF32 simulation
    (tensorflow PR 127577). The prediction's emulation rounds those sites
    'rna' (`hloprobe.numerics.rounding`): the two differ on exact ties
    only (the 13 dropped bits 0x1000), so a made-check and a prediction
    of one cuBLAS site may differ there.
  BF16: `ml_dtypes.bfloat16` conversion, round to nearest even (XLA's
    `convert`, PTX cvt.rn.bf16.f32).
  F16: `numpy.float16` conversion, round to nearest even.
  Splits: BF16 parts are successive remainders rounded to bf16 (the f32
    difference is exact); TF32_X3 is (rna(x), rna(x - rna(x))).

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = [
  "round_to_bf16",
  "round_to_f16",
  "round_to_tf32",
  "split_bf16",
  "split_tf32",
]

_TF32_DROPPED_BITS = 13  # 23 f32 mantissa bits, 10 kept


def round_to_tf32(x: np.ndarray, mode: str) -> np.ndarray:
  """f32 values rounded to TF32; f32 out, inf and nan unchanged.

  Args:
    x: any real array, converted to f32 first.
    mode: 'rna' (ties away from zero) or 'rne' (ties to even).
  """
  x = np.asarray(x, dtype=np.float32)
  flat = x.reshape(-1)  # an array, never a scalar: ufuncs wrap silently
  bits = flat.view(np.uint32)
  # In uint32: a finite value's bits plus at most 2^12 stay below 2^32
  # (the largest, -max f32, is 0xFF7FFFFF), so nothing wraps that
  # np.where keeps; inf and nan are given back as they are.
  half = np.uint32(1 << (_TF32_DROPPED_BITS - 1))
  if mode == "rna":
    out = np.add(bits, half)
  else:
    out = np.right_shift(bits, np.uint32(_TF32_DROPPED_BITS))
    np.bitwise_and(out, np.uint32(1), out=out)  # the kept lsb: ties to even
    np.add(out, bits, out=out)
    np.add(out, half - np.uint32(1), out=out)
  mask = np.uint32((0xFFFFFFFF << _TF32_DROPPED_BITS) & 0xFFFFFFFF)
  np.bitwise_and(out, mask, out=out)
  rounded = out.view(np.float32)
  return np.where(np.isfinite(flat), rounded, flat).reshape(x.shape)


def round_to_bf16(x: np.ndarray) -> np.ndarray:
  """Values rounded to bfloat16 (nearest even); f32 out."""
  return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def round_to_f16(x: np.ndarray) -> np.ndarray:
  """Values rounded to float16 (nearest even, f16's exponent range); f32
  out."""
  return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)


def split_bf16(x: np.ndarray, parts: int) -> tuple[np.ndarray, ...]:
  """f32 values split into `parts` bf16-representable f32 pieces, high
  first: each the remainder so far rounded to bf16."""
  rest = np.asarray(x, np.float32)
  pieces = []
  for _ in range(parts):
    piece = round_to_bf16(rest)
    pieces.append(piece)
    rest = (rest - piece).astype(np.float32)
  return tuple(pieces)


def split_tf32(x: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
  """(high, low) TF32 parts of f32 values, as Triton's TF32x3 takes them."""
  x = np.asarray(x, np.float32)
  high = round_to_tf32(x, mode)
  return high, round_to_tf32((x - high).astype(np.float32), mode)
