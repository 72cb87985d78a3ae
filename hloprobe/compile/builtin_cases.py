"""The built-in cases: the seed report's model, ten reports, issues 23 and 24.

Each is a port of a public report's reproducer (`url` names it), or an
issue's program (`issue_cases`); `hloprobe cases` lists them.
Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import statistics
import types
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

from hloprobe.compile.case_model import Case, ReportedError
from hloprobe.compile.invariance_cases import INVARIANCE_CASES
from hloprobe.compile.issue_cases import ISSUE_CASES

__all__ = ["CASES"]

# The seed report: "Large numerical error when using vmap and
# bfloat16/tensorfloat32 matmul precision, only on A100 GPU" (jax, jaxlib
# 0.4.23), with its notebook:
SEED_REPORT = (
  "https://colab.research.google.com/gist/rhacking/"
  "c4a285ee4b6931c3123c71ae8cd9e490/matmul_precision_error.ipynb"
)


def _uniform01(key, shape) -> np.ndarray:
  """`jax.random.uniform(key, shape)`: f32 in [0, 1), made of random bits alone.

  Exact on every CPU: the bits are integer arithmetic, and the scaling to
  [0, 1) (bits as a float in [1, 2), minus 1) is exact in f32.
  """
  return np.asarray(jax.random.uniform(key, shape, jnp.float32))


def _portable_uniform(key, shape, minval: float, maxval: float) -> np.ndarray:
  """`jax.random.uniform(key, shape, minval=, maxval=)`, the same on every CPU.

  jax computes `max(minval, u * (maxval - minval) + minval)` in f32
  (jax/_src/random/core.py `_uniform`, jax 0.10.2); XLA's CPU code may fuse
  that multiply-add into one FMA or not, depending on the ISA it targets
  (`--xla_cpu_max_isa`), which moves the last bit. Here the multiply and the
  add round separately, in numpy f32, whatever the CPU.
  """
  lo, hi = np.float32(minval), np.float32(maxval)
  return np.maximum(lo, _uniform01(key, shape) * (hi - lo) + lo)


def _portable_normal(key, shape) -> np.ndarray:
  """`jax.random.normal(key, shape)` in f32, the same on every CPU.

  jax maps a uniform in (-1, 1) through `sqrt(2) erf_inv(u)`, evaluated by
  an f32 polynomial whose last bit depends on the CPU's ISA (FMA). Here the
  uniform is formed as jax forms it (`_normal_real`, jax 0.10.2) and the
  inverse is `statistics.NormalDist().inv_cdf((u + 1) / 2)` (the same
  function, evaluated in Python float64) rounded once to f32.
  """
  lo = np.nextafter(np.float32(-1), np.float32(0))
  u = _portable_uniform(key, shape, lo, 1.0).astype(np.float64)
  inv = statistics.NormalDist().inv_cdf
  return np.array([inv((v + 1) / 2) for v in u.ravel()], np.float32).reshape(
    shape
  )


def _gen_mlp(layers: Sequence[int], rng_key):
  """The reporter's `gen_mlp` (`SEED_REPORT`), with CPU-independent values.

  Same keys, shapes and distributions as the reporter's code. The weights
  (`he_uniform`: a uniform in [-1, 1) times one scale) are bit-exact on any
  CPU as jax computes them; the gammas and mus use `_portable_normal` and `_portable_uniform`,
  which differ from jax's own values by at most an f32 ULP or so, but are
  the same bits on every CPU (jax's are not: 3 gammas and 72 mus change
  under `--xla_cpu_max_isa=AVX` on jaxlib 0.10.2).
  """
  init = jax.nn.initializers.he_uniform(-1, -2)
  weight_key, gamma_key, mu_key = jax.random.split(rng_key, 3)
  weight_keys = jax.random.split(weight_key, len(layers) - 1)
  weights = [
    np.asarray(init(k, (l2, l1)))
    for k, l1, l2 in zip(weight_keys, layers[:-1], layers[1:])
  ]
  biases = [np.zeros(l, np.float32) for l in layers[1:]]
  gamma_keys = jax.random.split(gamma_key, len(layers) - 2)
  gammas = [
    _portable_normal(k, (l,)) * np.float32(0.5)
    for k, l in zip(gamma_keys, layers[1:-1])
  ]
  mu_keys = jax.random.split(mu_key, len(layers) - 2)
  mus = [
    _portable_uniform(k, (l,), -np.pi, np.pi)
    for k, l in zip(mu_keys, layers[1:-1])
  ]
  return weights, biases, gammas, mus


def _seed_forward(x, params):
  """The reporter's per-example forward: x f32[2] -> f32[] (mean of last)."""
  weights, biases, gammas, mus = params
  for W, b, gamma, mu in zip(weights[:-1], biases[:-1], gammas, mus):
    x = W @ x + b
    x = jnp.exp(-(gamma**2) * jnp.square(x - mu)) * jnp.sin(x * 16.0)
  x = weights[-1] @ x + biases[-1]
  return x.mean()


