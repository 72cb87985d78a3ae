"""The tensor core's bits: a Triton gemm kernel's arithmetic, modelled exactly.

Per instruction, the semantics are MMA-Sim's (microsoft/MMA-Sim, package
`mmasim` 2.1.1, Xie, Wang, Yang and Yang, "MMA-Sim: Bit-Accurate Reference
Model of Tensor Cores and Matrix Cores", arXiv:2511.10909): an `mma` whose
operands are narrower than f32 computes D = A B + C as a chain of fused
dot-product-adds ("T-FDPA", `mmasim/arithmetic/fdpa.py`, `t_fdpa`), each
over at most L_max products of K:

  1. every operand is split into a significand s in [1, 2) and an exponent
     e (subnormals keep the format's least exponent and a smaller s); the
     products s_a s_b, exponent e_a + e_b, are exact; a zero term's
     exponent is e_zero;
  2. with e_max the largest exponent among the products and C, each term is
     aligned to e_max and truncated toward zero to F fractional bits (not
     IEEE round-to-nearest: the tensor core's adder drops the bits below
     2^(e_max - F));
  3. the aligned terms add exactly; the sum is normalized to f32 and
     truncated toward zero (RZ) to 23 fraction bits; NaN is 0x7FFFFFFF and
     -0.0 becomes +0.0.

tf32 operands are f32 bit patterns whose low 13 bits the tensor core
ignores (truncation); XLA's Triton gemms round them first with
`cvt.rna.tf32.f32` (round to nearest, ties away), which the PTX shows
(`hloprobe.ir` reads it). Per architecture (`mmasim/nv_ptx/sim.py`,
`_mma_F_bits`, `_mma_L_max_bytes`, `_mma_e_zero_for_fp32`): Ampere and Ada
F = 24, L_max = 16 bytes of operand (4 tf32, 8 bf16/f16), e_zero = -132;
Hopper F = 25, L_max = 32 bytes (8 tf32, 16 bf16/f16), e_zero = -133; the
Hopper `wgmma` the same as Hopper's `mma` (F = 25, 32 bytes, -133). Only
f32 accumulators (D and C f32) are modelled; f16 accumulators and fp8/fp6/
fp4 operands are not (`instruction` returns None: the site stays a band).

The kernel around the instructions (Triton's dot lowering, as XLA's
`__triton_gemm` / `__triton_nested_gemm_fusion` fusions emit it): each
output element's accumulator starts at +0.0 and walks K in order, in steps
of the instruction's k (the block_k tiles only group those steps; a K that
is not a multiple of k is padded with zeros, which add nothing); with
split-K, each of the split_k contiguous K slices is one such walk and XLA's
reduce fusion adds the f32 partials afterwards, modelled in slice order
(f32 round-to-nearest adds). The tile sizes (block_m/n) and warps do not
change any element's arithmetic, only which thread holds it.

Credit: the per-instruction rules are MMA-Sim's; this module is a numpy
restatement of them (vectorised over output elements), not their code.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
import re

import ml_dtypes
import numpy as np

__all__ = [
  "MODEL_WORDS",
  "MmaInstruction",
  "instruction",
  "kernel_gemm",
  "mma",
  "tf32_rna",
]

# What explain and the site table call a site's prediction.
MODEL_WORDS = ("bit-exact model", "band")

# (F, L_max in operand bytes, e_zero) per architecture family, from
# mmasim 2.1.1 nv_ptx/sim.py (`_mma_F_bits`, `_mma_L_max_bytes`,
# `_mma_e_zero_for_fp32`).
_ARCH = {
  "Ampere": (24, 16, -132),
  "Ada Lovelace": (24, 16, -132),
  "Hopper": (25, 32, -133),
}
_SM_ARCH = {80: "Ampere", 86: "Ampere", 87: "Ampere", 89: "Ada Lovelace"}
_SM_ARCH |= {90: "Hopper"}

# Operand element types: (numpy dtype for the values, bytes, least
# exponent of a normal number, as mmasim's `dtype_subnormal_exponent`).
_OPERANDS = {
  "tf32": (np.float32, 4, -126),
  "bf16": (ml_dtypes.bfloat16, 2, -126),
  "f16": (np.float16, 2, -14),
}
# The (shape, operand type) pairs of `mma.sync` MMA-Sim models with f32
# accumulation on sm_80 and later (mmasim nv_ptx/isa_mma.py).
_MMA_SHAPES = {
  ("m16n8k8", "tf32"),
  ("m16n8k4", "tf32"),
  ("m16n8k16", "bf16"),
  ("m16n8k8", "bf16"),
  ("m16n8k16", "f16"),
  ("m16n8k8", "f16"),
}
_OPCODE_RE = re.compile(
  r"^(?P<op>mma\.sync\.aligned|wgmma\.mma_async\.sync\.aligned)\."
  r"(?P<shape>m\d+n\d+k\d+)\.(?:row\.col\.)?(?P<d>\w+)\.(?P<a>\w+)\.(?P<b>\w+)"
)


@dataclasses.dataclass(frozen=True)
class MmaInstruction:
  """One tensor-core instruction's arithmetic, as MMA-Sim models it.

  Attributes:
    opcode: the PTX opcode, e.g. "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32".
    arch: MMA-Sim's architecture name ("Ampere", "Ada Lovelace", "Hopper").
    k: the instruction's K (8 for m16n8k8).
    operand: the operand element type ("tf32", "bf16", "f16").
    fraction_bits: F, the fractional bits kept when aligning terms.
    group: L_max, products per fused dot-product-add.
    e_zero: the exponent a zero term takes.
  """

  opcode: str
  arch: str
  k: int
  operand: str
  fraction_bits: int
  group: int
  e_zero: int


def instruction(opcode: str, sm: int) -> MmaInstruction | None:
  """The model of `opcode` on sm_`sm`; None where it is not modelled.

  Args:
    opcode: a PTX `mma.sync`/`wgmma.mma_async` opcode as `hloprobe.ir`
      reads it (counts and operands stripped).
    sm: the PTX `.target`'s number, e.g. 80 for sm_80, 90 for sm_90a.

  Returns:
    None for architectures before sm_80, f16 accumulators, integer, f64
    and fp8 types and shapes MMA-Sim does not list for `mma.sync`.
  """
  m = _OPCODE_RE.match(opcode)
  arch = _SM_ARCH.get(sm)
  if m is None or arch is None or m["a"] != m["b"] or m["d"] != "f32":
    return None
  operand = m["a"]
  if operand not in _OPERANDS:
    return None
  wgmma = m["op"].startswith("wgmma")
  if wgmma and arch != "Hopper":
    return None
  if not wgmma and (m["shape"], operand) not in _MMA_SHAPES:
    return None
  fraction_bits, group_bytes, e_zero = _ARCH[arch]
  k = int(m["shape"].rsplit("k", 1)[1])
  group = group_bytes // _OPERANDS[operand][1]
  return MmaInstruction(
    opcode, arch, k, operand, fraction_bits, min(group, k), e_zero
  )


def _split(x: np.ndarray, least: int) -> tuple[np.ndarray, np.ndarray]:
  """(s, e) with x = s 2^e, 1 <= |s| < 2, subnormals at e = least.

  Zeros get e = least (the caller overrides with e_zero).
  """
  s, e = np.frexp(x.astype(np.float64))
  s, e = s * 2.0, e.astype(np.int64) - 1
  low = e < least
  s = np.where(low, np.ldexp(s, np.where(low, e - least, 0)), s)
  e = np.where(low | (s == 0.0), least, e)
  return s, e


def _rz_f32(total: np.ndarray, exponent: np.ndarray) -> np.ndarray:
  """total 2^exponent to f32 by truncation (mmasim's "RZ-FP32")."""
  with np.errstate(over="ignore", invalid="ignore"):
    value = np.ldexp(total, exponent)
    s, e = _split(value, -126)
    s = np.trunc(s * 2.0**23) * 2.0**-23
    out = np.ldexp(s, e).astype(np.float32)
  nan = np.isnan(out)
  if nan.any():
    bits = out.view(np.uint32).copy()
    bits[nan] = 0x7FFFFFFF
    out = bits.view(np.float32)
  return out + np.float32(0.0)


def _fused_dot_add(a, b, c, ins: MmaInstruction) -> np.ndarray:
  """One T-FDPA: a, b [..., L] operand values, c [...] f32 -> f32 [...]."""
  least = _OPERANDS[ins.operand][2]
  sa, ea = _split(a, least)
  sb, eb = _split(b, least)
  sc, ec = _split(c, -126)
  s = np.concatenate([sa * sb, sc[..., None]], axis=-1)
  e = np.concatenate([ea + eb, ec[..., None]], axis=-1)
  e = np.where(s == 0.0, ins.e_zero, e)
  e_max = e.max(axis=-1)
  with np.errstate(invalid="ignore"):
    shift = e - e_max[..., None] + ins.fraction_bits
    aligned = np.trunc(np.ldexp(s, shift)) * 2.0**-ins.fraction_bits
  return _rz_f32(aligned.sum(axis=-1), e_max)


def _tf32_truncate(x: np.ndarray) -> np.ndarray:
  bits = np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
  return bits.view(np.float32)


def tf32_rna(x: np.ndarray) -> np.ndarray:
  """`cvt.rna.tf32.f32`: f32 to TF32, nearest, ties away (PTX ISA)."""
  bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
  finite = np.isfinite(np.asarray(x, np.float32))
  rounded = ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32)
  return np.where(finite, rounded.view(np.float32), x).astype(np.float32)


