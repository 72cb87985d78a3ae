"""What cuBLASLt's FP8 gemm computes, emulated in numpy with its scales.

`__cublas$lt$matmul$f8(A, B, a_scale, b_scale)` (XLA's fp8 cuBLASLt
rewrite, `hloprobe.sites` names when it fires) computes, as cuBLASLt
documents its FP8 matmul (https://docs.nvidia.com/cuda/cublas/,
`cublasLtMatmul`, `CUBLASLT_MATMUL_DESC_A_SCALE_POINTER` /
`B_SCALE_POINTER`):

  D = alpha * a_scale * b_scale * (A @ B)

with A and B in f8 (f8e4m3fn or f8e5m2), each product exact (two f8
significands of at most 4 bits multiply into at most 8 bits, exact in f32
and float64), the products summed in f32 (`FP8_ALGORITHM`,
ANY_F8_ANY_F8_F32: "fp8 operands, f32 accumulation"; the FAST_ACCUM
variant's periodic promotion is not modelled) and the scales applied to
the f32 sum. `fp8_gemm` computes that, summing in K order in f32;
`fp8_gemm_bound` is how far any f32 summation order (and the two scale
multiplications) may stray from the exact value, Higham's gamma_{K+1}
times |a_scale * b_scale| * sum_k |A_ik B_kj|: the band a kernel's own
order (tiles, the tensor core's) stays within.

At a dot site of the program (the jaxpr), the fp8 gemm's operands are
already dequantized: f32(A) * a_scale, f32(B) * b_scale. There the FP8
gemm's arithmetic is F32_F32_F32's model (exact products summed in f32;
`jaxpr_algorithm`); it differs from `fp8_gemm` only by where the scales
are applied (on each operand, rounded to f32, or once on the sum), an
f32-rounding difference inside the f32 band. The numpy executor
(`hloprobe.execute`, `blas`) computes the optimized module's FP8 call
itself, with its scales, exactly summed (no order).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

# JAX's DotAlgorithmPreset names (`jax.lax.DotAlgorithmPreset`) that
# `sites.fp8_rewrite` gives an FP8 cuBLASLt gemm: f8 operands, f32
# accumulation; and the same with cuBLASLt's fast accumulation on, not
# emulated (`candidates.chosen_algorithms`).
FP8_ALGORITHM = "ANY_F8_ANY_F8_F32"
FP8_FAST_ACCUM_ALGORITHM = "ANY_F8_ANY_F8_F32_FAST_ACCUM"

__all__ = [
  "FP8_ALGORITHM",
  "FP8_FAST_ACCUM_ALGORITHM",
  "fp8_gemm",
  "fp8_gemm_bound",
  "jaxpr_algorithm",
]

_F32_UNIT = 2.0**-24  # f32's unit roundoff (round to nearest)
_FP8_TYPES = (
  np.dtype(ml_dtypes.float8_e4m3fn),
  np.dtype(ml_dtypes.float8_e5m2),
)


def jaxpr_algorithm(algorithm: str | None) -> str | None:
  """The algorithm that emulates a site's effective `algorithm` on the
  program's (dequantized) operands: F32_F32_F32 for `FP8_ALGORITHM`
  (module docstring), `algorithm` itself otherwise."""
  return "F32_F32_F32" if algorithm == FP8_ALGORITHM else algorithm


def _check(a: np.ndarray, b: np.ndarray) -> None:
  if a.dtype not in _FP8_TYPES or b.dtype not in _FP8_TYPES:
    raise ValueError(
      f"fp8_gemm takes f8e4m3fn or f8e5m2 operands; got {a.dtype} x "
      f"{b.dtype}, e.g. x.astype(ml_dtypes.float8_e4m3fn)"
    )
  if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
    raise ValueError(
      f"fp8_gemm takes A [M, K] and B [K, N]; got {a.shape} x {b.shape}"
    )


def fp8_gemm(
  a: np.ndarray,
  b: np.ndarray,
  a_scale: float,
  b_scale: float,
  out_dtype=np.float32,
) -> np.ndarray:
  """cuBLASLt's FP8 gemm: a_scale * b_scale * (A @ B), summed in f32.

  Args:
    a: A, f8e4m3fn or f8e5m2 [M, K].
    b: B, f8e4m3fn or f8e5m2 [K, N].
    a_scale, b_scale: the f32 scales (rounded to f32 here).
    out_dtype: D's dtype (f32, bf16, f16, or an f8 type: saturated to its
      largest finite value, as XLA's clamp before the convert asks).

  Returns:
    D [M, N] in `out_dtype`: each product exact, summed in K order in
    f32, multiplied by a_scale then b_scale in f32, rounded once to
    `out_dtype`.

  Raises:
    ValueError: operands that are not 2-D f8 matrices of matching K.
  """
  _check(a, b)
  products = (
    a.astype(np.float64)[:, :, None] * b.astype(np.float64)[None, :, :]
  )  # [M, K, N], exact
  acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
  for k in range(a.shape[1]):
    acc = acc + products[:, k, :].astype(np.float32)
  d = acc * np.float32(a_scale) * np.float32(b_scale)
  out = np.dtype(out_dtype)
  if out in _FP8_TYPES:
    top = float(ml_dtypes.finfo(out).max)
    d = np.clip(d, -top, top)
  return d.astype(out)


def fp8_gemm_bound(
  a: np.ndarray, b: np.ndarray, a_scale: float, b_scale: float
) -> np.ndarray:
  """How far `fp8_gemm`'s f32 result (any summation order) may be from
  the exact a_scale * b_scale * (A @ B), per element, in float64:
  gamma_{K+1} * |a_scale * b_scale| * sum_k |A_ik| |B_kj| (K - 1 f32
  additions and two f32 multiplications; Higham, Accuracy and Stability of
  Numerical Algorithms, 2nd ed., section 3.1), before the rounding to D's
  type.

  Raises:
    ValueError: as `fp8_gemm`.
  """
  _check(a, b)
  k = a.shape[1]
  gamma = (k + 1) * _F32_UNIT / (1 - (k + 1) * _F32_UNIT)
  magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
  scale = abs(float(np.float32(a_scale)) * float(np.float32(b_scale)))
  return gamma * scale * magnitude
