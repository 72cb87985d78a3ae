"""Cases: the JAX programs hloprobe sweeps, described, not run.

A `Case` holds a pure JAX function, a way to build its full-size inputs, and
which argument and axis the sweep cuts to each batch size. The registry is
looked up by name; an unknown name is an error.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from hloprobe.errors import CaseError

__all__ = ["CASES", "Case", "ReportedError", "get_case", "seed_mlp"]


@dataclasses.dataclass(frozen=True, slots=True)
class ReportedError:
  """What a case's public report says it saw (the report, not hloprobe).

  Attributes:
    precisions: matmul precisions under which row 0 moved with batch size.
    device: the GPU it was seen on, e.g. "A100".
    compute_capability: that GPU's, e.g. "8.0"; the report is related to
      targets of this compute capability only.
    jaxlib: the reporter's jaxlib version.
    source: where the report is kept.
  """

  precisions: tuple[str, ...]
  device: str
  compute_capability: str
  jaxlib: str
  source: str


@dataclasses.dataclass(frozen=True)
class Case:
  """A JAX program to sweep over batch sizes.

  Attributes:
    name: registry name, e.g. "seed_mlp".
    description: one line on what it is and where it comes from.
    fn: a pure JAX function of `*args`; not jitted.
    make_inputs: builds the full-size inputs, a tuple of numpy arrays or
      pytrees of them (deterministic: fixed seeds).
    batch_arg: index of the argument the sweep cuts.
    batch_axis: axis of that argument cut to the batch size.
    output_axis: axis of the (first) output that follows the batch; the
      float64 reference is sliced along it.
    url: the public report the case comes from, if any.
    reported: what that report saw, where hloprobe should relate to it.
  """

  name: str
  description: str
  fn: Callable
  make_inputs: Callable[[], tuple]
  batch_arg: int = 0
  batch_axis: int = 0
  output_axis: int = 0
  url: str | None = None
  reported: ReportedError | None = None

  def inputs_for(self, full: tuple, n: int) -> tuple:
    """The inputs with the batch argument cut to its first `n` rows.

    Args:
      full: the output of `make_inputs()`.
      n: batch size, 1 <= n <= the full size.

    Raises:
      CaseError: n exceeds the full batch size.
    """
    if n > self.full_size(full):
      raise CaseError(
        f"batch size {n} exceeds case {self.name!r}'s {self.full_size(full)} rows"
      )
    arg = np.asarray(full[self.batch_arg])
    out = list(full)
    out[self.batch_arg] = np.take(arg, np.arange(n), axis=self.batch_axis)
    return tuple(out)

  def full_size(self, full: tuple) -> int:
    """Number of rows the sweep can cut from `full` (a `make_inputs()` result)."""
    return np.shape(full[self.batch_arg])[self.batch_axis]


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
  """The reporter's `gen_mlp` (../shared/seed), with CPU-independent values.

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
  description=(
    "The reporter's vmapped MLP [2,48,48,48,1] with exp(-g^2(x-mu)^2) "
    "sin(16x) activations, PRNGKey(42), on a 64x64 grid (../shared/seed)"
  ),
  fn=_seed_batched,
  make_inputs=_seed_inputs,
  reported=ReportedError(
    precisions=("bfloat16", "tensorfloat32"),
    device="A100",
    compute_capability="8.0",
    jaxlib="0.4.23",
    source="../shared/seed/000_eb4fdd9e59532e7e.txt",
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
  url="https://github.com/tensorflow/tensorflow/pull/127577",
)
jax_11628 = Case(
  "jax_11628",
  "jacrev of x -> M @ x with M f32[rows, 1000]: the Jacobian is M, off by "
  "TF32 rounding (std 2.09e-4 reported on Ampere)",
  _jacrev_linear,
  lambda: _normal(11628, (100, 1000), (1000,)),
  url="https://github.com/jax-ml/jax/issues/11628",
)
jax_15362 = Case(
  "jax_15362",
  "Tutorial MLP 1->512->512->1 vmapped over points: 'worse precision when "
  "using vmap'",
  _mlp_512,
  _mlp_512_inputs,
  batch_arg=6,
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
  url="https://github.com/jax-ml/jax/issues/22557",
)

CASES = {
  c.name: c
  for c in (seed_mlp, tf_127577, jax_11628, jax_15362, jax_27188, jax_22557)
}


def get_case(name: str) -> Case:
  """Looks up a built-in case by name.

  Raises:
    CaseError: the name is unknown.
  """
  if name not in CASES:
    raise CaseError(
      f"unknown case {name!r}; choose from {', '.join(sorted(CASES))}"
    )
  return CASES[name]
