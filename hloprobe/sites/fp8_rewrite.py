"""The fp8 cuBLASLt rewrite: whether XLA made an fp8 site `__cublas$lt$matmul$f8`.

An fp8 matmul in JAX is a dot whose operands are f8 values, or (the usual
"dequantize, then dot" shape) f8 values converted to a wider type and
multiplied by a scalar scale each. XLA's GemmRewriter
(xla/service/gpu/transforms/gemm_rewriter.cc, read at openxla/xla
01631ca8; `GemmRewriterVisitor::HandleDot` with `DType::kFp8Only`,
`MatchFp8Param`, `CreateF8CustomCall`) rewrites such a dot into one
cuBLASLt FP8 gemm, `__cublas$lt$matmul$f8(A, B, a_scale, b_scale)`, when:

  * the target is CUDA compute capability >= 8.9 (Ada, Hopper or later:
    "FP8 GEMM kernels are only available on Ada, Hopper, and later
    architectures") and the CUDA toolkit >= 12.0;
  * both operands reach an f8 value (`FindF8SubgraphRecursive`) through a
    dequantization: a convert, optionally a multiply or divide by a
    broadcast scalar (the scale), then only ops that commute with it
    (bitcast, broadcast, copy, dynamic-slice, pad, reshape, select with a
    zero, slice, transpose);
  * the f8 types are f8e4m3fn or f8e5m2, not both f8e5m2;
  * the scales are scalars; the output is bf16, f16, f32, f8e4m3fn or
    f8e5m2;
  * each operand has one contracting and one non-contracting dimension
    (besides batch dimensions);
  * cuBLASLt supports the gemm (`GemmIsSupportedByCublasLt`).

It then transposes A to row-major and B to column-major where needed and
pads every non-batch dimension to a multiple of 16 (`PadShapeToMultipleOf16`),
slicing the result back.

Whether the rewrite is even tried depends on the pass order. In
xla/service/gpu/gpu_compiler.cc (`OptimizeHloPostLayoutAssignment`, the
`hlo_normalization` pipeline) the Triton gemm fusion (`GemmFusion`, pass
name `triton-gemm-rewriter`; added when `xla_gpu_enable_triton_gemm`, the
default, and compute capability >= 8.0) runs before `AddGemmRewriterPasses`
(the FP8 GemmRewriter, then the non-FP8 one), so a dot Triton takes never
reaches the FP8 rewrite (older XLA ran the FP8 GemmRewriter "ahead of
Triton"; no longer). Checked with pass dumps on compile-only H100s, jaxlib
0.10.2 and 0.12.0.1 (tests/testdata/compiles/fp8_scaled_matmul_*): by
default `triton-gemm-rewriter` makes the scaled f8 matmul a Triton gemm
fusion (the converts and scale multiplies inside), and
`--xla_gpu_enable_triton_gemm=false` lets `cublas-gemm-rewriter` make it
`__cublas$lt$matmul$f8` with the two scales as operands. On a device with
autotuning, the fusion autotuner may give a Triton gemm back to cuBLAS
(`xla_gpu_cublas_fallback`, default true), whose backend runs the same
GemmRewriter passes, so there the rewrite may still fire; a compile-only
target has no autotuning. Dot strength reduction (n = 1) leaves no dot to
rewrite.

`rewrite_note` says, for a site whose two operands come from f8 values
(`fp8_operands`: GemmRewriter's own walk), whether it fired, with the
call and its scales, or the conditions that failed, or why it is unknown
(an `Fp8Rewrite` record; report words it: "fired (...)", "did not fire:
<the condition that failed>", "unknown: <why>"). What the fp8 gemm computes (`FP8_ALGORITHM`): products of
the f8 values (exact), summed in f32, times a_scale * b_scale (cuBLASLt's
`CUBLASLT_MATMUL_DESC_A_SCALE_POINTER` / `B_SCALE_POINTER`;
`hloprobe.execute` computes the call so), or, where cuBLASLt's fast
accumulation is on (`FP8_FAST_ACCUM_ALGORITHM`, `fp8_algorithm`: DEFAULT
operand precision with no algorithm, XLA's default), the same with
cuBLASLt's fast accumulation, which hloprobe does not model.

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import ClassVar

from hloprobe.compile import Target
from hloprobe.ir import HloInstruction, HloModule, StableHloDot
from hloprobe.sites.fp8_operands import f8_operand_types
from hloprobe.sites.operand_ancestry import custom_call_target
from hloprobe.sites.site_fate import Fate, MappedSite

__all__ = [
  "FP8_ALGORITHM",
  "FP8_FAST_ACCUM_ALGORITHM",
  "FP8_GEMM",
  "Fp8Gate",
  "Fp8Rewrite",
  "fp8_algorithm",
  "fp8_carrier_ancestry",
  "rewrite_note",
]

FP8_GEMM = "__cublas$lt$matmul$f8"
# JAX's preset for f8 operands, f32 accumulation (`jax.lax.DotAlgorithmPreset`).
FP8_ALGORITHM = "ANY_F8_ANY_F8_F32"
# The same with cuBLASLt's FP8 fast accumulation on (`fp8_algorithm`).
FP8_FAST_ACCUM_ALGORITHM = "ANY_F8_ANY_F8_F32_FAST_ACCUM"
# `CreateF8CustomCall`'s conditions (module docstring), CUDA only.
_MIN_CC = (8, 9)
_F8_TYPES = ("f8e4m3fn", "f8e5m2")
_OUTPUT_TYPES = ("bf16", "f16", "f32", "f8e4m3fn", "f8e5m2")


class Fp8Gate(enum.Enum):
  """What kept the fp8 cuBLASLt rewrite from firing at a site, or from
  being known (`Fp8Rewrite.gates`).

  `CreateF8CustomCall`'s conditions the site fails (module docstring):
    OLD_GPU: compute capability below 8.9 (`Fp8Rewrite.compute_capability`).
    BOTH_E5M2: both operands f8e5m2.
    OPERAND_TYPES: an operand type cuBLASLt FP8 does not take
      (`Fp8Rewrite.operand_types`).
    OUTPUT_TYPE: an output type it does not give (`Fp8Rewrite.output`;
      `Fp8Rewrite.OUTPUT_TYPES` are those it gives).
    DIMENSIONS: an operand without exactly one contracting and one
      non-contracting dimension.
  Where the rule allows the site, its fate (`Fp8Rewrite.fate`):
    STRENGTH_REDUCED: dot strength reduction made it a multiply(+reduce)
      before any gemm rewriter ran.
    TRITON_GEMM: the Triton gemm took the dot first
      (`Fp8Rewrite.compile_only`: no autotuner to give it back).
    NOT_FP8_GEMM: GemmRewriter made a non-FP8 cuBLAS gemm.
  Unknown (`Fp8Rewrite.fired` None):
    NO_COMPUTE_CAPABILITY: the target's compute capability is unknown.
    OTHER_FATE: the site's fate is none of the above.
  """

  OLD_GPU = "old gpu"
  BOTH_E5M2 = "both e5m2"
  OPERAND_TYPES = "operand types"
  OUTPUT_TYPE = "output type"
  DIMENSIONS = "dimensions"
  STRENGTH_REDUCED = "strength reduced"
  TRITON_GEMM = "Triton gemm"
  NOT_FP8_GEMM = "not fp8 gemm"
  NO_COMPUTE_CAPABILITY = "no compute capability"
  OTHER_FATE = "other fate"


@dataclasses.dataclass(frozen=True, slots=True)
class Fp8Rewrite:
  """The fp8 cuBLASLt rewrite's outcome at a site (`rewrite_note`,
  `SiteFate.fp8_rewrite`); report words it.

  Attributes:
    fired: True (the site is the `FP8_GEMM` call), False (it did not
      fire: `gates`), None (unknown: `gates`).
    call: fired: whether the call instruction was found among the
      site's carriers (`scales` and `operands` read from it).
    scales: fired: each scale operand as (a, b or d, its parameter's
      name or a constant's value), in order.
    operands: fired: A and B as the call takes them (padded, transposed):
      ("A" or "B", dtype, dims).
    gates: not fired or unknown: what kept it, in `CreateF8CustomCall`'s
      order (`Fp8Gate`).
    compute_capability: OLD_GPU: the target's, e.g. "8.0".
    operand_types: OPERAND_TYPES: the site's f8 operand types (lhs, rhs).
    output: OUTPUT_TYPE: the site's result dtype.
    fate: STRENGTH_REDUCED, OTHER_FATE: the site's fate.
    compile_only: TRITON_GEMM: whether the target is compile-only.
  """

  fired: bool | None
  call: bool = False
  scales: tuple[tuple[str, str], ...] = ()
  operands: tuple[tuple[str, str, tuple[int, ...]], ...] = ()
  gates: tuple[Fp8Gate, ...] = ()
  compute_capability: str | None = None
  operand_types: tuple[str, str] | None = None
  output: str | None = None
  fate: Fate | None = None
  compile_only: bool = False

  # For readers of the record: the FP8 call's target, the output types
  # cuBLASLt FP8 gives, the gates.
  TARGET: ClassVar[str] = FP8_GEMM
  OUTPUT_TYPES: ClassVar[tuple[str, ...]] = _OUTPUT_TYPES
  GATE: ClassVar[type[Fp8Gate]] = Fp8Gate


def fp8_carrier_ancestry(target: str | None, ancestry, shapes) -> tuple:
  """A gemm carrier's data flow per site operand.

  An FP8 call takes the two scales as operands of their own (A, B, [C],
  a_scale, b_scale, ...: the first two scalar operands after B), so the
  site's lhs is A's data flow with a_scale's and its rhs B's with
  b_scale's; any other carrier's are its first two operands'.

  Args:
    target: the carrier's custom-call target, or None.
    ancestry: each operand's entry parameters (frozensets; a concatenate's
      `Concatenation`, which an FP8 call's data flow is not merged with),
      in order.
    shapes: each operand's `Shape` (or None), in order.
  """
  if target != FP8_GEMM or len(ancestry) < 2:
    return tuple(ancestry[:2])
  scalars = [
    i
    for i in range(2, len(ancestry))
    if shapes[i] is not None and not shapes[i].is_tuple and not shapes[i].dims
  ][:2]
  parts = (ancestry[0], ancestry[1], *(ancestry[i] for i in scalars))
  if len(scalars) < 2 or not all(isinstance(a, frozenset) for a in parts):
    return tuple(ancestry[:2])
  a, b, a_scale, b_scale = parts
  return (a | a_scale, b | b_scale)


def _cc(text: str) -> tuple[int, int] | None:
  major, _, minor = text.partition(".")
  if not (major.isdigit() and minor.isdigit()):
    return None
  return int(major), int(minor)


def _rule_failures(site: StableHloDot, lhs: str, rhs: str, cc: str) -> dict:
  """`CreateF8CustomCall`'s conditions the site fails, in its order: the
  `Fp8Rewrite` fields of the failed gates ({} where none failed)."""
  gates, found = [], {}
  if _cc(cc) < _MIN_CC:
    gates.append(Fp8Gate.OLD_GPU)
    found["compute_capability"] = cc
  if lhs == rhs == "f8e5m2":
    gates.append(Fp8Gate.BOTH_E5M2)
  elif lhs not in _F8_TYPES or rhs not in _F8_TYPES:
    gates.append(Fp8Gate.OPERAND_TYPES)
    found["operand_types"] = (lhs, rhs)
  if site.result.dtype not in _OUTPUT_TYPES:
    gates.append(Fp8Gate.OUTPUT_TYPE)
    found["output"] = site.result.dtype
  batch = len(site.lhs_batch)
  if (
    len(site.lhs_contracting) != 1
    or len(site.rhs_contracting) != 1
    or len(site.lhs.dims) != batch + 2
    or len(site.rhs.dims) != batch + 2
  ):
    gates.append(Fp8Gate.DIMENSIONS)
  return {"gates": tuple(gates), **found} if gates else {}


def _scale_name(inst: HloInstruction) -> str:
  """A scale operand by its parameter's name, a constant's value."""
  if inst.opcode == "parameter":
    name = inst.metadata.get("op_name")
    return name or f"parameter {inst.parameter_number}"
  if inst.opcode == "constant" and inst.literal is not None:
    return inst.literal.strip()
  return inst.name


def _fired(module: HloModule, call: HloInstruction | None) -> Fp8Rewrite:
  """A fired rewrite: the scale operands by their parameter's name (a
  constant by its value: 1 where there was no scale), A and B as the call
  takes them (padded, transposed)."""
  if call is None:
    return Fp8Rewrite(True)
  by_name = {i.name: i for _, i in module.all_instructions()}
  operands = [by_name.get(o) for o in call.operands]
  scalars = [
    o
    for o in operands[2:]
    if o is not None and not o.shape.is_tuple and not o.shape.dims
  ]
  names = ("a", "b", "d")
  scales = tuple((k, _scale_name(o)) for k, o in zip(names, scalars))
  ab = tuple(
    (k, o.shape.dtype, tuple(o.shape.dims))
    for k, o in zip(("A", "B"), operands[:2])
    if o is not None and not o.shape.is_tuple
  )
  return Fp8Rewrite(True, call=True, scales=scales, operands=ab)


def _call(module: HloModule, f: MappedSite) -> HloInstruction | None:
  """The site's FP8 call among its carriers, or None."""
  by_name = {i.name: i for _, i in module.all_instructions()}
  calls = (by_name.get(name) for name in f.carriers)
  return next(
    (i for i in calls if i is not None and custom_call_target(i) == FP8_GEMM),
    None,
  )


