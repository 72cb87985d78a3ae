"""The effective algorithm of a cuDNN fused attention site: cuDNN's rule.

A fused attention site (its `StableHloDot.op` a `__cudnn$fmha...` target,
`hloprobe.ir.fused_attention`) that XLA keeps as that call ("cuDNN fused
attention" fate) is settled here; `effective.resolve` calls
`cudnn_attention_algorithm`.

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

__all__ = ["cudnn_attention_algorithm"]


def cudnn_attention_algorithm(
  operand_dtype: str, config: dict | None
) -> tuple[str | None, str]:
  """The algorithm of a cuDNN fused attention call's two matmuls.

  cuDNN's flash attention (FlashAttention-2) computes S = q k^T and
  O = P v with tensor-core products of its inputs' type accumulated in
  f32, the softmax P = softmax(scale * S) in f32, and P rounded to the
  input type before the second matmul:
  * The accumulation: the graph's compute and intermediate data types are
    FLOAT whatever the io type (XLA's
    xla/stream_executor/cuda/cuda_dnn.cc
    `GetCudnnFlashAttentionOperationGraph` sets them on its cudnn_frontend
    graph; cuDNN frontend docs, operations/Attention "Accumulation type
    for unified forward SDPA": unset, SDPA accumulates in FLOAT, and
    "HALF or BFLOAT16 tensors do not themselves request reduced-precision
    accumulation").
  * The call's backend_config says it too (jaxlib 0.10.2 and 0.12.0.1,
    jax's `create_dot_product_attention_backend_config`):
    `algorithm.math_type: TENSOR_OP_MATH` and
    `intermediate_tensor_shape.element_type` the input type (BF16 for
    bf16 q, k, v): the [B, N, T, S] probabilities the second matmul reads.
  So bf16 inputs are BF16_BF16_F32 (both matmuls), f16 F16_F16_F32. fp8
  attention (`...F8`) scales its operands; no rule here. `hloprobe.numerics`
  emulates the forward at this algorithm (`emulate_attention`).

  Args:
    operand_dtype: HLO dtype of q and k, e.g. "bf16".
    config: the call's `cudnn_fmha_backend_config`, or None.
  """
  config = config or {}
  math = (config.get("algorithm") or {}).get("math_type", "unstated")
  inter = (config.get("intermediate_tensor_shape") or {}).get(
    "element_type", "unstated"
  )
  where = (
    f"cuDNN fused attention, {operand_dtype} q/k/v, math_type {math}, "
    f"intermediate {inter}"
  )
  presets = {"bf16": "BF16_BF16_F32", "f16": "F16_F16_F32"}
  if operand_dtype not in presets:
    return None, f"{where}: no rule for {operand_dtype} inputs"
  return presets[operand_dtype], (
    f"{where}: its matmuls in {operand_dtype} with f32 accumulation, "
    f"softmax in f32, probabilities rounded to {operand_dtype} (cuDNN "
    "flash attention; XLA cuda_dnn.cc GetCudnnFlashAttentionOperationGraph: "
    "compute and intermediate type FLOAT)"
  )
