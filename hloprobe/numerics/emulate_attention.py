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

The site's band (`attention_band`) is measured over what a kernel may do
instead: the forward by FlashAttention-2's online softmax (Dao, 2023,
Algorithm 1; cuDNN frontend docs, operations/Attention: cuDNN's SDPA "using
the FlashAttention-2 algorithm", accumulation FLOAT) over key blocks of
`KEY_BLOCKS` keys, and over all keys at once, in numpy f32 with P rounded
to the input type before P v as the algorithm says, each against the
float64 forward of the same inputs. What is an assumption: the block
sizes (cuDNN does not document its tiles; 64 and 128 key columns are
FlashAttention-2's for head dims <= 128), that the row sum l adds the
unrounded f32 P (as FlashAttention-2's kernels do), and the order of the
f32 sums inside a block (numpy's; a tensor core's differs by at most
gamma_K of f32, far below bf16 P's rounding).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hloprobe.errors import EmulationError

__all__ = [
  "ATTENTION_PRIMITIVES",
  "KEY_BLOCKS",
  "attention_band",
  "emulated_attention",
  "flash_forward",
]

_FWD = "dot_product_attention_fwd_wrapper"
ATTENTION_PRIMITIVES = (_FWD, "dot_product_attention_bwd_wrapper")
# Algorithm -> whether E is rounded to the input type before E v.
_ROUNDED = {
  "BF16_BF16_F32": True,
  "F16_F16_F32": True,
  "F32_F32_F32": False,
  "F64_F64_F64": False,
}
# Key block sizes of the online softmax a flash-attention kernel may use
# (the module docstring: an assumption), besides every key at once.
KEY_BLOCKS = (64, 128)


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


def flash_forward(q, k, v, scale: float, causal: bool, block, rounded, dtype):
  """softmax(scale q k^T) v by FlashAttention-2's forward, in numpy.

  Per block of `block` keys (all keys when None), in key order: S_j =
  scale (q k_j^T), m' = max(m, rowmax S_j), P_j = exp(S_j - m'), l =
  exp(m - m') l + rowsum P_j, O = exp(m - m') O + P_j' v_j with P_j'
  P_j rounded to `rounded` (None: not rounded); O / l at the end (Dao,
  2023, Algorithm 1). Every step in `dtype`.

  Args:
    q, k, v: [B, N, T, H], [B, N, S, H], [B, N, S, H] arrays (any float
      type; converted to `dtype` exactly for bf16/f16 inputs).
    scale: the scale of q k^T.
    causal: keep key s for query t only where s <= t.
    block: keys per block, or None.
    rounded: the type P is rounded to before P v (e.g. bfloat16), or None.
    dtype: np.float32 or np.float64.

  Returns:
    O: [B, N, T, H] in `dtype`.
  """
  q, k, v = (np.ascontiguousarray(x, dtype) for x in (q, k, v))
  t, keys = q.shape[-2], k.shape[-2]
  m = np.full(q.shape[:-1] + (1,), -np.inf, dtype)
  total = np.zeros_like(m)
  o = np.zeros(q.shape[:-1] + v.shape[-1:], dtype)
  for start in range(0, keys, block or keys):
    stop = min(start + (block or keys), keys)
    kt = np.ascontiguousarray(np.swapaxes(k[..., start:stop, :], -1, -2))
    s = (q @ kt) * dtype(scale)
    if causal:
      keep = np.arange(start, stop)[None, :] <= np.arange(t)[:, None]
      s = np.where(keep, s, -np.inf)
    new = np.maximum(m, s.max(axis=-1, keepdims=True))
    base = np.where(np.isfinite(new), new, 0)  # rows masked so far
    p = np.exp(s - base)
    alpha = np.exp(np.where(np.isfinite(m), m - base, -np.inf))
    total = alpha * total + p.sum(axis=-1, keepdims=True)
    if rounded is not None:
      p = p.astype(rounded).astype(dtype)
    o = alpha * o + p @ np.ascontiguousarray(v[..., start:stop, :])
    m = new
  return o / total


def attention_band(eqn, ins, algorithm: str) -> tuple | None:
  """The measured error of an attention site's forward at `algorithm`.

  The forward by `flash_forward` in f32 over all keys at once and over
  key blocks of each of `KEY_BLOCKS` (P rounded to the input type where
  `algorithm` rounds it), each against its float64 forward (no rounding)
  on the same q, k, v (module docstring: what is assumed).

  Args:
    eqn: a forward equation of `ATTENTION_PRIMITIVES`.
    ins: its operands, concrete arrays (as `emulated_attention`).
    algorithm: "BF16_BF16_F32", "F16_F16_F32" or "F32_F32_F32".

  Returns:
    (worst_abs: the largest |O - O_f64| over the variants; expected_abs:
    the largest rms of |O - O_f64| over them; scale_max, scale_rms: max and
    rms of P|V|, the second matmul's |A||B| with P the float64
    probabilities), output units; None where the equation is not emulated
    (`emulated_attention`'s limits) or the algorithm is another one.
  """
  if algorithm not in _ROUNDED or algorithm == "F64_F64_F64":
    return None
  if _unsupported(eqn, ins) is not None:
    return None
  btnh = eqn.params.get("layout", 0) == 0
  q, k, v = (
    np.asarray(x).transpose(0, 2, 1, 3) if btnh else np.asarray(x)
    for x in ins[:3]
  )
  scale = float(eqn.params["scale"])
  causal = str(eqn.params["mask_type"]).endswith("CAUSAL")
  ref = flash_forward(q, k, v, scale, causal, None, None, np.float64)
  rounded = np.asarray(ins[0]).dtype if _ROUNDED[algorithm] else None
  worst = expected = 0.0
  for block in (None, *KEY_BLOCKS):
    out = flash_forward(q, k, v, scale, causal, block, rounded, np.float32)
    dev = np.abs(out.astype(np.float64) - ref)
    worst = max(worst, float(np.max(dev, initial=0.0)))
    expected = max(expected, float(np.sqrt(np.mean(np.square(dev)))))
  # P|V|: the float64 forward with |v| is exactly P |v| (P >= 0).
  pv = flash_forward(q, k, np.abs(v), scale, causal, None, None, np.float64)
  return worst, expected, float(np.max(pv)), float(np.sqrt(np.mean(pv**2)))
