"""Cases: the JAX programs hloprobe sweeps, described, not run.

A `Case` holds a pure JAX function, a way to build its full-size inputs, and
which argument and axis the sweep cuts to each batch size. The registry is
looked up by name; an unknown name is an error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from hloprobe.errors import CaseError

__all__ = ["CASES", "Case", "get_case", "seed_mlp"]


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
  """

  name: str
  description: str
  fn: Callable
  make_inputs: Callable[[], tuple]
  batch_arg: int = 0
  batch_axis: int = 0

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


def _gen_mlp(layers: Sequence[int], rng_key):
  """The reporter's `gen_mlp`, unchanged in arithmetic (../shared/seed)."""
  init = jax.nn.initializers.he_uniform(-1, -2)
  weight_key, gamma_key, mu_key = jax.random.split(rng_key, 3)
  weight_keys = jax.random.split(weight_key, len(layers) - 1)
  weights = [
    init(k, (l2, l1)) for k, l1, l2 in zip(weight_keys, layers[:-1], layers[1:])
  ]
  biases = [jnp.zeros(l) for l in layers[1:]]
  gamma_keys = jax.random.split(gamma_key, len(layers) - 2)
  gammas = [
    jax.random.normal(k, shape=(l,)) * 0.5
    for k, l in zip(gamma_keys, layers[1:-1])
  ]
  mu_keys = jax.random.split(mu_key, len(layers) - 2)
  mus = [
    jax.random.uniform(k, shape=(l,), minval=-jnp.pi, maxval=jnp.pi)
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
)

CASES = {c.name: c for c in (seed_mlp,)}


def get_case(name: str) -> Case:
  """Looks up a built-in case by name.

  Raises:
    CaseError: the name is unknown.
  """
  if name not in CASES:
    raise CaseError(f"unknown case {name!r}; choose from {', '.join(sorted(CASES))}")
  return CASES[name]
