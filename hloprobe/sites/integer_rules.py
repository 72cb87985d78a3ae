"""The arithmetic of contraction sites on integer operands.

Private in intent: use the package, `hloprobe.sites`.

An integer dot whose result is an integer type is exact until its output
wraps ("exact integer"); one whose result is a float type is not an integer
dot at all: XLA converts its operands and sums in floats. Both rules were
read from XLA's source and checked on the optimized HLO of jaxlib 0.10.2
and 0.12.0.1 (see each function).
"""

from __future__ import annotations

from hloprobe.compile import Target
from hloprobe.sites.site_fate import Fate, MappedSite

# An integer dot's "algorithm": no DotAlgorithmPreset names one (every
# preset is a float one), and none is needed: integer products and sums are
# exact until the accumulator wraps (see `integer_algorithm`).
EXACT_INTEGER = "exact integer"
# HLO's integer element types (xla/xla_data.proto PrimitiveType).
_INTEGER_DTYPES = frozenset(
  f"{sign}{bits}" for sign in "su" for bits in (2, 4, 8, 16, 32, 64)
)


def is_integer_dtype(dtype: str | None) -> bool:
  """Whether an HLO element type ("s8", "u32", ...) is an integer type."""
  return dtype in _INTEGER_DTYPES


def _largest_magnitude(dtype: str) -> int:
  """max |v| over an HLO integer type's values: 2^(bits-1) for sN (its
  minimum), 2^bits - 1 for uN."""
  bits = int(dtype[1:])
  return 2 ** (bits - 1) if dtype[0] == "s" else 2**bits - 1


_S32_MAX = 2**31 - 1