def _seed_batched(xs, params):
  """`vmap(forward, (0, None))`: xs f32[n, 2] -> f32[n]."""
  return jax.vmap(_seed_forward, (0, None))(xs, params)


def _seed_inputs():
  """The 64x64 meshgrid of [-1, 1]^2 as f32[4096, 2], and the parameters."""
  params = _gen_mlp([2, 48, 48, 48, 1], jax.random.PRNGKey(42))
  params = jax.tree_util.tree_map(np.asarray, params)
  xx, yy = np.meshgrid(np.linspace(-1, 1, 64), np.linspace(-1, 1, 64))
  xy = np.stack([xx.ravel(), yy.ravel()], axis=1).astype(np.float32)
  return xy, params


seed_mlp = Case(
  name="seed_mlp",
  rows_independent=True,
  description=(
    "The reporter's vmapped MLP [2,48,48,48,1] with exp(-g^2(x-mu)^2) "
    "sin(16x) activations, PRNGKey(42), on a 64x64 grid"
  ),
  fn=_seed_batched,
  make_inputs=_seed_inputs,
  reported=ReportedError(
    precisions=("bfloat16", "tensorfloat32"),
    device="A100",
    compute_capability="8.0",
    jaxlib="0.4.23",
    source=SEED_REPORT,
  ),
)


def _normal(seed: int, *shapes, scale: float = 1.0):
  g = np.random.default_rng(seed)
  return tuple(
    (scale * g.standard_normal(s)).astype(np.float32) for s in shapes
  )


def _tf_matmul(a, b):
  """a f32[m, 1024] @ b f32[1024, 512] -> f32[m, 512]."""
  return a @ b


def _tf_inputs():
  g = np.random.default_rng(127577)
  a = (g.standard_normal((256, 1024)) * 300.0).astype(np.float32)
  b = (g.standard_normal((1024, 512)) * 100.0).astype(np.float32)
  return a, b


def _jacrev_linear(mat, x):
  """The Jacobian of v -> mat @ v, i.e. mat itself: f32[rows, 1000]."""
  return jax.jacrev(lambda v: mat @ v)(x)


def _mlp_512_single(w0, c0, w1, c1, w2, c2, point):
  act = jax.nn.relu(jnp.dot(w0, point) + c0)
  act = jax.nn.relu(jnp.dot(w1, act) + c1)
  return jnp.dot(w2, act) + c2


def _mlp_512(w0, c0, w1, c1, w2, c2, points):
  """The JAX tutorial MLP 1->512->512->1 vmapped over points f32[n, 1]."""
  return jax.vmap(_mlp_512_single, in_axes=(None,) * 6 + (0,))(
    w0, c0, w1, c1, w2, c2, points
  )


def _mlp_512_inputs():
  g = np.random.default_rng(15362)
  sizes, params = (1, 512, 512, 1), []
  for n_in, n_out in zip(sizes[:-1], sizes[1:]):
    params.append((1e-2 * g.standard_normal((n_out, n_in))).astype(np.float32))
    params.append((1e-2 * g.standard_normal((n_out,))).astype(np.float32))
  points = np.linspace(0.0, 1e-2, 100, dtype=np.float32)[:, None]
  return tuple(params) + (points,)


def _ensemble(w_in, b_in, w_out, b_out, samples):
  """10 MLPs 100->50->10 on samples f32[n, 100] -> f32[10, n, 10]."""
  one = lambda wi, bi, wo, bo, x: jax.nn.relu(x @ wi + bi) @ wo + bo
  per_sample = jax.vmap(one, in_axes=(None, None, None, None, 0))
  return jax.vmap(per_sample, in_axes=(0, 0, 0, 0, None))(
    w_in, b_in, w_out, b_out, samples
  )


def _einsum(a, b):
  """einsum('ij,kil->kjl'): f32[300,300] x f32[300,300,p] -> f32[300,300,p]."""
  return jnp.einsum("ij,kil->kjl", a, b)


