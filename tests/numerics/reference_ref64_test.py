"""The float64 reference from the numpy executor, XLA:CPU's where it cannot.

Expected values are numpy float64 evaluations of the programs written here
(the seed MLP, issue 23's scaled dense layer, a Cholesky factor by
numpy.linalg), never hloprobe's own output.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import absltest

from hloprobe import engine
from hloprobe.compile import cases
from hloprobe.numerics import reference
from hloprobe.report import explain, explain_text, results_schema

# Lowers and compiles with XLA (`make test-fast` skips it).
pytestmark = pytest.mark.compiles

_FALLBACK = "XLA:CPU float64 (not executed by the numpy executor: lapack_"
_ALPHA = 0.1
_RNG = np.random.default_rng(3)
_B = _RNG.standard_normal((9, 15)).astype(np.float32)
_A = _RNG.standard_normal((32, 15)).astype(np.float32)
_BIAS = (100 * _RNG.standard_normal(32)).astype(np.float32)
_X = _RNG.standard_normal((4, 4, 4)).astype(np.float32)


def _scaled_dense(b, a, bias):
  """Issue 23's program."""
  return jax.vmap(lambda row: _ALPHA * ((a @ row) + bias))(b)


def _cholesky(x):
  """A LAPACK custom call on the CPU (no numpy model in the executor)."""
  return jnp.linalg.cholesky(x @ jnp.swapaxes(x, 1, 2) + 4 * jnp.eye(4))


def _seed_f64(xs, params) -> np.ndarray:
  """The seed MLP (`builtin_cases._seed_forward` under vmap) in float64."""
  weights, biases, gammas, mus = jax.tree_util.tree_map(
    lambda v: np.asarray(v, np.float64), params
  )
  h = np.asarray(xs, np.float64)
  for w, b, g, m in zip(weights[:-1], biases[:-1], gammas, mus):
    z = h @ w.T + b
    h = np.exp(-(g**2) * (z - m) ** 2) * np.sin(16 * z)
  return (h @ weights[-1].T + biases[-1]).mean(axis=1)


def _refs(case, sizes):
  return reference.References(case, case.full_inputs(), sizes)


class ExecutorReferenceTest(absltest.TestCase):
  def test_seed_is_numpy_float64(self):
    refs = _refs(cases.seed_mlp, (1, 8))
    self.assertEqual(refs.source(8), reference.EXECUTOR_SOURCE)
    xs, params = cases.seed_mlp.full_inputs()
    (got,) = refs.at(8)
    np.testing.assert_allclose(got, _seed_f64(xs[:8], params), rtol=1e-12)

  def test_builtin_einsum_and_pytree_cases_are_numpy_float64(self):
    wide = lambda args: [np.asarray(a, np.float64) for a in args]
    einsum, broadcast = cases.get_case("jax_22557"), cases.get_case("mlx_3953")
    refs = _refs(einsum, (1, 2))
    a, b = wide(einsum.inputs_for(einsum.full_inputs(), 2))
    self.assertEqual(refs.source(2), reference.EXECUTOR_SOURCE)
    np.testing.assert_allclose(
      refs.at(2)[0], np.einsum("ij,kil->kjl", a, b), rtol=1e-12
    )
    refs = _refs(broadcast, (2,))
    ones, v, halves, v2 = wide(broadcast.inputs_for(broadcast.full_inputs(), 2))
    got = refs.at(2)  # two output leaves, in tree-leaves order
    self.assertLen(got, 2)
    np.testing.assert_array_equal(got[0], np.matmul(ones, v))
    np.testing.assert_array_equal(got[1], np.matmul(halves, v2))

  def test_scaled_dense_is_numpy_float64(self):
    case = cases.Case(
      "scaled_dense",
      "",
      _scaled_dense,
      lambda: (_B, _A, _BIAS),
      in_axes=(0, None, None),
    )
    refs = _refs(case, (3,))
    alpha = float(np.float32(_ALPHA))  # the program's f32 constant
    want = alpha * (_B[:3].astype(np.float64) @ _A.T.astype(np.float64) + _BIAS)
    np.testing.assert_allclose(refs.at(3)[0], want, rtol=1e-13)
    self.assertEqual(refs.source(3), reference.EXECUTOR_SOURCE)
    # and the F32 run the noise floor is checked against
    (f32,) = refs.executed_f32(3).outputs
    self.assertEqual(f32.dtype, np.float32)
    np.testing.assert_allclose(f32, want, rtol=1e-5)

  def test_a_custom_call_falls_back_to_xla_cpu_and_says_so(self):
    case = cases.Case("chol", "", _cholesky, lambda: (_X,))
    refs = _refs(case, (2,))
    self.assertStartsWith(refs.source(2), _FALLBACK)
    x = _X[:2].astype(np.float64)
    want = np.linalg.cholesky(x @ np.swapaxes(x, 1, 2) + 4 * np.eye(4))
    np.testing.assert_allclose(refs.at(2)[0], want, rtol=1e-12)
    run = refs.executed_f32(2)
    self.assertIsNone(run.outputs)
    self.assertStartsWith(run.why_not, "lapack_")


class FallbackShownTest(absltest.TestCase):
  """A sweep of the Cholesky case: the fallback in results.json and explain;
  the seed's floor is trusted and its reference is the executor's."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    chol = cases.Case(
      "chol", "", _cholesky, lambda: (_X,), rows_independent=True
    )
    spec = engine.SweepSpec(
      (chol, "seed_mlp"), (1, 2), ("float32",), ("cpu",), explain_passes=True
    )
    cls.results = engine.run_sweep(spec)

  def _of(self, case):
    return [r for r in self.results if r.config.case == case]

  def test_results_json_names_the_reference(self):
    for r in self._of("chol"):
      p = results_schema.config_json(r)["prediction"]
      self.assertStartsWith(p["reference"], _FALLBACK)
      self.assertStartsWith(
        p["noise_floor_check"]["status"],
        "not checked: not executed by the numpy executor: lapack_",
      )
    for r in self._of("seed_mlp"):
      p = results_schema.config_json(r)["prediction"]
      self.assertEqual(p["reference"], reference.EXECUTOR_SOURCE)
      self.assertEqual(p["noise_floor_check"]["status"], "trusted")
      self.assertNotIn("noise floor from XLA:CPU", p["verdict"])

  def test_explain_shows_the_fallback(self):
    chol, seed = explain.explain_results(self.results)
    text = explain_text.render_explanation([chol], width=1000)
    for n in (1, 2):
      self.assertIn(f"n = {n}: reference: {_FALLBACK}", text)
    self.assertNotIn(
      "reference:", explain_text.render_explanation([seed], width=1000)
    )


if __name__ == "__main__":
  absltest.main()