def mma(a, b, c, ins: MmaInstruction) -> np.ndarray:
  """One instruction on [..., k] operand vectors: D = a . b + c in f32.

  Args:
    a: [..., k] operand values (f32 bit patterns for tf32, which the
      instruction truncates; bf16/f16 values otherwise).
    b: [..., k] the same.
    c: [...] f32 accumulators.
    ins: the instruction (`instruction`).

  Returns:
    [...] f32, bit for bit MMA-Sim's D for those elements.
  """
  dtype = _OPERANDS[ins.operand][0]
  a, b = np.asarray(a, dtype), np.asarray(b, dtype)
  if ins.operand == "tf32":
    a, b = _tf32_truncate(a), _tf32_truncate(b)
  c = np.asarray(c, np.float32)
  for i in range(0, a.shape[-1], ins.group):
    c = _fused_dot_add(
      a[..., i : i + ins.group], b[..., i : i + ins.group], c, ins
    )
  return c


def kernel_gemm(
  a: np.ndarray,
  b: np.ndarray,
  ins: MmaInstruction,
  *,
  split_k: int = 1,
  tf32_rounding: str | None = "rna",
) -> np.ndarray:
  """A Triton gemm kernel's output: (B, M, K) x (B, K, N) -> (B, M, N) f32.

  Args:
    a: (B, M, K) lhs as the kernel loads it (f32 for tf32 kernels).
    b: (B, K, N) rhs.
    ins: the kernel's mma (`instruction`).
    split_k: XLA's split-K factor (1: none); K must divide by it, as XLA's
      split-K rewrite pads it to.
    tf32_rounding: "rna" where the PTX converts with `cvt.rna.tf32.f32`,
      None where the mma gets raw f32 (truncation).

  Raises:
    ValueError: K not divisible by split_k, or an unknown rounding.
  """
  if tf32_rounding not in ("rna", None):
    raise ValueError(f"tf32_rounding {tf32_rounding!r}: use 'rna' or None")
  dtype = _OPERANDS[ins.operand][0]
  a, b = np.asarray(a, dtype), np.asarray(b, dtype)
  if ins.operand == "tf32" and tf32_rounding == "rna":
    a, b = tf32_rna(a), tf32_rna(b)
  k_total = a.shape[-1]
  if k_total % split_k:
    raise ValueError(f"K = {k_total} does not divide by split_k = {split_k}")
  piece = k_total // split_k
  out = None
  for j in range(split_k):
    part = _walk(
      a[..., j * piece : (j + 1) * piece],
      b[..., j * piece : (j + 1) * piece, :],
      ins,
    )
    out = part if out is None else (out + part).astype(np.float32)
  return out


def _walk(a, b, ins: MmaInstruction) -> np.ndarray:
  """One accumulator per element, K walked in k-steps from +0.0."""
  pad = -a.shape[-1] % ins.k
  a = np.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, pad)])
  b = np.pad(b, [(0, 0)] * (b.ndim - 2) + [(0, pad), (0, 0)])
  av = a[..., :, None, :]  # (B, M, 1, K)
  bv = np.swapaxes(b, -1, -2)[..., None, :, :]  # (B, 1, N, K)
  acc = np.zeros(np.broadcast_shapes(av.shape[:-1], bv.shape[:-1]), np.float32)
  for k0 in range(0, a.shape[-1], ins.k):
    acc = mma(
      np.broadcast_to(av[..., k0 : k0 + ins.k], acc.shape + (ins.k,)),
      np.broadcast_to(bv[..., k0 : k0 + ins.k], acc.shape + (ins.k,)),
      acc,
      ins,
    )
  return acc