def _by_fate(f: MappedSite, compile_only: bool) -> Fp8Rewrite:
  """Why a site the rule allows was not rewritten, from its fate."""
  if f.fate in (Fate.MULTIPLY_REDUCE, Fate.MULTIPLY):
    return Fp8Rewrite(False, gates=(Fp8Gate.STRENGTH_REDUCED,), fate=f.fate)
  if f.fate == Fate.TRITON_GEMM:
    return Fp8Rewrite(
      False, gates=(Fp8Gate.TRITON_GEMM,), compile_only=compile_only
    )
  if f.fate in (Fate.CUBLAS, Fate.CUBLASLT):
    return Fp8Rewrite(False, gates=(Fp8Gate.NOT_FP8_GEMM,))
  return Fp8Rewrite(None, gates=(Fp8Gate.OTHER_FATE,), fate=f.fate)


def rewrite_note(
  f: MappedSite,
  module: HloModule,
  target: Target,
  compute_capability: str | None,
) -> Fp8Rewrite | None:
  """The fp8 cuBLASLt rewrite's outcome at a site (module docstring).

  Args:
    f: the mapped site.
    module: the optimized HLO it was mapped in.
    target: the target compiled for.
    compute_capability: the target's, e.g. "9.0"; None when unknown.

  Returns:
    None for a site whose operands do not both come from f8 values
    (`fp8_operands.f8_operand_types`: GemmRewriter's own walk) or a target
    that is not a CUDA GPU; else an `Fp8Rewrite`: fired (the call and
    its scales), not fired (the conditions that failed, or the fate) or
    unknown (why).
  """
  site = f.site
  if target.platform != "cuda" or site.is_convolution:
    return None
  lhs, rhs = f8_operand_types(f, module)
  if lhs is None or rhs is None:
    return None
  if f.custom_call_target == FP8_GEMM:
    return _fired(module, _call(module, f))
  if compute_capability is None or _cc(compute_capability) is None:
    return Fp8Rewrite(None, gates=(Fp8Gate.NO_COMPUTE_CAPABILITY,))
  failed = _rule_failures(site, lhs, rhs, compute_capability)
  if failed:
    return Fp8Rewrite(False, **failed)
  return _by_fate(f, target.compile_only)