def _einsum_inputs():
  g = np.random.default_rng(22557)
  a = g.uniform(size=(300, 300)).astype(np.float32)
  b = g.uniform(size=(300, 300, 4)).astype(np.float32)
  return a, b


tf_127577 = Case(
  "tf_127577",
  "Large-magnitude (m x 1024) @ (1024 x 512) f32 matmul: a CPU/GPU gap that "
  "is exactly TF32 (relative max 2.95e-4 reported)",
  _tf_matmul,
  _tf_inputs,
  rows_independent=True,
  url="https://github.com/tensorflow/tensorflow/pull/127577",
)
jax_11628 = Case(
  "jax_11628",
  "jacrev of x -> M @ x with M f32[rows, 1000]: the Jacobian is M, off by "
  "TF32 rounding (std 2.09e-4 reported on Ampere)",
  _jacrev_linear,
  lambda: _normal(11628, (100, 1000), (1000,)),
  rows_independent=True,
  url="https://github.com/jax-ml/jax/issues/11628",
)
jax_15362 = Case(
  "jax_15362",
  "Tutorial MLP 1->512->512->1 vmapped over points: 'worse precision when "
  "using vmap'",
  _mlp_512,
  _mlp_512_inputs,
  batch_arg=6,
  rows_independent=True,
  url="https://github.com/jax-ml/jax/issues/15362",
)
jax_27188 = Case(
  "jax_27188",
  "vmapped ensemble of 10 MLPs 100->50->10 over 32 samples: autotuner "
  "'Results do not match the reference'",
  _ensemble,
  lambda: _normal(
    27188, (10, 100, 50), (10, 50), (10, 50, 10), (10, 10), (32, 100)
  ),
  batch_arg=4,
  output_axis=1,
  rows_independent=True,
  url="https://github.com/jax-ml/jax/issues/27188",
)
jax_22557 = Case(
  "jax_22557",
  "einsum 'ij,kil->kjl' of 300x300 and 300x300xP: 80x less accurate on GPU "
  "than f32 on CPU",
  _einsum,
  _einsum_inputs,
  batch_arg=1,
  batch_axis=2,
  output_axis=2,
  rows_independent=True,
  url="https://github.com/jax-ml/jax/issues/22557",
)


def _descriptor_one_frame(env, emb):
  """DeePMD-style descriptor of one frame.

  env f32[atoms, nnei, 4], emb f32[atoms, nnei, 32] -> f32[atoms, 32, 16].
  """
  t = jnp.einsum("ank,anm->akm", env, emb) / env.shape[1]
  return jnp.einsum("akm,akq->amq", t, t[:, :, :16])


def _descriptor(env, emb):
  """The descriptor vmapped over frames: f32[f, 64, 46, 4], f32[f, 64, 46, 32]."""
  return jax.vmap(_descriptor_one_frame)(env, emb)


def _descriptor_inputs():
  g = np.random.default_rng(24909)
  env = g.standard_normal((8, 64, 46, 4)).astype(np.float32)
  emb = np.tanh(g.standard_normal((8, 64, 46, 32))).astype(np.float32)
  return env, emb


def _gram(o):
  """T = O O^T / m for O f32[64, K]: f32[64, 64]."""
  return (o @ o.T) / o.shape[0]


def _gram_inputs(k: int):
  """O f32[64, k] of rank 48 (16 eigenvalues of T near zero).

  Mixed in float64 and rounded once to f32, so the bits do not depend on
  the CPU's BLAS.
  """
  g = np.random.default_rng(19444)
  mix = g.standard_normal((64, 48))
  basis = g.standard_normal((48, k))
  return (((mix @ basis) / np.sqrt(48)).astype(np.float32),)


def _matmul(a, b):
  """a @ b (any dtype; the result has the operands' dtype)."""
  return a @ b


def _bf16_inputs():
  g = np.random.default_rng(21212)
  a = g.uniform(size=(256, 1024)).astype(ml_dtypes.bfloat16)
  b = g.uniform(size=(1024, 1024)).astype(ml_dtypes.bfloat16)
  return a, b


def _attention_inputs():
  """Softmax probabilities f16[32, 116, 116] and values f16[32, 116, 128]."""
  g = np.random.default_rng(105726)
  logits = g.standard_normal((32, 116, 116)) * 3.0
  p = np.exp(logits - logits.max(-1, keepdims=True))
  p = (p / p.sum(-1, keepdims=True)).astype(np.float16)
  v = g.standard_normal((32, 116, 128)).astype(np.float16)
  return p, v


