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

Also modelled (issue 40, `jax.nn.dot_product_attention(...,
implementation="cudnn")` as users call it): a bias (S = scale q k^T +
bias, the bias read in its own type and added in f32, as jax's own XLA
path orders it), the padding masks of `query_seq_lengths` /
`key_value_seq_lengths` (keys at or past a batch element's kv length
masked, query rows past its q length written as 0), causal with padding,
grouped-query attention (k and v with N / g heads, each shared by g query
heads), training's softmax stats (L = m + log l, f32 [B, N, T]) and the
backward, as FlashAttention-2's (Dao, 2023, Algorithm 2) from the given
stats and output: dP = dO V^T, dS = P (dP - rowsum(dO O)), P and dS
rounded to the input type as the second operands of their tensor-core
gemms (dV = P' dO, dQ = scale dS' K, dK = scale dS'^T Q), dbias the f32
dS summed over the bias's broadcast axes; a key/value head's gradient is
the sum over its query heads. A bias whose dtype is not q's is named
(`bias_mismatch`). Not modelled (an `EmulationError` names it): sliding
windows, dropout, score mods, sequence packing (offsets), paged
attention, fp8. The backward site has no measured band (`attention_band`
is the forward's); its outputs are still judged against float64 and the
all-F32 noise floor. An approximation, stated: FlashAttention-2 takes
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
  "bias_mismatch",
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


# The operands after q, k, v (jax/_src/cudnn/fused_attention_stablehlo.py,
# jax 0.10.2 and 0.12.0.1): bias, q_seqlen, kv_seqlen, q_offsets,
# kv_offsets, page_table_k, page_table_v (each empty, shape (0,), when
# unused); the backward then takes activation (the softmax stats, f32
# [B, N, T]), fwd_output and grad_output.
_BIAS, _Q_LEN, _KV_LEN = 3, 4, 5
_PACKED = slice(6, 10)
_BWD = ATTENTION_PRIMITIVES[1]
_MASKS = ("NO_MASK", "CAUSAL", "PADDING", "PADDING_CAUSAL")


def _mask(eqn) -> str:
  return str(eqn.params.get("mask_type")).split(".")[-1]


def _unsupported(eqn, ins) -> str | None:
  """What of the equation is not modelled, in words; None if all is."""
  p = eqn.params
  checks = (
    (
      any(np.size(x) for x in ins[_PACKED]),
      "sequence packing (offsets) or paged attention",
    ),
    (p.get("dropout_rate"), "dropout"),
    (p.get("sliding_window_length"), "a sliding window"),
    (p.get("score_mod") is not None, "a score mod"),
    (_mask(eqn) not in _MASKS, f"mask {p.get('mask_type')}"),
    (
      ins[0].dtype not in (jnp.bfloat16, jnp.float16, jnp.float32, jnp.float64),
      f"{ins[0].dtype} inputs",
    ),
  )
  return next((words for bad, words in checks if bad), None)


def bias_mismatch(eqn) -> tuple[str, str] | None:
  """A bias whose dtype is not q's: (the bias's dtype, q's), e.g.
  ("float32", "bfloat16"); None without a bias or where they agree. cuDNN reads the
  bias in its own type and adds it in f32 (the emulation does the same);
  jax's `dot_product_attention` passes it as given."""
  if len(eqn.invars) <= _BIAS:
    return None
  bias, q = eqn.invars[_BIAS].aval, eqn.invars[0].aval
  if not np.prod(bias.shape) or bias.dtype == q.dtype:
    return None
  return str(bias.dtype), str(q.dtype)


def _bnth(eqn, x, acc):
  """[B, N, T, H] in `acc` from the equation's layout."""
  x = x.astype(acc)
  return x.transpose(0, 2, 1, 3) if eqn.params.get("layout", 0) == 0 else x


def _back(eqn, x):
  return x.transpose(0, 2, 1, 3) if eqn.params.get("layout", 0) == 0 else x


def _scores(eqn, ins, q, k, acc):
  """S = scale q k^T + bias (f32 sums of exact products, the bias read in
  its own type and added in `acc`), masked keys -inf; and the valid query
  rows ([B, 1, T, 1] booleans: all but padding)."""
  hi = jax.lax.Precision.HIGHEST
  s = jnp.einsum("bnth,bnsh->bnts", q, k, precision=hi) * acc(
    eqn.params["scale"]
  )
  if np.size(ins[_BIAS]):
    s = s + ins[_BIAS].astype(acc)
  t, kv = s.shape[-2:]
  keep = jnp.ones((1, 1, t, kv), bool)
  rows = jnp.ones((s.shape[0], 1, t, 1), bool)
  mask = _mask(eqn)
  if mask.endswith("CAUSAL"):
    keep = keep & (jnp.arange(kv)[None, :] <= jnp.arange(t)[:, None])
  if mask.startswith("PADDING"):
    q_len = jnp.asarray(ins[_Q_LEN]).reshape(-1)[: s.shape[0]]
    kv_len = jnp.asarray(ins[_KV_LEN]).reshape(-1)[: s.shape[0]]
    keep = keep & (
      jnp.arange(kv)[None, None, None, :] < kv_len[:, None, None, None]
    )
    rows = jnp.arange(t)[None, None, :, None] < q_len[:, None, None, None]
  return jnp.where(keep, s, -jnp.inf), rows


def _heads(q, x):
  """k or v repeated to q's heads (grouped-query attention: N_q / N_kv
  query heads share each key/value head)."""
  group = q.shape[1] // x.shape[1]
  return x if group == 1 else jnp.repeat(x, group, axis=1)


def _forward(eqn, ins, algorithm, acc):
  q, k, v = (_bnth(eqn, x, acc) for x in ins[:3])
  k, v = _heads(q, k), _heads(q, v)
  s, rows = _scores(eqn, ins, q, k, acc)
  top = jnp.max(s, axis=-1, keepdims=True)
  top = jnp.where(jnp.isfinite(top), top, 0)  # a row with every key masked
  e = jnp.exp(s - top)
  row = jnp.sum(e, axis=-1, keepdims=True)
  safe = jnp.where(row > 0, row, 1)
  stats = (top + jnp.log(safe))[..., 0]
  if _ROUNDED[algorithm]:
    e = e.astype(ins[0].dtype).astype(acc)
  hi = jax.lax.Precision.HIGHEST
  o = jnp.einsum("bnts,bnsh->bnth", e, v, precision=hi) / safe
  o = jnp.where(rows, o, 0)  # padded queries: zeros, as cuDNN writes them
  outs = [_back(eqn, o)]
  if len(eqn.outvars) > 1:  # training: the softmax stats, [B, N, T]
    outs.append(jnp.where(rows[..., 0], stats, 0))
  return outs


def _backward(eqn, ins, algorithm, acc):
  """FlashAttention-2's backward (Dao, 2023, Algorithm 2) from the
  forward's stats L and output O as given: P = exp(S - L), dV = P' dO, dP
  = dO V^T, D = rowsum(dO * O), dS = P * (dP - D), dQ = scale dS' K, dK =
  scale dS'^T Q, dbias = dS summed over the bias's broadcast axes; P' and
  dS' rounded to the input type where the algorithm rounds (the second
  operand of a tensor-core gemm), every sum in `acc`."""
  q, k, v = (_bnth(eqn, x, acc) for x in ins[:3])
  n_kv = k.shape[1]
  k, v = _heads(q, k), _heads(q, v)
  stats = jnp.asarray(ins[10]).astype(acc)[..., None]
  o, d_o = (_bnth(eqn, x, acc) for x in ins[11:13])
  s, rows = _scores(eqn, ins, q, k, acc)
  p = jnp.where(rows, jnp.exp(s - stats), 0)
  rnd = (
    (lambda x: x.astype(ins[0].dtype).astype(acc))
    if _ROUNDED[algorithm]
    else (lambda x: x)
  )
  hi = jax.lax.Precision.HIGHEST
  dv = jnp.einsum("bnts,bnth->bnsh", rnd(p), d_o, precision=hi)
  dp = jnp.einsum("bnth,bnsh->bnts", d_o, v, precision=hi)
  big_d = jnp.sum(d_o * o, axis=-1, keepdims=True)
  ds = p * (dp - big_d)
  scale = acc(eqn.params["scale"])
  dq = jnp.einsum("bnts,bnsh->bnth", rnd(ds), k, precision=hi) * scale
  dk = jnp.einsum("bnts,bnth->bnsh", rnd(ds), q, precision=hi) * scale

  def grouped(x):  # each key/value head's gradient over its query heads
    b, n, t, h = x.shape
    return x.reshape(b, n_kv, n // n_kv, t, h).sum(axis=2)

  outs = [_back(eqn, dq), _back(eqn, grouped(dk)), _back(eqn, grouped(dv))]
  if len(eqn.outvars) > 3:  # dbias, of the bias's shape
    shape = eqn.outvars[3].aval.shape
    axes = tuple(i for i, (a, b) in enumerate(zip(shape, ds.shape)) if a != b)
    outs.append(jnp.sum(ds, axis=axes, keepdims=True).reshape(shape))
  return outs


def emulated_attention(eqn, ins, algorithm: str) -> list:
  """The outputs of an attention equation at `algorithm` (module doc).

  Args:
    eqn: a jaxpr equation of `ATTENTION_PRIMITIVES`.
    ins: its operands (q, k, v: [B, T, N, H] for layout 0, [B, N, T, H]
      for layout 1, k and v with N / g heads for grouped-query attention;
      then bias (broadcastable to [B, N, T, S]), q_seqlen, kv_seqlen
      (int32 [B]), offsets and page tables, each empty when unused; the
      backward then the forward's stats [B, N, T], its output and the
      output's gradient).
    algorithm: "BF16_BF16_F32", "F16_F16_F32", "F32_F32_F32" or
      "F64_F64_F64".

  Returns:
    The forward's [O] ([O, stats] when training), the backward's [dQ, dK,
    dV] (and dbias with a bias), each in the equation's layout, in f32
    (f64 at F64_F64_F64); the caller converts them to the equation's
    dtypes.

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
  if eqn.primitive.name == _BWD:
    return _backward(eqn, ins, algorithm, acc)
  return _forward(eqn, ins, algorithm, acc)


def flash_forward(
  q,
  k,
  v,
  scale: float,
  causal: bool,
  block,
  rounded,
  dtype,
  bias=None,
  keep=None,
):
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
    bias: added to S (read in its own type, added in `dtype`),
      broadcastable to [B, N, T, S]; or None.
    keep: booleans broadcastable to [B, N, T, S], False for a masked key
      (padding); or None. A query row with every key masked gives 0.

  Returns:
    O: [B, N, T, H] in `dtype`.
  """
  q, k, v = (np.ascontiguousarray(x, dtype) for x in (q, k, v))
  kept = None if keep is None else np.asarray(keep)
  t, keys = q.shape[-2], k.shape[-2]
  m = np.full(q.shape[:-1] + (1,), -np.inf, dtype)
  total = np.zeros_like(m)
  o = np.zeros(q.shape[:-1] + v.shape[-1:], dtype)
  for start in range(0, keys, block or keys):
    stop = min(start + (block or keys), keys)
    kt = np.ascontiguousarray(np.swapaxes(k[..., start:stop, :], -1, -2))
    s = (q @ kt) * dtype(scale)
    if bias is not None:
      s = s + np.asarray(bias)[..., start:stop].astype(dtype)
    if kept is not None:
      s = np.where(kept[..., start:stop], s, -np.inf)
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
  with np.errstate(invalid="ignore", divide="ignore"):
    return np.where(total > 0, o / np.where(total > 0, total, 1), 0).astype(
      dtype
    )


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
  if eqn.primitive.name == _BWD or _unsupported(eqn, ins) is not None:
    return None  # the backward's band is not measured: its verdict is
  btnh = eqn.params.get("layout", 0) == 0
  q, k, v = (
    np.asarray(x).transpose(0, 2, 1, 3) if btnh else np.asarray(x)
    for x in ins[:3]
  )
  group = q.shape[1] // k.shape[1]  # grouped-query attention
  k, v = (np.repeat(x, group, axis=1) for x in (k, v))
  scale = float(eqn.params["scale"])
  causal = _mask(eqn).endswith("CAUSAL")
  bias = np.asarray(ins[_BIAS]) if np.size(ins[_BIAS]) else None
  keep = None
  if _mask(eqn).startswith("PADDING"):
    b, t, keys = q.shape[0], q.shape[2], k.shape[2]
    q_len = np.asarray(ins[_Q_LEN]).reshape(-1)[:b, None, None, None]
    kv_len = np.asarray(ins[_KV_LEN]).reshape(-1)[:b, None, None, None]
    keep = (np.arange(keys)[None, None, None, :] < kv_len) & (
      np.arange(t)[None, None, :, None] < q_len
    )
  forward = lambda v, block, rounded, dtype: flash_forward(
    q, k, v, scale, causal, block, rounded, dtype, bias, keep
  )
  ref = forward(v, None, None, np.float64)
  rounded = np.asarray(ins[0]).dtype if _ROUNDED[algorithm] else None
  worst = expected = 0.0
  for block in (None, *KEY_BLOCKS):
    out = forward(v, block, rounded, np.float32)
    dev = np.abs(out.astype(np.float64) - ref)
    worst = max(worst, float(np.max(dev, initial=0.0)))
    expected = max(expected, float(np.sqrt(np.mean(np.square(dev)))))
  # P|V|: the float64 forward with |v| is exactly P |v| (P >= 0).
  pv = forward(np.abs(v), None, None, np.float64)
  return worst, expected, float(np.max(pv)), float(np.sqrt(np.mean(pv**2)))
