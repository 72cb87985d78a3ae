"""Programs from public reports (issue 11) as test-defined cases.

Each is a `cases.Case` built here, not a built-in: the tests pass the record
itself in a sweep's spec (`sweep.SweepSpec((case,), ...)`), which then
compiles it in the test's process. Inputs are numpy draws with fixed seeds
(exact on every CPU). `conv_only` is given by path
(`--case=tests/program_cases.py:conv_only`: numerics/predict_conv_test.py),
so this file imports nothing of tests/.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

from hloprobe.compile import cases

__all__ = [
  "CONTROL_FLOW",
  "attention_bf16",
  "bf16_matmul",
  "control_flow",
  "euler_scan",
  "free_dims_matmul",
  "long_k_matmul",
  "ones_matmul",
  "merged_dots",
  "two_dots",
]


def _uniform(seed: int, *shapes) -> tuple[np.ndarray, ...]:
  g = np.random.default_rng(seed)
  return tuple(g.uniform(size=s).astype(np.float32) for s in shapes)


def two_dots(swap: bool = False) -> cases.Case:
  """(a @ b, matmul(a, b, precision=HIGHEST)), a f32[2,1000], b f32[1000,2].

  Two dot sites on the same operands that differ only in precision and
  source location (issue 11, input 1); `swap` puts HIGHEST first.
  """

  def fn(a, b):
    if swap:
      return jnp.matmul(a, b, precision="highest"), a @ b
    return a @ b, jnp.matmul(a, b, precision="highest")

  name = "t_two_dots_swapped" if swap else "t_two_dots"
  return cases.Case(
    name,
    "two dots on the same operands",
    fn,
    lambda: _uniform(11, (2, 1000), (1000, 2)),
  )


def _same_side(x, w1, w2):
  """(x @ w1) * (x @ w2): two dots sharing their lhs (dot-merger)."""
  return (x @ w1) * (x @ w2)


def _cross_side(x, w1, w2):
  """(x @ w1) * (w2 @ x.T).T: x is one dot's lhs, the other's rhs."""
  return (x @ w1) * (w2 @ x.T).T


def merged_dots(cross: bool = False) -> cases.Case:
  """Two dot sites XLA's dot-merger makes one dot of (issue 21).

  x f32[n,256] (the batch), w1 f32[256,64]; w2 f32[256,64], or f32[64,256]
  with `cross` (the shared operand on different sides), standard normal.
  On an A100 at n = 2 both releases merge the same-side pair into one
  Triton gemm over concatenate(w1, w2); only jaxlib 0.12.0.1 merges the
  cross-side pair (`TryMergeLHSWithRHSOperand`).
  """

  def inputs():
    g = np.random.default_rng(21)
    shapes = ((8, 256), (256, 64), (64, 256) if cross else (256, 64))
    return tuple(g.standard_normal(s).astype(np.float32) for s in shapes)

  return cases.Case(
    "t_merged_cross" if cross else "t_merged",
    "two dots sharing x, merged by dot-merger",
    _cross_side if cross else _same_side,
    inputs,
    in_axes=(0, None, None),
  )


def free_dims_matmul(lhs_shape, rhs_shape, name: str) -> cases.Case:
  """x @ w with several free dimensions (issue 11, input 2), f32 uniform."""
  return cases.Case(
    name,
    f"x{list(lhs_shape)} @ w{list(rhs_shape)}",
    lambda x, w: jnp.matmul(x, w),
    lambda: _uniform(12, lhs_shape, rhs_shape),
  )


def _euler(x, w, v):
  """Four Euler steps h + 0.1 tanh(h @ w) @ v in a `lax.scan`."""

  def step(h, _):
    return h + 0.1 * jnp.tanh(h @ w) @ v, None

  return jax.lax.scan(step, x, None, length=4)[0]


def euler_scan() -> cases.Case:
  """A scan whose body has two dot sites (the pass dump fixtures).

  x f32[n,64] (the batch, n <= 8), w and v f32[64,64]; uniform draws.
  """
  return cases.Case(
    "t_euler_scan",
    "4 Euler steps of h + 0.1 tanh(h @ w) @ v in a lax.scan",
    _euler,
    lambda: _uniform(21, (8, 64), (64, 64), (64, 64)),
    in_axes=(0, None, None),
  )


def long_k_matmul() -> cases.Case:
  """x f32[n,8192] @ w f32[8192,8], n <= 8: a long K to split."""
  return cases.Case(
    "t_long_k",
    "x @ w with K = 8192",
    jnp.matmul,
    lambda: _uniform(22, (8, 8192), (8192, 8)),
    in_axes=(0, None),
  )


def bf16_matmul(rows: int = 4) -> cases.Case:
  """x bf16[n,256] @ w bf16[256,64], standard normal (issue 11, input 3)."""

  def inputs():
    g = np.random.default_rng(3)
    x = g.standard_normal((rows, 256)).astype(ml_dtypes.bfloat16)
    w = g.standard_normal((256, 64)).astype(ml_dtypes.bfloat16)
    return x, w

  return cases.Case("t_bf16_matmul", "bf16 x @ w", jnp.matmul, inputs)


def _attention(q, k, v):
  """bf16 scores, f32 softmax, then probs @ v as an f32 x f32 matmul."""
  probs = jax.nn.softmax(
    jnp.matmul(q, k.T, preferred_element_type=jnp.float32) / 8.0, axis=-1
  )
  return jnp.matmul(probs, v.astype(jnp.float32)).astype(jnp.bfloat16)


def _attention_grad(q, k, v):
  """d/dq of sum(attention): the backward pass has f32 x f32 matmuls."""
  loss = lambda q: _attention(q, k, v).astype(jnp.float32).sum()
  return jax.grad(loss)(q)


def attention_bf16(backward: bool = True) -> cases.Case:
  """A bf16 attention-like program with f32 x f32 matmuls (input 6).

  q bf16[n,64] (the batch), k and v bf16[16,64]; row i of the output
  depends on q's row i only. The output is bf16, whose rounding (2^-9
  relative) hides a TF32 site's (2^-11).
  """

  def inputs():
    g = np.random.default_rng(6)
    shapes = ((8, 64), (16, 64), (16, 64))
    return tuple(
      g.standard_normal(s).astype(ml_dtypes.bfloat16) for s in shapes
    )

  fn = _attention_grad if backward else _attention
  name = "t_attention_grad" if backward else "t_attention"
  return cases.Case(name, "bf16 attention with f32 matmuls", fn, inputs)


# Dot sites in loops, branches and after them (a review found them "gone"),
# and two that read the same parameters: x f32[8,64], w f32[64,64].
CONTROL_FLOW = {
  "scan": lambda x, w: jax.lax.scan(
    lambda h, _: (jnp.tanh(h @ w), None), x, None, length=3
  )[0],
  "fori": lambda x, w: jax.lax.fori_loop(0, 3, lambda i, h: jnp.tanh(h @ w), x),
  "after_cond": lambda x, w: (
    jax.lax.cond(x[0, 0] > 0, lambda a: a * 2, jnp.sin, x) @ w
  ),
  "cond_branches": lambda x, w: jax.lax.cond(
    x[0, 0] > 0, lambda a: a @ w, lambda a: jnp.tanh(a @ w), x
  ),
  # W @ x[0] (a matrix-vector product) and x @ W (a gemm).
  "same_ancestry": lambda x, w: (w @ x[0]).sum() + (x @ w).sum(),
}


def control_flow(kind: str) -> cases.Case:
  """CONTROL_FLOW[kind] on normal draws x f32[8,64], w f32[64,64]."""

  def inputs():
    g = np.random.default_rng(0)
    x = g.standard_normal((8, 64)).astype(np.float32)
    return x, g.standard_normal((64, 64)).astype(np.float32)

  return cases.Case(f"t_{kind}", kind, CONTROL_FLOW[kind], inputs)


def ones_matmul(m: int, k: int, n: int) -> cases.Case:
  """x @ y in f32, x f32[m,k] and y f32[k,n] all ones."""
  return cases.Case(
    f"matmul_{m}x{k}x{n}",
    "x @ y in f32",
    lambda x, y: x @ y,
    lambda: (np.ones((m, k), np.float32), np.ones((k, n), np.float32)),
  )


def conv_only():
  """A program whose only contraction is one convolution (for `explain`)."""

  def f(x, k):
    return jax.lax.conv_general_dilated(
      x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )

  def inputs():
    g = np.random.default_rng(0)
    return (
      g.standard_normal((2, 6, 6, 8)).astype(np.float32),
      g.standard_normal((3, 3, 8, 16)).astype(np.float32),
    )

  return cases.Case(
    "conv_only", "one convolution", f, inputs, in_axes=(0, None)
  )
