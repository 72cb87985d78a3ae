"""The effective algorithm of a convolution site: cuDNN's and XLA:CPU's rules.

A convolution site (`StableHloDot.is_convolution`) that XLA keeps a
convolution ("conv", "cuDNN conv" fates) is settled here; one that XLA
turns into a dot or gemm (a 1x1 convolution) gets that dot's rules in
`effective`. `effective.resolve` calls `conv_algorithm`.

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

from hloprobe.compile import Target
from hloprobe.sites.site_fate import Fate, MappedSite

__all__ = [
  "conv_algorithm",
  "cpu_conv_algorithm",
  "cudnn_conv_algorithm",
  "precision_rank",
]

_TF32 = "TF32_TF32_F32"
# xla_data.proto PrecisionConfig.Precision's order; HLO text writes the
# words lower-case (an absent operand_precision is DEFAULT).
_RANK = {"default": 0, "high": 1, "highest": 2}


def precision_rank(precision_config: str) -> int | str:
  """The highest operand precision of `precision_config` (e.g.
  "default,highest" -> 2; "" -> 0, DEFAULT), or, where a word is none of
  default/high/highest (xla_data.proto also has PACKED_NIBBLE, and a later
  XLA may add more), that word: a rule keyed on the rank must then say
  "unknown", not take it for DEFAULT (review finding 18)."""
  ranks = []
  for word in precision_config.split(","):
    if word and word not in _RANK:
      return word
    ranks.append(_RANK.get(word, 0))
  return max(ranks, default=0)


def conv_algorithm(
  fate: MappedSite, target: Target, compute_capability: str | None
) -> tuple[str | None, str]:
  """(effective algorithm or None, evidence) of a "conv" or "cuDNN conv" site.

  * cuDNN convolution calls: `cudnn_conv_algorithm`.
  * XLA:CPU's convolution: `cpu_conv_algorithm`.
  * An HLO convolution left on a GPU: no rule checked.
  """
  dtype = fate.site.lhs.dtype
  if fate.fate == Fate.CUDNN_CONV:
    return cudnn_conv_algorithm(
      dtype, fate.precision_config, compute_capability
    )
  if target.platform == "cpu":
    return cpu_conv_algorithm(dtype)
  return None, (
    "an HLO convolution on the GPU (not a cuDNN call): no rule checked "
    "(jaxlib 0.10.2, 0.12.0.1)"
  )


# XLA:CPU's passes that widen a 16-bit convolution to f32 before it runs
# (xla/service/cpu/cpu_compiler.cc, `RunHloPassesThroughLayoutAssn`).
_CPU_WIDENED = {
  "bf16": (
    "BF16_BF16_F32",
    "float-normalization-bf16 (FloatNormalization with the base "
    "FloatSupport(BF16), which does not support a bf16 convolution)",
  ),
  "f16": (
    "F16_F16_F32",
    "change-op-data-type (ChangeOpDataType(F16, F32) for dots and "
    "convolutions unless --xla_cpu_strict_dot_conv_math)",
  ),
}


def cpu_conv_algorithm(dtype: str) -> tuple[str | None, str]:
  """The algorithm of an HLO convolution on XLA:CPU, whatever its
  operand_precision says.

  * f32 in f32 and f64 in f64 (Eigen's spatial convolution, or YNNPACK's
    `__ynn_fusion` on jaxlib 0.12.0.1, in the operand type): the conv
    net's f32 convolutions on jaxlib 0.10.2 and 0.12.0.1 match an F32
    emulation within the f32 noise floor (tests/convsites_e2e_test).
  * bf16 and f16: XLA:CPU has no 16-bit convolution; a pass converts the
    operands to f32 (exactly), the convolution runs in f32 (its products
    of 8 + 8 or 11 + 11 significant bits exact in f32's 24, summed in
    f32) and its result is converted back to the output type:
    BF16_BF16_F32 / F16_F16_F32. The passes are `_CPU_WIDENED`'s
    (xla/service/cpu/cpu_compiler.cc; read at openxla/xla main, and seen
    in the pass dumps and optimized HLO of jaxlib 0.10.2 and 0.12.0.1: f32
    converts of both operands into an f32 `__ynn_fusion`, then a convert
    to bf16/f16). Under --xla_cpu_strict_dot_conv_math an f16 convolution
    stays f16: that flag is not read here.

  Args:
    dtype: HLO dtype of the input and kernel, e.g. "bf16".
  """
  presets = {"f32": "F32_F32_F32", "f64": "F64_F64_F64"}
  if dtype in presets:
    return presets[dtype], (
      f"XLA:CPU: {dtype} convolution in {dtype}; operand_precision does "
      "not change CPU arithmetic (jaxlib 0.10.2, 0.12.0.1)"
    )
  if dtype in _CPU_WIDENED:
    algorithm, made_by = _CPU_WIDENED[dtype]
    return algorithm, (
      f"XLA:CPU: {dtype} convolution widened to f32 by {made_by}: exact "
      "products summed in f32, the result converted to the output type "
      "(xla/service/cpu/cpu_compiler.cc; jaxlib 0.10.2, 0.12.0.1)"
    )
  return None, f"XLA:CPU: no rule checked for {dtype} convolutions"


def cudnn_conv_algorithm(
  operand_dtype: str, precision_config: str, compute_capability: str | None
) -> tuple[str | None, str]:
  """The algorithm of a cuDNN convolution custom call.

  Rules (read at openxla/xla 0980f134; the same code in the jaxlib 0.10.2
  and 0.12.0.1 optimized HLO: `cudnn_conv_backend_config.algorithm` is
  `algo_id: -1`, `math_type: DEFAULT_MATH` on a compile-only A100, the
  autotuner's `CudnnBackend::GetDefaultConfig`, and the call keeps the
  convolution's `operand_precision`):
  * TF32 is allowed when every operand precision is DEFAULT or HIGH:
    `allow_tf32 = absl::c_all_of(operand_precision, precision <=
    PrecisionConfig::HIGH)` in xla/backends/gpu/autotuner/cudnn.cc
    (`GetConvolutionCustomCallConfigs`), as in the older
    xla/service/gpu/autotuning/conv_algorithm_picker.cc; it goes to cuDNN
    as `se::EngineOptions::allow_tf32`, and cuDNN engines that down-convert
    f32 inputs (tensor-core engines, CUDNN_NUMERICAL_NOTE_TENSOR_CORE /
    DOWN_CONVERT_INPUTS) are dropped when it is false
    (xla/stream_executor/cuda/cuda_dnn.cc; the legacy API's
    CUDNN_FMA_MATH versus CUDNN_DEFAULT_MATH / CUDNN_TENSOR_OP_MATH).
    HIGHEST therefore is F32_F32_F32 (jax's `float32` precision writes
    `operand_precision={highest,highest,...}` on the call).
  * As for cuBLAS (`blas_algorithm`), allowed is not required: the engine
    cuDNN picks (by autotuning or its heuristics on a real GPU) decides.
    The rule returns TF32_TF32_F32, the upper bound, and `SiteFate.tf32_optional`
    marks the site so that a run may be explained by F32 there.
  * bf16 / f16 operands: BF16_BF16_F32 / F16_F16_F32 (cuDNN accumulates
    in f32 for them in XLA's convolutions, `GetConvAccumulatorType`-like
    rules not checked otherwise); f64 is F64_F64_F64; TF32 needs sm_80.

  Args:
    operand_dtype: HLO dtype of the input and kernel, e.g. "f32".
    precision_config: the call's input and kernel precisions, e.g.
      "highest,highest".
    compute_capability: e.g. "8.0"; None when unknown.
  """
  where = f"cuDNN conv, {operand_dtype} operands, {precision_config}"
  fixed = {"bf16": "BF16_BF16_F32", "f16": "F16_F16_F32", "f64": "F64_F64_F64"}
  if operand_dtype in fixed:
    return fixed[operand_dtype], f"{where}: f32 accumulation"
  if operand_dtype != "f32":
    return None, f"{where}: no rule for {operand_dtype} operands"
  rank = precision_rank(precision_config)
  if isinstance(rank, str):
    return None, f"{where}: unknown operand precision {rank!r}"
  if rank > 1:
    return "F32_F32_F32", (
      f"{where}: HIGHEST forbids TF32 (allow_tf32 = all operand precisions "
      "<= HIGH, xla/backends/gpu/autotuner/cudnn.cc)"
    )
  if compute_capability is None:
    return None, f"{where}: TF32 allowed; compute capability unknown"
  if int(compute_capability.split(".")[0]) < 8:
    return "F32_F32_F32", (
      f"{where}: TF32 allowed, but sm_{compute_capability.replace('.', '')} "
      "has no TF32 tensor cores"
    )
  return _TF32, (
    f"{where}: TF32 allowed, not required, for DEFAULT/HIGH (allow_tf32, "
    "xla/backends/gpu/autotuner/cudnn.cc); the engine cuDNN picks decides, "
    "so the site runs TF32_TF32_F32 or F32_F32_F32, predicted at "
    "TF32_TF32_F32, the upper bound"
  )
