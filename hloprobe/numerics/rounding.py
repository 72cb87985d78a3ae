"""Rounding f32 values to the operand formats of reduced-precision GEMMs.

Every function here works on jax arrays, under `jit`, by integer arithmetic
on the f32 bit pattern (`lax.bitcast_convert_type`), and returns f32 arrays
whose values are representable in the narrower format. inf and nan pass
through unchanged; a finite value that rounds past the largest finite value
becomes inf, as a hardware conversion does.

Which hardware path rounds how (checked on jaxlib 0.10.2):
  TF32, 'rna' (nearest, ties away from zero): XLA's Triton GEMMs. The
    emitter asks Triton for a TF32 `tt.dot`
    (xla/backends/gpu/codegen/triton/transforms/stablehlo_lower_to_triton.cc,
    `InferDotPrecision`), which converts each operand with PTX
    `cvt.rna.tf32.f32`; the PTX of the seed and tensorflow-127577 cases
    shows it (tests/ir/testdata/ptx/a100_seed_n2_default_gemm_fusion_dot.ptx),
    and so does that of
    TF32_TF32_F32 and TF32_TF32_F32_X3 dots compiled for an A100. It is the
    default.
  TF32, 'rne' (nearest, ties to even): cuBLAS and cuBLASLt with
    `kTF32AsF32` (xla/service/algorithm_util.cc, `GetBlasComputationType`).
    NVIDIA does not document how these kernels round f32 to TF32; 'rne' is
    the model TensorFlow's own TF32 simulation uses (tensorflow PR 127577).
    The two modes differ only on exact ties (the 13 dropped bits are
    0x1000). The prediction emulates cuBLAS TF32 sites 'rna' (one rounding
    per emulation, `emulate.make_emulator`), the made-check's executor
    'rne' (`hloprobe.execute`'s blas): neither is NVIDIA's word, and they
    differ on those ties only.
  TF32, 'rz' (toward zero, truncation): a TF32 `mma` fed f32 registers with
    no `cvt.rna.tf32.f32` before it (`ir.ptx` records
    tf32_rounding="truncate"): the tensor core ignores the low 13 bits of
    each f32 operand (MMA-Sim, microsoft/MMA-Sim `mmasim` 2.1.1, the tf32
    operand read; see `kernel_model`). Its unit is 2^-10, not 2^-11.
  BF16, 'rne' only: an HLO `convert` to bf16 (the `BF16_BF16_F32` algorithm
    and the parts of the split algorithms, see `split_bf16`) rounds to
    nearest even, on CPU and GPU (PTX `cvt.rn.bf16.f32`).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from hloprobe.errors import InvalidArgumentError

__all__ = [
  "ROUNDING_MODES",
  "round_mantissa",
  "round_to_bf16",
  "round_to_f16",
  "round_to_tf32",
  "split_bf16",
  "split_tf32",
]

# Rounding modes by name: 'rna' ties away from zero (PTX cvt.rna), 'rne'
# ties to even (IEEE roundTiesToEven, PTX cvt.rn), 'rz' toward zero (IEEE
# roundTowardZero, PTX cvt.rz: the dropped bits cleared).
ROUNDING_MODES = ("rna", "rne", "rz")
_F32_MANTISSA_BITS = 23
TF32_MANTISSA_BITS = 10
BF16_MANTISSA_BITS = 7


def round_mantissa(x, keep_bits: int, mode: str = "rne") -> jnp.ndarray:
  """Rounds f32 values to `keep_bits` explicit mantissa bits.

  The exponent range stays that of f32 (as for TF32 and BF16), so subnormals
  round on the same bit grid as normal numbers.

  Args:
    x: array of any shape; converted to f32 first (exact from bf16 and f16).
    keep_bits: explicit mantissa bits kept, 1 to 22 (10 for TF32, 7 for BF16).
    mode: 'rna', 'rne' or 'rz' (see `ROUNDING_MODES`).

  Returns:
    f32 array of the shape of `x`.

  Raises:
    InvalidArgumentError: `mode` or `keep_bits` is out of range.
  """
  if mode not in ROUNDING_MODES:
    raise InvalidArgumentError(
      f"unknown rounding mode {mode!r}; choose from {', '.join(ROUNDING_MODES)}"
    )
  if not 1 <= keep_bits < _F32_MANTISSA_BITS:
    raise InvalidArgumentError(f"keep_bits must be in [1, 22], got {keep_bits}")
  x = jnp.asarray(x).astype(jnp.float32)
  drop = _F32_MANTISSA_BITS - keep_bits
  bits = lax.bitcast_convert_type(x, jnp.uint32)
  half = jnp.uint32(1 << (drop - 1))
  if mode == "rna":
    bits = bits + half
  elif mode == "rne":
    lsb = lax.shift_right_logical(bits, jnp.uint32(drop)) & jnp.uint32(1)
    bits = bits + (half - jnp.uint32(1)) + lsb
  # Finite inputs stay below 0xFF800000 after the add, so nothing wraps; a
  # carry into the exponent is the correct rounding (up to inf at the top).
  # 'rz' adds nothing: the dropped bits are only cleared.
  bits = bits & jnp.uint32((0xFFFFFFFF << drop) & 0xFFFFFFFF)
  return jnp.where(
    jnp.isfinite(x), lax.bitcast_convert_type(bits, jnp.float32), x
  )


def round_to_tf32(x, mode: str = "rna") -> jnp.ndarray:
  """Rounds to TF32 (10 explicit mantissa bits); f32 in, f32 out.

  Args:
    x: array of any shape, converted to f32 first.
    mode: 'rna' for XLA's Triton GEMMs (default), 'rne' as the model of
      cuBLAS, 'rz' for a TF32 mma with no `cvt.rna.tf32.f32` (see the
      module docstring).

  Raises:
    InvalidArgumentError: an unknown `mode`.
  """
  return round_mantissa(x, TF32_MANTISSA_BITS, mode)


def round_to_bf16(x) -> jnp.ndarray:
  """Rounds to BF16 (7 explicit mantissa bits), ties to even; f32 out.

  Bit-identical, for finite values, to `x.astype(bfloat16).astype(float32)`
  (XLA's `convert`, and `ml_dtypes.bfloat16`).
  """
  return round_mantissa(x, BF16_MANTISSA_BITS, "rne")


def round_to_f16(x) -> jnp.ndarray:
  """Rounds to f16 (10 mantissa bits, 5 exponent bits) by XLA's `convert`.

  Unlike TF32, f16 has a narrow exponent range: values beyond 65504 become
  inf and small ones become f16 subnormals, so this uses the convert itself
  (round to nearest even) rather than bit arithmetic. f32 out.
  """
  return jnp.asarray(x).astype(jnp.float16).astype(jnp.float32)


def split_bf16(x, parts: int) -> tuple[jnp.ndarray, ...]:
  """Splits f32 values into `parts` BF16 pieces, high first, as XLA does.

  The definition of XLA's Triton emitter for BF16_BF16_F32_X3/_X6/_X9
  (xla/backends/gpu/codegen/triton/transforms/stablehlo_lower_to_triton.cc,
  `SplitF32`, jaxlib 0.10.2): each piece is the remainder so far converted
  to bf16 (round to nearest even), and the next remainder is the f32
  difference, which is exact. Checked on jaxlib 0.10.2 in the Triton IR and
  PTX of X3 and X6 dots compiled for an A100 (`arith.truncf`,
  cvt.rn.bf16.f32). XLA's HLO rewrite for other paths
  (xla/service/gpu/transforms/dot_algorithm_rewriter.cc, `Split2xToBF16`)
  truncates the high pieces instead; that variant is not modelled.

  Args:
    x: array of any shape, converted to f32 first.
    parts: 2 (for _X3) or 3 (for _X6 and _X9).

  Returns:
    `parts` f32 arrays of the shape of `x`, each bf16-representable; their
    sum is `x` up to the bits the last piece drops.
  """
  x = jnp.asarray(x).astype(jnp.float32)
  pieces = []
  for i in range(parts):
    piece = round_to_bf16(x)
    pieces.append(piece)
    if i != parts - 1:
      x = x - piece
  return tuple(pieces)


def split_tf32(x, mode: str = "rna") -> tuple[jnp.ndarray, jnp.ndarray]:
  """Splits f32 values into a TF32 high and a TF32 low part (TF32_TF32_F32_X3).

  Triton's `TF32x3` rewrite (triton lib/Dialect/TritonGPU/Transforms/
  F32DotTC.cpp, which XLA selects in `InferDotPrecision`) takes
  `big = cvt.rna.tf32(x)` and `small = x - big`, then feeds both to TF32
  `tt.dot`s, which round `small` to TF32 in turn.

  Returns:
    (high, low), f32 arrays of the shape of `x`, both TF32-representable.
  """
  x = jnp.asarray(x).astype(jnp.float32)
  high = round_to_tf32(x, mode)
  return high, round_to_tf32(x - high, mode)