def integer_algorithm(
  fate: MappedSite, target: Target
) -> tuple[str | None, str]:
  """The arithmetic of a dot on integer operands: exact, whatever its fate,
  but for a Triton gemm whose s32 accumulator could pass 2^31 - 1.

  An integer dot has no `DotAlgorithmPreset` (jax's presets all name float
  types) and XLA gives it none: operand_precision and algorithm are
  ignored. Its products and sums are exact integer arithmetic in the
  accumulation type, and the result wraps (two's complement) to the output
  type, so every fate computes the same value (sums that wrap in a
  narrower or a wider type agree modulo the output's 2^bits): XLA:CPU's
  dot and `__ynn_fusion`, a GPU loop fusion (an s8 -> s8 dot stays an s8
  dot), a strength-reduced multiply+reduce (an s8 -> s32 dot converts
  its operands to s32 before the multiply; s8 -> s8 multiplies and
  reduces in s8), Triton's `mma.sync...satfinite.s32.s8.s8.s32`
  (`.satfinite` clamps an s32 accumulator that would overflow, the one
  case where it differs), and cuBLAS(Lt) with an s32 compute type
  (all seen in the optimized HLO and PTX of jaxlib 0.12.0.1, the same
  fates on 0.10.2;
  xla/service/gpu/transforms/
  gemm_rewriter.cc `TypesAreSupportedByCublasLt` /
  `TypesAreSupportedByLegacyCublas`: {kI32, kInt32, S8, S8, kInt32}, the
  only integer row; the s8 dims are padded to multiples of 4 first,
  `cublas_pad_for_gemms.cc`, e.g. an a100 n = 3 dot runs as s32[4,32]
  and is sliced; checked on jaxlib 0.12.0.1 with
  --xla_gpu_enable_triton_gemm=false). Where the exact sum does not fit
  the output type, the output wraps; that is an overflow, named by the
  verdict (`accuracy.judge`), not an algorithm.

  The Triton exception (review finding 4): `.satfinite` clamps each mma's
  s32 accumulator to [-2^31, 2^31 - 1] instead of wrapping (PTX ISA,
  "Warp-level matrix multiply-accumulate instructions: mma", the
  `.satfinite` qualifier for integer types), and one accumulator chain
  sums K / split-K products: Triton's split-K partials are then added by a
  separate s32 reduce (`add.s32`, which wraps). Seen in
  tests/intdots_testdata/s8_s32_long_k_a100_n8 (jaxlib 0.12.0.1, a100
  compile-only, s8[8,262144] x s8[262144,16] -> s32: split-K 128, the gemm
  kernel's `mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32`,
  the reduce fusion's `add.s32`; the same split-K 128, mma and add.s32
  compiled by hand under jaxlib 0.10.2). So where K / split-K times the largest
  product magnitude stays within s32, no chain clamps and the wrap rule
  holds; past it the site has no outcome here (None): clamping is not
  modelled.
  """
  site = fate.site
  types = f"{site.lhs.dtype} x {site.rhs.dtype} -> {site.result.dtype}"
  where = "XLA:CPU" if target.platform == "cpu" else fate.fate.value
  if fate.fate == Fate.TRITON_GEMM:
    chain = -(-site.contracting_size // (fate.split_k or 1))
    largest = chain * (
      _largest_magnitude(site.lhs.dtype) * _largest_magnitude(site.rhs.dtype)
    )
    if largest > _S32_MAX:
      return None, (
        f"{where}: integer dot {types}: an mma accumulator chain of "
        f"{chain} products (K {site.contracting_size} / split-K "
        f"{fate.split_k or 1}) can reach {largest} > 2^31 - 1, where "
        "mma's .satfinite clamps instead of wrapping: not modelled"
      )
  return EXACT_INTEGER, (
    f"{where}: integer dot {types}: exact integer products and sums, "
    "wrapping to the output type; no DotAlgorithmPreset applies"
  )


# Integer operand types whose every value, and every product of two, is
# exact in f32 and in TF32 (|v| <= 2^8: 9 significant bits <= TF32's 11;
# |a*b| <= 2^16 < 2^24).
_NARROW_INTEGERS = frozenset(("s2", "s4", "s8", "u2", "u4", "u8"))


def integer_to_float_algorithm(
  fate: MappedSite, target: Target
) -> tuple[str | None, str]:
  """The arithmetic of a dot on integer operands with a float result.

  XLA does not keep such a dot in integers: XLA:CPU converts both operands
  to the result type and runs an f32 dot (`wrapped_convert` fusions into a
  `__ynn_fusion` on jaxlib 0.12.0.1, into a plain f32 `dot` on 0.10.2;
  `operand_upcaster`, xla/service/operand_upcaster.cc, at n = 1), and a
  GPU's cuBLASLt gemm of
  s8 operands with an f32 output computes in f32 (gemm_rewriter.cc
  `GetBlasComputationType`: an F32 output takes CUBLAS_COMPUTE_32F; the
  cuBLAS documentation's cublasLtMatmul type table lists A/B CUDA_R_8I with
  C/D CUDA_R_32F under CUBLAS_COMPUTE_32F), split-K partial sums added in
  f32 by a reduce fusion: seen in the a100 and h100 optimized HLO of an
  s8[8,4096] x s8[4096,16] -> f32 dot on jaxlib 0.12.0.1, and the same
  `__cublas$lt$matmul` of s8 operands into f32[16,8,16] on the a100 with
  jaxlib 0.10.2 (checked by hand; the recorded fixture is 0.12.0.1's).
  So the products
  are exact (8-bit operands) and the sums are f32 sums, which round once
  they pass 2^24: F32_F32_F32, not "exact integer" (a sweep of such a dot
  past 2^24 shows XLA:CPU's error of a sequential f32 sum).

  Returns:
    ("F32_F32_F32", evidence) for an f32 result on narrow (<= 8-bit)
    operands on any fate, and on the CPU for wider ones (converted to f32,
    exact below 2^24); (None, why) otherwise: a 16-bit float result, or
    wider integers on a GPU, where TF32 rounding of the converted operands
    is not ruled out.
  """
  site = fate.site
  types = f"{site.lhs.dtype} x {site.rhs.dtype} -> {site.result.dtype}"
  narrow = {site.lhs.dtype, site.rhs.dtype} <= _NARROW_INTEGERS
  cpu = target.platform == "cpu"
  where = "XLA:CPU" if cpu else fate.fate.value
  if site.result.dtype != "f32":
    return None, (
      f"{where}: {types}: integer operands with a 16-bit float result: "
      "the conversion's rounding is not encoded"
    )
  if not (narrow or cpu):
    return None, (
      f"{where}: {types}: integer operands wider than 8 bits converted to "
      "f32: TF32 rounding of them not ruled out"
    )
  return "F32_F32_F32", (
    f"{where}: {types}: operands converted to f32, products exact, sums in "
    "f32 (they round past 2^24): not an integer dot"
  )
