"""The built-in case `cudnn_attention`: cuDNN's fused flash attention.

Kept beside `builtin_cases` (which lists it) so that module stays under
the house's size bound.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np

from hloprobe.compile.case_model import Case

__all__ = ["cudnn_attention"]

# q, k, v: bf16[batch, T, heads, head_dim] (jax.nn.dot_product_attention's
# BTNH layout). A head dim of 64 and T = 128 meet cuDNN flash attention's
# conditions on every target (jax/_src/cudnn/fused_attention_stablehlo.py,
# `check_is_flash_attention`: head dim <= 128 before Hopper, a multiple of 8).
_SHAPE = (9, 128, 4, 64)


def _cudnn_attention(q, k, v):
  """softmax(q k^T / sqrt(64)) v per batch element and head, by cuDNN."""
  return jax.nn.dot_product_attention(q, k, v, implementation="cudnn")


def _cudnn_attention_inputs():
  """q, k, v: bf16[9, 128, 4, 64], standard normal (seed 24)."""
  g = np.random.default_rng(24)
  return tuple(
    g.standard_normal(_SHAPE).astype(ml_dtypes.bfloat16) for _ in range(3)
  )


cudnn_attention = Case(
  "cudnn_attention",
  "jax.nn.dot_product_attention(implementation='cudnn') on bf16 q, k, v "
  "[n, 128, 4, 64]: cuDNN's fused flash attention (GPU targets only, "
  "compile-only ones included; needs the nvidia-cudnn-cu12 wheel)",
  _cudnn_attention,
  _cudnn_attention_inputs,
  in_axes=(0, 0, 0),
  output_axis=0,
  rows_independent=True,
)
