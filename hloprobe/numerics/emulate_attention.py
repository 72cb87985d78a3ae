"""cuDNN fused attention emulated at its site's algorithm, and in float64.

jax's cuDNN attention traces to `dot_product_attention_fwd_wrapper` (and,
under a grad, `..._bwd_wrapper`) equations (jax/_src/cudnn/
fused_attention_stablehlo.py; jax 0.10.2 and 0.12.0.1), which have no CPU
lowering. `jaxpr_sites` numbers them as sites (the StableHLO `__cudnn$fmha`
calls); here the forward is computed with jax.numpy on the CPU, as
cuDNN's flash attention (FlashAttention-2, cuDNN frontend docs,
operations/Attention) computes it for bf16/f16 inputs at BF16_BF16_F32 /
F16_F16_F32 (`hloprobe.sites` attention_rules): S = scale * q k^T with
exact products summed in f32, the row max m and E = exp(S - m) in f32, l
the f32 row sum of E, E rounded to the input type for the second matmul,
O = (E v) / l summed in f32. At F32_F32_F32 (the noise floor's all-F32
run) nothing is rounded but the f32 arithmetic; at F64_F64_F64 (the
float64 reference) everything is float64.

Not modelled (an `EmulationError` names it): the backward, bias, masks
other than none or causal, sliding windows, dropout, score mods, fp8,
training's extra outputs. An approximation, stated: FlashAttention-2 takes
the row max per key block and rescales; cuDNN's block sizes are not known,
so E is rounded here against the row max over all keys (the same where a
row's max falls in its first block). The f32 sums' order is numpy's /
XLA:CPU's, whatever `order` the caller asks for.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hloprobe.errors import EmulationError

__all__ = ["ATTENTION_PRIMITIVES", "emulated_attention"]

_FWD = "dot_product_attention_fwd_wrapper"
ATTENTION_PRIMITIVES = (_FWD, "dot_product_attention_bwd_wrapper")
# Algorithm -> whether E is rounded to the input type before E v.
_ROUNDED = {
  "BF16_BF16_F32": True,
  "F16_F16_F32": True,
  "F32_F32_F32": False,
  "F64_F64_F64": False,
}


def _unsupported(eqn, ins) -> str | None:
  """What of the equation is not modelled, in words; None if all is."""
  p = eqn.params
  if eqn.primitive.name != _FWD:
    return "the backward"
  checks = (
    (any(np.size(x) for x in ins[3:]), "bias, mask or sequence lengths"),
    (p.get("is_training"), "training's stats output"),
    (p.get("dropout_rate"), "dropout"),
    (p.get("sliding_window_length"), "a sliding window"),
    (p.get("score_mod") is not None, "a score mod"),
    (
      str(p.get("mask_type")).split(".")[-1] not in ("NO_MASK", "CAUSAL"),
      f"mask {p.get('mask_type')}",
    ),
    (
      ins[0].dtype not in (jnp.bfloat16, jnp.float16, jnp.float32, jnp.float64),
      f"{ins[0].dtype} inputs",
    ),
  )
  return next((words for bad, words in checks if bad), None)


def emulated_attention(eqn, ins, algorithm: str) -> list:
  """The outputs of an attention equation at `algorithm` (module doc).

  Args:
    eqn: a jaxpr equation of `ATTENTION_PRIMITIVES`.
    ins: its operands (q, k, v: [B, T, N, H] for layout 0, [B, N, T, H]
      for layout 1; then the optional operands, empty when unused).
    algorithm: "BF16_BF16_F32", "F16_F16_F32", "F32_F32_F32" or
      "F64_F64_F64".

  Returns:
    [O], in the inputs' layout, in f32 (f64 at F64_F64_F64); the caller
    converts it to the equation's dtype.

  Raises:
    EmulationError: the equation uses what is not modelled, or the
      algorithm is another one.
  """
  if (why := _unsupported(eqn, ins)) is not None:
    raise EmulationError(
      f"[hloprobe] cuDNN fused attention: {why} is not emulated"
    )
  if algorithm not in _ROUNDED:
    raise EmulationError(
      f"[hloprobe] cuDNN fused attention at {algorithm} is not emulated"
    )
  acc = jnp.float64 if algorithm == "F64_F64_F64" else jnp.float32
  btnh = eqn.params.get("layout", 0) == 0
  q, k, v = (
    (x.transpose(0, 2, 1, 3) if btnh else x).astype(acc) for x in ins[:3]
  )
  hi = jax.lax.Precision.HIGHEST
  s = jnp.einsum("bnth,bnsh->bnts", q, k, precision=hi) * acc(
    eqn.params["scale"]
  )
  if str(eqn.params["mask_type"]).endswith("CAUSAL"):
    t, kv = s.shape[-2:]
    keep = jnp.arange(kv)[None, :] <= jnp.arange(t)[:, None]
    s = jnp.where(keep, s, -jnp.inf)
  e = jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))
  row = jnp.sum(e, axis=-1, keepdims=True)
  if _ROUNDED[algorithm]:
    e = e.astype(ins[0].dtype).astype(acc)
  o = jnp.einsum("bnts,bnsh->bnth", e, v, precision=hi) / row
  return [o.transpose(0, 2, 1, 3) if btnh else o]
