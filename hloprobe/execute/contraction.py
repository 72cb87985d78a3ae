"""One contraction (a dot, the product inside a gemm) at a dot algorithm,
in numpy.

The model of an algorithm (`hloprobe.numerics.emulate_dot` defines the
same ones on jax arrays; `ir.ALGORITHMS` lists them): each operand is
rounded to the algorithm's storage type (`rounding`); a split algorithm
(BF16_BF16_F32_X3/_X6/_X9, TF32_TF32_F32_X3) adds the products of the
pairs of parts XLA's Triton emitter multiplies (`_PAIRS`, from
`stablehlo_lower_to_triton.cc` `EmitBF16x3Matmul` / `x6` / `x9`: the pairs
whose part indices sum to at most 0, 1 (X3), 2 (X6) or 4 (X9)). Every
product of rounded parts is exact in float64 (at most 2 x 24 significant
bits) and the products are summed in float64; the caller rounds the sum
once to the output type. The pairs are multiplied as fewer, larger
products of sums of parts (`_RECTANGLES`: X3 two, X6 three, X9 one),
each as exact as a pair's. The summation order of the kernel (K tiles,
split-K, the tensor core's own order) is not modelled: the f32 band
(Higham's gamma_K) covers what it can change, and F32_F32_F32 here is the
f32 dot with its sums made exact. BF16_BF16_BF16 and F16_F16_F16 round
the float64 sum to the 16-bit type once, not each partial sum. Not
modelled either: the Triton emitter's zeroing of a non-finite partial sum
before the high x high product of a split (`ZeroNaNs`), which matters
only for infinite operands.

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from hloprobe.errors import ExecutionError
from hloprobe.execute import rounding
from hloprobe.execute.values import Unsupported, is_float
from hloprobe.ir import ALGORITHMS

__all__ = [
  "ALGORITHM_ALIASES",
  "DotDims",
  "contract",
  "preset_name",
]

# Short names a caller may give for the common presets.
ALGORITHM_ALIASES = {
  "F32": "F32_F32_F32",
  "F64": "F64_F64_F64",
  "TF32": "TF32_TF32_F32",
  "BF16": "BF16_BF16_F32",
}
# Split algorithm -> (part count, the (lhs part, rhs part) pairs multiplied).
_PAIRS = {
  "BF16_BF16_F32_X3": (2, ((0, 0), (0, 1), (1, 0))),
  "BF16_BF16_F32_X6": (
    3,
    ((0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (2, 0)),
  ),
  "BF16_BF16_F32_X9": (3, tuple((i, j) for i in range(3) for j in range(3))),
  "TF32_TF32_F32_X3": (2, ((0, 0), (0, 1), (1, 0))),
}
# A contraction keeping this share of its output elements or more (its NaN
# lines few) is made whole: gathering its operands would cost more.
_DENSE_LINES = 0.75
_ROUND_TO = {
  "f32": lambda x, mode: np.asarray(x, np.float32),
  "tf32": rounding.round_to_tf32,
  "bf16": lambda x, mode: rounding.round_to_bf16(x),
  "f16": lambda x, mode: rounding.round_to_f16(x),
}


@dataclasses.dataclass(frozen=True, slots=True)
class DotDims:
  """Dot dimension numbers: batch and contracting dims of each operand."""

  lhs_batch: tuple[int, ...]
  rhs_batch: tuple[int, ...]
  lhs_contracting: tuple[int, ...]
  rhs_contracting: tuple[int, ...]


def preset_name(name: str) -> str:
  """The preset a caller's algorithm name means (an alias or a preset).

  Raises:
    ExecutionError: the name is neither.
  """
  name = ALGORITHM_ALIASES.get(name, name)
  if name not in ALGORITHMS:
    raise ExecutionError(
      f"[hloprobe] unknown dot algorithm {name!r}; choose from "
      f"{', '.join(list(ALGORITHM_ALIASES) + list(ALGORITHMS))}"
    )
  return name


def contract(
  lhs: np.ndarray,
  rhs: np.ndarray,
  dims: DotDims,
  algorithm: str,
  tf32_mode: str = "rna",
) -> np.ndarray:
  """The contraction of `lhs` and `rhs` at `algorithm`, unrounded.

  Args:
    lhs, rhs: real float arrays (any numpy or ml_dtypes float type), or
      both integer arrays (then exact, `algorithm` unused).
    dims: the dimension numbers.
    algorithm: a preset name of `ir.ALGORITHMS`.
    tf32_mode: 'rna' (Triton) or 'rne' (cuBLAS) for TF32 rounding.

  Returns:
    float64 (int64 for integer operands) array of shape batch + lhs free +
    rhs free dims, as HLO's `dot` orders them; not rounded to any output
    type (BF16_BF16_BF16 and F16_F16_F16 excepted: rounded to 16 bits).

  Raises:
    Unsupported: complex operands, or a float operand with an integer one.
  """
  a3, b3, out_shape = _canonical(lhs, rhs, dims)
  kinds = {np.dtype(a3.dtype).kind, np.dtype(b3.dtype).kind}
  if kinds <= {"i", "u", "b"}:
    return np.matmul(a3.astype(np.int64), b3.astype(np.int64)).reshape(
      out_shape
    )
  if not (is_float(a3.dtype) and is_float(b3.dtype)):
    raise Unsupported(f"a dot of {a3.dtype} and {b3.dtype} operands")
  return _without_nan_lines(a3, b3, algorithm, tf32_mode).reshape(out_shape)


def _without_nan_lines(a3, b3, algorithm: str, tf32_mode: str) -> np.ndarray:
  """`_contract3` of (B, M, K) and (B, K, N) float operands, the products
  of their NaN lines left out: an output element whose lhs row or rhs
  column holds a NaN is NaN (IEEE 754: a NaN operand makes the product
  and every sum with it NaN, NaN x 0 and NaN x inf included), so only the
  batches, rows and columns free of NaNs are multiplied (issue 37: the
  executor's runs of an optimized module on its judged batch rows alone,
  the others NaN, `numerics.made`), and the rest is NaN. The check costs
  one pass over each operand; a contraction that keeps `_DENSE_LINES` of
  its output elements or more is made whole, as before."""
  a_ok = ~np.isnan(a3).any(axis=2)  # (B, M)
  b_ok = ~np.isnan(b3).any(axis=1)  # (B, N)
  batches = a_ok.any(axis=1) & b_ok.any(axis=1)
  rows, cols = a_ok[batches].any(axis=0), b_ok[batches].any(axis=0)
  kept = int(batches.sum()) * int(rows.sum()) * int(cols.sum())
  if kept >= _DENSE_LINES * math.prod((a3.shape[0], a3.shape[1], b3.shape[2])):
    return _contract3(a3, b3, algorithm, tf32_mode)
  out = np.full((a3.shape[0], a3.shape[1], b3.shape[2]), np.nan)
  if kept:
    # Gathered only along the dimensions that lose lines (an operand
    # that keeps them all, a weight's every column, is read in place).
    if not batches.all():
      a3, b3 = a3[batches], b3[batches]
    if not rows.all():
      a3 = a3[:, rows]
    if not cols.all():
      b3 = b3[:, :, cols]
    at = np.ix_(*map(np.flatnonzero, (batches, rows, cols)))
    out[at] = _contract3(a3, b3, algorithm, tf32_mode)
  return out


def _contract3(a3, b3, algorithm: str, tf32_mode: str) -> np.ndarray:
  """The (B, M, N) float64 contraction of (B, M, K) and (B, K, N) float
  operands at `algorithm` (`contract`)."""
  spec = ALGORITHMS[algorithm]
  if algorithm == "F64_F64_F64":
    out = np.matmul(np.asarray(a3, np.float64), np.asarray(b3, np.float64))
  elif algorithm in _PAIRS:
    out = _split(a3, b3, algorithm, tf32_mode)
  else:
    # The f32 operands as they are (no copy): the rounding makes its own
    # array, and the float64 copy is the one matmul reads.
    to_l, to_r = _ROUND_TO[spec.lhs], _ROUND_TO[spec.rhs]
    out = np.matmul(
      to_l(a3.astype(np.float32, copy=False), tf32_mode).astype(np.float64),
      to_r(b3.astype(np.float32, copy=False), tf32_mode).astype(np.float64),
    )
  if spec.accumulation in ("bf16", "f16"):
    out = _ROUND_TO[spec.accumulation](out, tf32_mode).astype(np.float64)
  return out


def _split(a3, b3, algorithm, tf32_mode) -> np.ndarray:
  """The float64 sum of the products of `_PAIRS[algorithm]`'s part pairs
  (B, M, N), made as `_RECTANGLES`' fewer, larger products where every
  part is finite, else pair by pair (an infinite or NaN part: the pairs'
  own infinities and NaNs, as the kernel's products make them)."""
  parts, pairs = _PAIRS[algorithm]
  a32, b32 = a3.astype(np.float32), b3.astype(np.float32)
  if algorithm.startswith("TF32"):
    lp, rp = (
      rounding.split_tf32(a32, tf32_mode),
      rounding.split_tf32(b32, tf32_mode),
    )
  else:
    lp, rp = rounding.split_bf16(a32, parts), rounding.split_bf16(b32, parts)
  del a32, b32
  if not all(np.isfinite(p).all() for p in (*lp, *rp)):
    total = np.zeros((a3.shape[0], a3.shape[1], b3.shape[2]), np.float64)
    for i, j in pairs:
      total += np.matmul(lp[i].astype(np.float64), rp[j].astype(np.float64))
    return total
  total = None
  for lhs, rhs in _RECTANGLES[algorithm]:
    product = np.matmul(_summed(lp, lhs), _summed(rp, rhs))
    total = product if total is None else np.add(total, product, out=total)
  return total


def _rectangles(pairs) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
  """`pairs` (lhs part, rhs part) as rectangles (lhs parts, rhs parts):
  each lhs part with the rhs parts it is paired with, lhs parts paired
  with the same rhs parts merged. Each pair lies in exactly one rectangle,
  so sum over pairs A_i B_j = sum over rectangles (sum_i A_i)(sum_j B_j).
  """
  partners: dict[int, list[int]] = {}
  for i, j in pairs:
    partners.setdefault(i, []).append(j)
  merged: dict[tuple[int, ...], list[int]] = {}
  for i, js in partners.items():
    merged.setdefault(tuple(sorted(js)), []).append(i)
  return tuple((tuple(lhs), rhs) for rhs, lhs in merged.items())


# Split algorithm -> its pairs as rectangles (`_rectangles`): X3 and
# TF32_X3 two products (A_0 (B_0 + B_1) + A_1 B_0), X6 three, X9 one
# ((A_0 + A_1 + A_2)(B_0 + B_1 + B_2)), against 3, 6 and 9 pair by pair.
# Exact as the pairs' products are: every part of an f32 value x, and so
# any sum of x's parts, is a multiple of x's f32 ulp (the remainders are
# exact f32 differences, each rounded to a coarser grid or kept) and
# below 2^(e+2) in magnitude (e: x's exponent), so it has at most 25
# significant bits and is exact in float64, and a product of two such
# sums has at most 50 (float64 holds 53). Only the
# float64 sums over K and the rectangles differ from pair by pair: the
# order of float64 additions, which the model leaves open (module
# docstring: products summed in float64, rounded once by the caller).
_RECTANGLES = {name: _rectangles(pairs) for name, (_, pairs) in _PAIRS.items()}


def _summed(parts, which: tuple[int, ...]) -> np.ndarray:
  """sum(parts[i] for i in which) in float64 (exact: `_RECTANGLES`)."""
  total = parts[which[0]].astype(np.float64)
  for i in which[1:]:
    np.add(total, parts[i], out=total)
  return total


def _canonical(a: np.ndarray, b: np.ndarray, dims: DotDims):
  """a as (B, M, K), b as (B, K, N), and the dot's result shape.

  The same arrangement as `numerics.emulate_dot`'s, written again in numpy
  on purpose: this package shares no code with the jax-based emulation
  (see the package docstring, "independent of XLA:CPU")."""
  lb, rb = dims.lhs_batch, dims.rhs_batch
  lc, rc = dims.lhs_contracting, dims.rhs_contracting
  if len(lb) != len(rb) or len(lc) != len(rc):
    raise Unsupported("dot dimension numbers of unequal lengths")
  lf = [d for d in range(a.ndim) if d not in (*lc, *lb)]
  rf = [d for d in range(b.ndim) if d not in (*rc, *rb)]

  def size(x, ds):
    return math.prod(x.shape[d] for d in ds)

  out_shape = (
    *(a.shape[d] for d in lb),
    *(a.shape[d] for d in lf),
    *(b.shape[d] for d in rf),
  )
  a3 = np.transpose(a, (*lb, *lf, *lc)).reshape(
    size(a, lb), size(a, lf), size(a, lc)
  )
  b3 = np.transpose(b, (*rb, *rc, *rf)).reshape(
    size(b, rb), size(b, rc), size(b, rf)
  )
  return a3, b3, out_shape
