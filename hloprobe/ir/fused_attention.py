"""cuDNN fused attention calls: the custom-call targets and their dims.

`jax.nn.dot_product_attention(..., implementation="cudnn")` lowers to a
`stablehlo.custom_call @__cudnn$fmha...` (jax/_src/cudnn/
fused_attention_stablehlo.py, `_custom_name_maps`: `__cudnn$fmhaSoftmax`,
`...ScaleBiasSoftmax`, `...SoftmaxDropout`, ..., `...F8`, and each one's
`...Backward` under a grad), whose operands start with q, k and v and
whose `backend_config` JSON holds `cudnn_fmha_backend_config`; XLA keeps
it as the same custom call in the optimized HLO (jaxlib 0.10.2 and
0.12.0.1, compile-only a100 and h100). One call is one contraction site
(its `StableHloDot.op` is the call's target): its two batched matmuls, q k^T and softmax(.) v, run
in one cuDNN kernel. The site is described by the first, q k^T: lhs q, rhs
k, contracting over the head dim.

Reads JSON only (no MLIR, no JAX), for `stablehlo` and `hloprobe.sites`.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

from hloprobe.errors import HloParseError

__all__ = [
  "ATTENTION_PREFIX",
  "attention_dims",
  "is_attention_target",
]

# The prefix of every cuDNN fused attention target jax writes.
ATTENTION_PREFIX = "__cudnn$fmha"
# Where the q k^T product's dimension numbers are in a call's
# `cudnn_fmha_backend_config` (jax's `_dot_product_attention_*_lowering`
# writes them): a forward call's `bmm1_dot_dimension_numbers`; a backward
# call has none of its own, and its `bmm2_grad_gemm2_dot_dimension_numbers`
# (dO v^T, which contracts the head dim with the same batch dims as q k^T:
# lhs/rhs contracting [3]/[3], batch [0, 2]/[0, 2] for BTNH, read on jaxlib
# 0.10.2 and 0.12.0.1) stands for it.
_DIMS_KEYS = (
  "bmm1_dot_dimension_numbers",
  "bmm2_grad_gemm2_dot_dimension_numbers",
)


def is_attention_target(target: str | None) -> bool:
  """Whether a custom-call target is a cuDNN fused attention call."""
  return bool(target) and target.startswith(ATTENTION_PREFIX)


def attention_dims(config: dict, target: str) -> tuple[tuple[int, ...], ...]:
  """(lhs_batch, rhs_batch, lhs_contracting, rhs_contracting) of q k^T.

  Args:
    config: the call's backend_config, parsed JSON (its
      `cudnn_fmha_backend_config`, or that object itself).
    target: the call's target, for the error message.

  Raises:
    HloParseError: the config has none of the dimension numbers expected.
  """
  fmha = config.get("cudnn_fmha_backend_config", config)
  for key in _DIMS_KEYS:
    numbers = fmha.get(key)
    if numbers:
      return tuple(
        tuple(int(d) for d in numbers.get(f"{side}_dimensions", ()))
        for side in (
          "lhs_batch",
          "rhs_batch",
          "lhs_contracting",
          "rhs_contracting",
        )
      )
  raise HloParseError(
    f"[hloprobe] {target}: backend_config has none of {', '.join(_DIMS_KEYS)}"
  )
