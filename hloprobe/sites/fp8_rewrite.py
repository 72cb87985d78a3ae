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
(`fp8_operands`: GemmRewriter's own walk), "fired (...)" with the
call and its scales, "did not fire: <the condition that failed>", or
"unknown: <why>". What the fp8 gemm computes (`FP8_ALGORITHM`): products of
the f8 values (exact), summed in f32, times a_scale * b_scale (cuBLASLt's
`CUBLASLT_MATMUL_DESC_A_SCALE_POINTER` / `B_SCALE_POINTER`;
`hloprobe.execute` computes the call so), or, where cuBLASLt's fast
accumulation is on (`FP8_FAST_ACCUM_ALGORITHM`, `fp8_algorithm`: DEFAULT
operand precision with no algorithm, XLA's default), the same with
cuBLASLt's fast accumulation, which hloprobe does not model.

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

from hloprobe.compile import Target
from hloprobe.ir import HloInstruction, HloModule, StableHloDot
from hloprobe.sites.fp8_operands import f8_operand_types
from hloprobe.sites.operand_ancestry import custom_call_target
from hloprobe.sites.site_fate import Fate, MappedSite

__all__ = [
  "FP8_ALGORITHM",
  "FP8_FAST_ACCUM_ALGORITHM",
  "FP8_GEMM",
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


def _rule_failures(site: StableHloDot, lhs: str, rhs: str, cc: str):
  """`CreateF8CustomCall`'s conditions the site fails, in its order."""
  failed = []
  if _cc(cc) < _MIN_CC:
    failed.append(
      f"compute capability {cc} < 8.9 (FP8 cuBLASLt gemms need Ada, "
      "Hopper or later)"
    )
  if lhs == rhs == "f8e5m2":
    failed.append("both operands f8e5m2 (one must be f8e4m3fn)")
  elif lhs not in _F8_TYPES or rhs not in _F8_TYPES:
    failed.append(
      f"operand types {lhs} x {rhs} (cuBLASLt FP8 takes f8e4m3fn or f8e5m2)"
    )
  if site.result.dtype not in _OUTPUT_TYPES:
    failed.append(
      f"output {site.result.dtype} (must be {', '.join(_OUTPUT_TYPES)})"
    )
  batch = len(site.lhs_batch)
  if (
    len(site.lhs_contracting) != 1
    or len(site.rhs_contracting) != 1
    or len(site.lhs.dims) != batch + 2
    or len(site.rhs.dims) != batch + 2
  ):
    failed.append(
      "an operand without exactly one contracting and one non-contracting "
      "dimension"
    )
  return failed


def _scale_words(inst: HloInstruction) -> str:
  """A scale operand in words: its parameter's name, a constant's value."""
  if inst.opcode == "parameter":
    name = inst.metadata.get("op_name")
    return name or f"parameter {inst.parameter_number}"
  if inst.opcode == "constant" and inst.literal is not None:
    return inst.literal.strip()
  return inst.name


def _fired_words(module: HloModule, call: HloInstruction | None) -> str:
  """E.g. "fired (`__cublas$lt$matmul$f8`, scales a=x_scale, b=w_scale;
  A f8e4m3fn[16,64], B f8e4m3fn[32,64])": the scale operands by their
  parameter's name (a constant by its value: 1 where there was no scale),
  A and B as the call takes them (padded, transposed)."""
  if call is None:
    return f"fired (`{FP8_GEMM}`)"
  by_name = {i.name: i for _, i in module.all_instructions()}
  operands = [by_name.get(o) for o in call.operands]
  scalars = [
    o
    for o in operands[2:]
    if o is not None and not o.shape.is_tuple and not o.shape.dims
  ]
  names = ("a", "b", "d")
  scales = ", ".join(f"{k}={_scale_words(o)}" for k, o in zip(names, scalars))
  ab = [
    f"{k} {o.shape.dtype}[{','.join(map(str, o.shape.dims))}]"
    for k, o in zip(("A", "B"), operands[:2])
    if o is not None and not o.shape.is_tuple
  ]
  return f"fired (`{FP8_GEMM}`, scales {scales or 'none'}; {', '.join(ab)})"


def _call(module: HloModule, f: MappedSite) -> HloInstruction | None:
  """The site's FP8 call among its carriers, or None."""
  by_name = {i.name: i for _, i in module.all_instructions()}
  calls = (by_name.get(name) for name in f.carriers)
  return next(
    (i for i in calls if i is not None and custom_call_target(i) == FP8_GEMM),
    None,
  )


def _fate_words(f: MappedSite, compile_only: bool) -> str:
  """Why a site the rule allows was not rewritten, from its fate."""
  if f.fate in (Fate.MULTIPLY_REDUCE, Fate.MULTIPLY):
    return (
      f"did not fire: dot strength reduction made it a {f.fate.value} "
      "before any gemm rewriter ran (no dot left to rewrite)"
    )
  if f.fate == Fate.TRITON_GEMM:
    words = (
      "did not fire: the Triton gemm took the dot first "
      "(triton-gemm-rewriter runs before GemmRewriter; "
      "--xla_gpu_enable_triton_gemm=false leaves it to GemmRewriter)"
    )
    if compile_only:
      words += (
        "; compile-only: a real GPU's autotuner may hand it to cuBLAS, "
        "whose GemmRewriter can fire it"
      )
    return words
  if f.fate in (Fate.CUBLAS, Fate.CUBLASLT):
    return (
      "did not fire: GemmRewriter made a non-FP8 gemm; its operands are "
      "not MatchFp8Param's dequantization (an f8 value converted, "
      "optionally times or over a broadcast scalar, then only layout ops) "
      "or cuBLASLt does not support the gemm (GemmIsSupportedByCublasLt): "
      "the optimized HLO does not tell which"
    )
  return f"unknown: the site is {f.fate.value}"


def rewrite_note(
  f: MappedSite,
  module: HloModule,
  target: Target,
  compute_capability: str | None,
) -> str | None:
  """The fp8 cuBLASLt rewrite's outcome at a site (module docstring).

  Args:
    f: the mapped site.
    module: the optimized HLO it was mapped in.
    target: the target compiled for.
    compute_capability: the target's, e.g. "9.0"; None when unknown.

  Returns:
    None for a site whose operands do not both come from f8 values
    (`fp8_operands.f8_operand_types`: GemmRewriter's own walk) or a target
    that is not a CUDA GPU;
    else "fired (`__cublas$lt$matmul$f8`, scales a=..., b=...; A ..., B
    ...)", "did not fire: <conditions>" or "unknown: <why>".
  """
  site = f.site
  if target.platform != "cuda" or site.is_convolution:
    return None
  lhs, rhs = f8_operand_types(f, module)
  if lhs is None or rhs is None:
    return None
  if f.custom_call_target == FP8_GEMM:
    return _fired_words(module, _call(module, f))
  if compute_capability is None or _cc(compute_capability) is None:
    return "unknown: the target's compute capability is unknown"
  failed = _rule_failures(site, lhs, rhs, compute_capability)
  if failed:
    return f"did not fire: {'; '.join(failed)}"
  return _fate_words(f, target.compile_only)


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