def _fast_accum(config: dict | None) -> bool | None:
  """Whether cuBLASLt's FP8 fast accumulation is on for the call, from its
  backend_config's precision_config; None when it prints none.

  xla/stream_executor/cuda/cuda_blas_lt.cc `IsFastAccumEnabled` (called by
  `BlasLt::GetMatmulPlan`, which sets CUBLASLT_MATMUL_DESC_FAST_ACCUM):
  with ALG_UNSET, on when an operand is f8 (always so at this call) and
  compute_precision, the highest operand_precision, is 0 (DEFAULT); with an
  algorithm set, on only for ALG_DOT_ANY_F8_ANY_F8_F32_FAST_ACCUM. Read at
  openxla/xla cbfd6e86; the same function is in both stored versions of the
  file (release mapping not checked: the rule is unchanged there).
  """
  config = config or {}
  pc = (config.get("gemm_backend_config") or config).get("precision_config")
  if not isinstance(pc, dict):
    return None
  algorithm = pc.get("algorithm") or "ALG_UNSET"
  if algorithm != "ALG_UNSET":
    return algorithm == "ALG_DOT_ANY_F8_ANY_F8_F32_FAST_ACCUM"
  ops = pc.get("operand_precision") or []
  return all(p in ("DEFAULT", 0, "0") for p in ops)


