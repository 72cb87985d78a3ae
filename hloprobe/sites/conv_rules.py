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

__all__ = ["conv_algorithm", "cudnn_conv_algorithm"]

_TF32 = "TF32_TF32_F32"
_RANK = {"default": 0, "high": 1, "highest": 2}


def conv_algorithm(
  fate: MappedSite, target: Target, compute_capability: str | None
) -> tuple[str | None, str]:
  """(effective algorithm or None, evidence) of a "conv" or "cuDNN conv" site.

  * cuDNN convolution calls: `cudnn_conv_algorithm`.
  * XLA:CPU's convolution (Eigen's spatial convolution in the operand
    type): f32 in f32 and f64 in f64, whatever operand_precision says;
    the conv net's f32 convolutions on jaxlib 0.10.2 and 0.12.0.1 match an
    F32 emulation within the f32 noise floor (tests/convsites_e2e_test).
    No rule for 16-bit convolutions on the CPU (not checked).
  * An HLO convolution left on a GPU: no rule checked.
  """
  dtype = fate.site.lhs.dtype
  if fate.fate == Fate.CUDNN_CONV:
    return cudnn_conv_algorithm(
      dtype, fate.precision_config, compute_capability
    )
  if target.platform == "cpu":
    presets = {"f32": "F32_F32_F32", "f64": "F64_F64_F64"}
    if dtype in presets:
      return presets[dtype], (
        f"XLA:CPU: {dtype} convolution in {dtype}; operand_precision does "
        "not change CPU arithmetic (jaxlib 0.10.2, 0.12.0.1)"
      )
    return None, f"XLA:CPU: no rule checked for {dtype} convolutions"
  return None, (
    "an HLO convolution on the GPU (not a cuDNN call): no rule checked "
    "(jaxlib 0.10.2, 0.12.0.1)"
  )


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
    The rule returns TF32_TF32_F32, the upper bound, and `tf32_optional`
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
  ranks = [_RANK.get(p, 0) for p in precision_config.split(",")]
  if max(ranks, default=0) > 1:
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