def _broadcast_matmul(ones, v, halves, v2):
  """K = 1 and K = 2 matmuls with a broadcast right operand.

  ones f32[1, h, 1, 1] @ v f32[1, 1, 1, 512] -> f32[1, h, 1, 512] (K = 1),
  halves f32[1, h, 1, 2] @ v2 f32[1, 1, 2, 512] -> f32[1, h, 1, 512].
  """
  return jnp.matmul(ones, v), jnp.matmul(halves, v2)


def _broadcast_inputs():
  g = np.random.default_rng(3953)
  v = g.standard_normal((1, 1, 1, 512)).astype(np.float32)
  v2 = g.standard_normal((1, 1, 2, 512)).astype(np.float32)
  ones = np.ones((1, 16, 1, 1), np.float32)
  halves = np.full((1, 16, 1, 2), 0.5, np.float32)
  return ones, v, halves, v2


jax_24909 = Case(
  "jax_24909",
  "DeePMD-style descriptor, two batched einsums vmapped over frames: "
  "default-precision Triton gemms 'very low precision'",
  _descriptor,
  _descriptor_inputs,
  in_axes=(0, 0),
  rows_independent=True,
  url="https://github.com/jax-ml/jax/issues/24909",
)
jax_19444 = Case(
  "jax_19444",
  "Gram matrix O O^T / 64 of a rank-48 f32[64, K], swept over K: loses "
  "positive semi-definiteness on A100",
  _gram,
  _gram_inputs,
  swept_size="K",
  url="https://github.com/jax-ml/jax/issues/19444",
)
jax_21212 = Case(
  "jax_21212",
  "bf16 (m x 1024) @ (1024 x 1024): slower than f32 on a T4 (no bf16 "
  "there: converts around an f32 gemm)",
  _matmul,
  _bf16_inputs,
  rows_independent=True,
  url="https://github.com/jax-ml/jax/issues/21212",
)
pytorch_105726 = Case(
  "pytorch_105726",
  "f16 attention probabilities @ values [b,116,116] x [b,116,128]: other "
  "bytes on A100 than on RTX 3090 (port)",
  _matmul,
  _attention_inputs,
  in_axes=(0, 0),
  rows_independent=True,
  url="https://github.com/pytorch/pytorch/issues/105726",
)
mlx_3953 = Case(
  "mlx_3953",
  "K = 1 and K = 2 matmuls with a broadcast right operand over h heads: "
  "TF32-class error in MLX; exact K = 1 multiply in XLA (port)",
  _broadcast_matmul,
  _broadcast_inputs,
  in_axes=(1, None, 1, None),
  output_axis=1,
  rows_independent=True,
  url="https://github.com/ml-explore/mlx/issues/3953",
)


# Issue 23: a scaled dense layer, the pattern of every Euler step, residual
# branch or `scale * (x @ W + b)`. Under jaxlib 0.10.2, with Triton gemms
# off, XLA's GemmRewriter folds the scale into a cuBLASLt call's alpha over a
# BIAS epilogue (`0.1 * (a @ row) + bias`, every output off by 0.9 * bias).
_SCALED_DENSE_ALPHA = 0.1


def _scaled_dense(b, a, bias):
  return jax.vmap(lambda row: _SCALED_DENSE_ALPHA * ((a @ row) + bias))(b)


def _scaled_dense_inputs():
  g = np.random.default_rng(0)
  b = g.standard_normal((9, 15)).astype(np.float32)
  a = g.standard_normal((32, 15)).astype(np.float32)
  bias = (100 * g.standard_normal(32)).astype(np.float32)
  return b, a, bias


scaled_dense = Case(
  "scaled_dense",
  "0.1 * (a @ row + bias), vmapped: b f32[n, 15], a f32[32, 15], bias "
  "f32[32] (|bias| ~ 100); XLA may fold the 0.1 into a cuBLASLt alpha over "
  "a BIAS epilogue (issue 23)",
  _scaled_dense,
  _scaled_dense_inputs,
  in_axes=(0, None, None),
  output_axis=0,
)

# Read only: cases are passed in (a `Case` record in a sweep's spec), never
# added here at run time.
CASES = types.MappingProxyType(
  {
    c.name: c
    for c in (
      seed_mlp,
      tf_127577,
      jax_11628,
      jax_15362,
      jax_27188,
      jax_22557,
      jax_24909,
      jax_19444,
      jax_21212,
      pytorch_105726,
      mlx_3953,
      scaled_dense,
      *ISSUE_CASES,
      *INVARIANCE_CASES,
    )
  }
)