def fp8_algorithm(f: MappedSite) -> tuple[str, str] | None:
  """(effective algorithm, evidence) of a site the FP8 call computes.

  FP8_FAST_ACCUM_ALGORITHM where cuBLASLt's fast accumulation is on
  (`_fast_accum`: operand precision DEFAULT with no algorithm, or the
  FAST_ACCUM preset declared), else FP8_ALGORITHM; None for a site that is
  not an FP8 call's.
  """
  if f.custom_call_target != FP8_GEMM:
    return None
  fast = _fast_accum(f.gemm_config)
  if fast is None:
    return (
      None,
      "unknown: the FP8 call prints no precision_config, so whether "
      "cuBLASLt fast accumulation is on (cuda_blas_lt.cc "
      "IsFastAccumEnabled) is unknown",
    )
  if fast:
    return (
      FP8_FAST_ACCUM_ALGORITHM,
      "rule: cuBLASLt FP8 gemm with CUBLASLT_MATMUL_DESC_FAST_ACCUM on "
      "(cuda_blas_lt.cc IsFastAccumEnabled: ALG_UNSET with operand "
      "precision DEFAULT, or the FAST_ACCUM preset): f8 products, f32 "
      "accumulation with fast (imprecise) accumulation, times a_scale * "
      "b_scale (gemm_rewriter.cc CreateF8CustomCall; openxla/xla cbfd6e86)",
    )
  return (
    FP8_ALGORITHM,
    "rule: cuBLASLt FP8 gemm: f8 products (exact), f32 accumulation, "
    "times a_scale * b_scale (gemm_rewriter.cc CreateF8CustomCall; fast "
    "accumulation off: operand precision above DEFAULT or a non-FAST_ACCUM "
    "algorithm, cuda_blas_lt.cc IsFastAccumEnabled; openxla/xla cbfd6e86)",
  )
