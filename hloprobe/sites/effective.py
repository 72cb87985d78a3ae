"""The effective algorithm of each dot site: the arithmetic it really runs.

A site's declared precision (operand_precision, algorithm) is a request;
what runs depends on the fate XLA gave it. `resolve` names, per site, the
`jax.lax.DotAlgorithmPreset` that describes the arithmetic, and where that
came from (`algorithm_source`):

  "ptx"   kernels XLA generates (Triton gemm fusions, loop and reduce
          fusions holding a dot or a strength-reduced multiply): read from
          the kernel's PTX by `PtxKernel.algorithm_for`.
  "rule"  library calls (cuBLAS, cuBLASLt, cuDNN convolutions and fused
          attention), whose kernels are not visible, and the CPU:
          `blas_algorithm`, `conv_rules.conv_algorithm`,
          `fp8_rewrite.fp8_algorithm` (cuBLASLt's FP8 gemm),
          `attention_rules.cudnn_attention_algorithm`, `cpu_algorithm` and,
          for integer operands, `integer_rules`, each naming its source.

None means not settled; `algorithm_evidence` says why. On compile-only
targets the fate itself is XLA's heuristic choice: no autotuning ran, and a
real device may pick another Triton config or cuBLAS instead.
All rules checked on jaxlib 0.10.2 and 0.12.0.1 (the tests marked
`release_rules` run on both).

`resolve` takes `dot_sites.map_dot_sites`'s `MappedSite`s and returns
`SiteFate`s, complete records.

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hloprobe.compile import Target, jaxlib_release
from hloprobe.ir import (
  ALGORITHMS,
  HloInstruction,
  HloModule,
  PtxKernel,
)
from hloprobe.sites.attention_rules import cudnn_attention_algorithm
from hloprobe.sites.conv_rules import conv_algorithm, precision_rank
from hloprobe.sites.dot_sites import is_triton_gemm
from hloprobe.sites.fp8_rewrite import fp8_algorithm, rewrite_note
from hloprobe.sites.integer_rules import (
  integer_algorithm,
  integer_to_float_algorithm,
  is_integer_dtype,
)
from hloprobe.sites.site_fate import Fate, MappedSite, SiteFate

__all__ = [
  "HEURISTIC",
  "TF32",
  "blas_algorithm",
  "cpu_algorithm",
  "resolve",
]

# (effective_algorithm, algorithm_source, algorithm_evidence) of a site.
_Resolved = tuple[str | None, str | None, str]
# The same, read from a PTX kernel, and that kernel (`_from_ptx`).
_ReadPtx = tuple[str | None, str | None, str, PtxKernel]

HEURISTIC = "XLA heuristic (compile-only: no autotuning)"
AUTOTUNED = "XLA autotuned on the attached device"
TF32 = "TF32_TF32_F32"
_BLAS_FATES = (Fate.CUBLAS, Fate.CUBLASLT)

# XLA:CPU's 16-bit dots with an f32 result: (operand type -> preset).
_CPU_SIXTEEN_BIT = {"bf16": "BF16_BF16_F32", "f16": "F16_F16_F32"}


def cpu_algorithm(
  operand_dtype: str, result_dtype: str | None = None
) -> tuple[str | None, str]:
  """The algorithm of a dot on XLA:CPU, whatever its precision config says.

  XLA:CPU computes f32 dots as IEEE f32 (Eigen / YNNPACK / runtime matmul in
  the operand type): measured on jaxlib 0.10.2 and 0.12.0.1 (whose f32 dots
  at n >= 2 run in a `__ynn_fusion`), DEFAULT, HIGH and the
  BF16_BF16_F32 preset give the same f32 results as HIGHEST, and
  TF32_TF32_F32 is rejected ("not supported by dot_general on CPU"; see
  tests/engine/engine_test.py FailureIsolationTest).

  A bf16 x bf16 -> f32 dot (f16 likewise) is BF16_BF16_F32: its products
  are exact in f32 (8 + 8 significant bits fit f32's 24) and summed in f32,
  by either of the two paths XLA:CPU takes (optimized HLO and pass dumps of
  jaxlib 0.10.2 and 0.12.0.1, a [n,64] x [64,32] dot): the
  `operand_upcaster` pass (xla/service/operand_upcaster.cc, OperandUpcaster:
  operands narrower than the result are converted to it) makes it an f32
  dot of converted operands (n = 1), or `dot-library-rewriter` hands the
  bf16 dot to YNNPACK as a `__ynn_fusion` with an f32 result (n = 4), which
  accumulates in f32; an f16 dot's operands are converted to f32 before
  its f32 `__ynn_fusion` (n = 4) or f32 dot (n = 1): f16 x f16 products
  (11 + 11 bits) are exact in f32 too. A 16-bit result has no rule here.
  """
  presets = {"f32": "F32_F32_F32", "f64": "F64_F64_F64"}
  if operand_dtype in presets:
    return presets[operand_dtype], (
      f"XLA:CPU: {operand_dtype} dot in {operand_dtype}; operand_precision "
      "and algorithm do not change CPU arithmetic (jaxlib 0.10.2, 0.12.0.1)"
    )
  if operand_dtype in _CPU_SIXTEEN_BIT and result_dtype == "f32":
    return _CPU_SIXTEEN_BIT[operand_dtype], (
      f"XLA:CPU: {operand_dtype} x {operand_dtype} -> f32: exact products "
      "summed in f32 (operand_upcaster converts the operands to f32, or "
      "YNNPACK's __ynn_fusion accumulates in f32; jaxlib 0.10.2, 0.12.0.1)"
    )
  if operand_dtype in _CPU_SIXTEEN_BIT and result_dtype is not None:
    return None, (
      f"XLA:CPU: no rule for a {operand_dtype} x {operand_dtype} -> "
      f"{result_dtype} dot (only an f32 result's is checked)"
    )
  return None, f"XLA:CPU: no rule for {operand_dtype} operands"


# Declared presets XLA accepts on CUDA only from sm_80 (Ampere):
# algorithm_util.cc `IsSupportedDotAlgorithmOnGpu`.
_AMPERE_PRESETS = ("TF32_TF32_F32", "BF16_BF16_F32")


def blas_algorithm(
  library: str,
  operand_dtype: str,
  precision_config: str,
  algorithm: str | None,
  compute_capability: str | None,
) -> tuple[str | None, str]:
  """The algorithm of a cuBLAS / cuBLASLt gemm call, from its backend_config.

  Rules (jaxlib 0.10.2 and 0.12.0.1):
  * An algorithm set in precision_config is the preset it names
    (xla/service/algorithm_util.cc `GetBlasComputationType(algorithm)`).
  * bf16 / f16 operands accumulate in f32 (BF16_BF16_F32 / F16_F16_F32);
    f64 is F64_F64_F64 (xla/stream_executor/gpu/gpu_blas_lt.cc
    `GetBlasComputationType`).
  * f32 with ALG_UNSET: TF32 is allowed when the highest operand precision
    is DEFAULT or HIGH (cuBLAS: xla/service/gpu/matmul_utils.cc
    `IsTf32Allowed(algorithm, compute_precision)`, `compute_precision <= 1`,
    with compute_precision the max of operand_precision; cuBLASLt:
    gpu_blas_lt.cc `GetBlasComputationType` -> kTF32AsF32 under the same
    condition). HIGHEST is F32_F32_F32. HIGH therefore may run TF32 here,
    as in Triton gemms only from XLA 251becc5 (jaxlib 0.11.1; DEFAULT only
    before, as on 0.10.2).
  * TF32 allowed is not TF32 required: the compute type lets cuBLAS use
    TF32 tensor cores, and the kernel cuBLAS(Lt) picks for the shape
    decides, which the HLO does not show. Such a site runs TF32_TF32_F32
    or F32_F32_F32. Measured on a real H200 (jaxlib 0.11.2, 2026-11-30,
    tests/testdata/gpu_check/, `--xla_gpu_enable_triton_gemm=false`):
    seed_mlp at n = 2 under bfloat16 gave row 0 = -0.5600404, which is
    TF32 at its two K = 48 cuBLASLt gemms and f32 at the K = 2 one
    (tests/versions/gpu_check_h200_test.py). The rule returns TF32_TF32_F32, the
    upper bound, which the prediction emulates; `SiteFate.tf32_optional`
    marks the site so that a run may be explained by F32 there
    (`predict.Predictor`).
  * TF32 needs sm_80 or newer; before that the TF32 compute type runs as
    IEEE f32.
  * A declared TF32_TF32_F32(_X3) or BF16_BF16_F32(_X3/_X6/_X9) preset
    below sm_80 has no outcome: XLA's GPU compile rejects it
    ("Unsupported algorithm on the current device(s)"):
    xla/service/algorithm_util.cc `IsSupportedDotAlgorithmOnGpu` returns
    false for these without `IsAtLeastAmpere` on CUDA (read in two stored
    openxla/xla versions, before and after GpuComputeCapability became a
    class; the rule is the same in both). Returns None then.

  Args:
    library: "cuBLAS" or "cuBLASLt", for the evidence text.
    operand_dtype: HLO dtype of the operands, e.g. "f32".
    precision_config: e.g. "default,default".
    algorithm: the declared preset name, or None (ALG_UNSET).
    compute_capability: e.g. "7.5"; None when unknown.
  """
  where = f"{library}, {operand_dtype} operands, {precision_config}, {algorithm or 'ALG_UNSET'}"
  tf32_hw = (
    None
    if compute_capability is None
    else int(compute_capability.split(".")[0]) >= 8
  )
  if algorithm is not None:
    if algorithm.startswith(_AMPERE_PRESETS) and tf32_hw is False:
      return (
        None,
        f"{where}: XLA rejects {algorithm} below sm_80 at compile time "
        "(algorithm_util.cc IsSupportedDotAlgorithmOnGpu: TF32 and BF16 "
        "presets need IsAtLeastAmpere on CUDA)",
      )
    return algorithm, f"{where}: the declared algorithm"
  fixed = {"bf16": "BF16_BF16_F32", "f16": "F16_F16_F32", "f64": "F64_F64_F64"}
  if operand_dtype in fixed:
    return fixed[
      operand_dtype
    ], f"{where}: {operand_dtype} operands, f32 accumulation"
  if operand_dtype != "f32":
    return None, f"{where}: no rule for {operand_dtype} operands"
  rank = precision_rank(precision_config)
  if isinstance(rank, str):
    return None, f"{where}: unknown operand precision {rank!r}"
  if rank > 1:
    return "F32_F32_F32", f"{where}: HIGHEST forbids TF32 (IsTf32Allowed)"
  if tf32_hw is None:
    return None, f"{where}: TF32 allowed; compute capability unknown"
  if not tf32_hw:
    return (
      "F32_F32_F32",
      f"{where}: TF32 allowed, but sm_{compute_capability.replace('.', '')} has no TF32 tensor cores",
    )
  return TF32, (
    f"{where}: TF32 allowed, not required, for DEFAULT/HIGH "
    "(IsTf32Allowed); the kernel cuBLAS picks decides, so the site runs "
    "TF32_TF32_F32 or F32_F32_F32, predicted at TF32_TF32_F32, the upper "
    "bound"
  )


def _kernel_owner(
  fate: MappedSite, instructions: dict[str, HloInstruction]
) -> HloInstruction | None:
  """The outermost fusion around a site's carrier: its kernel."""
  for name in fate.carriers[:-1]:
    inst = instructions.get(name)
    if inst is not None and inst.opcode == "fusion":
      return inst
  return None


# Ops that move or relabel an operand's values without changing them.
_VALUE_KEEPING = frozenset(
  ("broadcast", "bitcast", "reshape", "transpose", "copy", "slice")
)
# Narrow float types whose f32 -> T -> f32 round trip is an operand
# rounding, with the preset whose operands are rounded so.
_ROUNDED_PRESETS = {"bf16": "BF16_BF16_F32", "f16": "F16_F16_F32"}


def _rounded_to(name: str, instructions) -> str | None:
  """The narrow float type an f32 operand was rounded through (an
  f32 -> T -> f32 convert pair, moved by `_VALUE_KEEPING` ops between),
  or None."""
  seen = 0
  inst = instructions.get(name)
  while inst is not None and inst.opcode in _VALUE_KEEPING and seen < 16:
    inst, seen = instructions.get(inst.operands[0]), seen + 1
  if inst is None or inst.opcode != "convert" or inst.shape.dtype != "f32":
    return None
  inner = instructions.get(inst.operands[0])
  while inner is not None and inner.opcode in _VALUE_KEEPING and seen < 32:
    inner, seen = instructions.get(inner.operands[0]), seen + 1
  if (
    inner is None
    or inner.opcode != "convert"
    or inner.shape.dtype not in _ROUNDED_PRESETS
  ):
    return None
  source = instructions.get(inner.operands[0])
  return inner.shape.dtype if source and source.shape.dtype == "f32" else None


def _operand_rounding(fate: MappedSite, instructions) -> _Resolved | None:
  """A strength-reduced f32 site whose multiply reads operands rounded to a
  narrower float first (review finding 11's fixture, found there): XLA
  keeps a declared BF16_BF16_F32 at n = 2 on the a100 as `convert(f32 ->
  bf16)` then `convert(bf16 -> f32)` of the weight in the multiply+reduce
  fusion, the other operand left f32 (jaxlib 0.10.2 and 0.12.0.1,
  tests/testdata/compiles/preset_seed_a100_n2_BF16_BF16_F32; the kernel's PTX
  has the matching cvt.rn.bf16.f32 / cvt.f32.bf16). Both operands rounded
  to T: T_T_F32 (the products of two T values are exact in f32). One
  only: no preset computes that (None, said); neither: None here, the
  other rules apply.
  """
  if fate.fate not in (Fate.MULTIPLY, Fate.MULTIPLY_REDUCE):
    return None
  multiply = instructions.get(fate.carriers[-1]) if fate.carriers else None
  if multiply is None or multiply.opcode != "multiply":
    return None
  rounded = [_rounded_to(o, instructions) for o in multiply.operands]
  if not any(rounded):
    return None
  words = ", ".join(f"operand {i} {t or 'f32'}" for i, t in enumerate(rounded))
  where = f"{multiply.name}: f32 products of {words} (convert f32 -> T -> f32)"
  if len(set(rounded)) == 1:
    return _ROUNDED_PRESETS[rounded[0]], "rule", f"{where}, f32 sums"
  return (
    None,
    None,
    (
      f"{where}: one operand rounded, the other not: no DotAlgorithmPreset "
      "computes that; not modelled"
    ),
  )


def _in_gemm_kernel(fate: MappedSite, instructions) -> tuple[str, str] | None:
  """A strength-reduced f32 site fused into another site's Triton gemm.

  XLA GPU fuses elementwise producers and consumers into a gemm fusion
  (jaxlib 0.10.2: a multiply+reduce in `__triton_nested_gemm_fusion`'s
  prologue); the kernel's mma instructions belong to the gemm, while the
  multiply and its reduction stay f32 arithmetic.
  """
  if fate.fate not in (Fate.MULTIPLY, Fate.MULTIPLY_REDUCE):
    return None
  owner = _kernel_owner(fate, instructions)
  if not is_triton_gemm(owner) or fate.site.lhs.dtype != "f32":
    return None
  return "F32_F32_F32", (
    f"rule: f32 multiply fused into gemm kernel {owner.name}; its mma is "
    "another site's"
  )


def _with_declared_passes(
  ptx: str | None, declared: str | None, split: bool = False
) -> str | None:
  """A declared _X3/_X6/_X9 preset whose one-pass form the PTX shows.

  `split`: the kernel splits the site's f32 operands into bf16 parts
  (`PtxKernel.splits_f32_operands`), so it runs several passes whose count
  its static opcodes do not give: without a declared multi-pass preset of
  the mma's flavour the site has no preset (None; the evidence says why),
  not the one-pass preset (review finding 11: 2^8 off for X3).
  """
  a, b = ALGORITHMS.get(ptx or ""), ALGORITHMS.get(declared or "")
  if (
    a
    and b
    and b.passes > 1
    and (a.lhs, a.rhs, a.accumulation) == (b.lhs, b.rhs, b.accumulation)
  ):
    return declared
  return None if split else ptx


def _from_ptx(
  fate: MappedSite, instructions, kernels: dict[str, PtxKernel]
) -> _Resolved | _ReadPtx:
  """The site's algorithm read from its kernel's PTX; where the kernel is
  found, that `PtxKernel` too (4th: `SiteFate.ptx_kernel`, `mma_opcodes`,
  `ptx_tf32_rounding`)."""
  owner = _kernel_owner(fate, instructions)
  if owner is None:
    return None, None, "no fusion around the site: no kernel to read"
  name = owner.kernel_names[-1]  # a deduplicated fusion runs the shared one
  kernel = kernels.get(name)
  if kernel is None:
    why = f"no PTX kernel named {name!r} for fusion {owner.name!r}"
    return None, None, why
  algorithm, evidence = kernel.algorithm_for(fate.site.lhs.dtype)
  split = fate.site.lhs.dtype == "f32" and kernel.splits_f32_operands
  chosen = _with_declared_passes(algorithm, fate.algorithm, split)
  return (
    chosen,
    "ptx" if chosen else None,
    f"kernel {name}: {evidence}",
    kernel,
  )


def _effective(
  fate: MappedSite,
  instructions,
  kernels,
  target: Target,
  compute_capability: str | None,
) -> _Resolved | _ReadPtx:
  dtype = fate.site.lhs.dtype
  if fate.fate == Fate.GONE:
    return None, None, "the site is gone from the optimized HLO"
  if fate.fate == Fate.UNKNOWN:
    why = fate.unknown_reason or f"unknown: {jaxlib_release().unchecked_note}"
    return None, None, why
  if fate.fate == Fate.AMBIGUOUS:
    names = ", ".join(path[-1] for path in fate.candidates)
    return None, None, f"ambiguous: {names} fit the site equally well"
  if is_integer_dtype(dtype) and is_integer_dtype(fate.site.rhs.dtype):
    if is_integer_dtype(fate.site.result.dtype):
      algorithm, evidence = integer_algorithm(fate, target)
    else:
      algorithm, evidence = integer_to_float_algorithm(fate, target)
    return algorithm, "rule", evidence
  if fp8 := fp8_algorithm(fate):
    return fp8[0], "rule", fp8[1]
  if (rounded := _operand_rounding(fate, instructions)) is not None:
    return rounded
  if fate.fate in (Fate.CUDNN_CONV, Fate.CONV):
    algorithm, evidence = conv_algorithm(fate, target, compute_capability)
  elif target.platform == "cpu":
    algorithm, evidence = cpu_algorithm(dtype, fate.site.result.dtype)
  elif fate.fate in _BLAS_FATES:
    algorithm, evidence = blas_algorithm(
      fate.fate.value,
      dtype,
      fate.precision_config,
      fate.algorithm,
      compute_capability,
    )
  elif fate.fate == Fate.CUDNN_ATTENTION:
    algorithm, evidence = cudnn_attention_algorithm(dtype, fate.gemm_config)
  elif fate.fate == Fate.CUDNN:
    algorithm = fate.algorithm
    evidence = (
      "cuDNN: the declared algorithm"
      if algorithm
      else "cuDNN: no rule checked (jaxlib 0.10.2, 0.12.0.1)"
    )
  elif (epilogue := _in_gemm_kernel(fate, instructions)) is not None:
    algorithm, evidence = epilogue
  else:
    return _from_ptx(fate, instructions, kernels)
  if algorithm and jaxlib_release().unchecked_note:
    evidence = f"{evidence} [{jaxlib_release().unchecked_note}]"
  return algorithm, "rule" if algorithm else None, evidence


def resolve(
  fates: Sequence[MappedSite],
  module: HloModule,
  kernels: Sequence[PtxKernel],
  target: Target,
  compute_capability: str | None = None,
  selection: str | None = None,
  per_site: Mapping[int, str] | None = None,
) -> list[SiteFate]:
  """Each site's effective algorithm, its source and evidence.

  Args:
    fates: the sites of one compiled config (`dot_sites.map_dot_sites`).
    module: the optimized HLO they were mapped in.
    kernels: the PTX kernels of that compile (empty on CPU).
    target: the target compiled for.
    compute_capability: e.g. "8.0"; defaults to the target's.
    selection: who chose the fates, where not the target's default
      (`HEURISTIC`, `AUTOTUNED`): a compile-only compile that loaded
      autotune results (`CompiledCase.autotune.selection`).
    per_site: site index -> who chose that site's fate, over `selection`:
      under loaded autotune results, each gemm fusion's entry or its
      absence (`CompiledCase.autotune.fusion_selections`).

  Returns:
    One `SiteFate` per site, in order: its `MappedSite` fields with
    `effective_algorithm`, `algorithm_source`, `algorithm_evidence`,
    `selection`, `fp8_rewrite` (`fp8_rewrite.rewrite_note`) and, where
    the algorithm was read from a PTX kernel, `ptx_kernel`, `mma_opcodes`
    and `ptx_tf32_rounding`.
  """
  instructions = {inst.name: inst for _, inst in module.all_instructions()}
  by_name = {k.name: k for k in kernels}
  cc = compute_capability or target.compute_capability
  if selection is None and target.platform == "cuda":
    selection = HEURISTIC if target.compile_only else AUTOTUNED
  out = []
  for f in fates:
    # The PTX reading (`_from_ptx`) adds the kernel it read.
    algorithm, source, evidence, *read = _effective(
      f, instructions, by_name, target, cc
    )
    kernel = read[0] if read else None
    out.append(
      SiteFate.of(
        f,
        effective_algorithm=algorithm,
        algorithm_source=source,
        algorithm_evidence=evidence,
        selection=(per_site or {}).get(f.site.index, selection),
        fp8_rewrite=rewrite_note(f, module, target, cc),
        ptx_kernel=None if kernel is None else kernel.name,
        mma_opcodes=() if kernel is None else kernel.mma_opcodes,
        ptx_tf32_rounding=None if kernel is None else kernel.tf32_rounding,
      )
    )
  return out
