"""Rows proven independent from a case's jaxpr (`numerics.row_proof`), and
the predictor judging a sample of rows of an undeclared case it proves
(issue 37 item 2).

Expected answers are the primitives' shape semantics worked by hand (a
row of x @ W is that row of x times W; x - x.mean(0) mixes every row);
each case is traced (`jax.make_jaxpr`), nothing is compiled.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest, parameterized
from jax import lax

from hloprobe.compile import Case
from hloprobe.numerics import accuracy, predict, reference, row_proof, rows

_G = np.random.default_rng(0)
_X = _G.standard_normal((100, 16)).astype(np.float32)
_W = _G.standard_normal((16, 8)).astype(np.float32)


def _case(fn, x=_X, w=_W, in_axes=(0, None), output_axis=0, declared=False):
  return Case(
    "proof",
    "a row_proof test case",
    fn,
    lambda: (x, w),
    in_axes=in_axes,
    output_axis=output_axis,
    rows_independent=declared,
  )


def _proof(case, n=4):
  full = case.make_inputs()
  args = case.inputs_for(full, n)
  shapes = jax.eval_shape(case.fn, *args)
  axes = case.output_axes([a.shape for a in jax.tree_util.tree_leaves(shapes)])
  return row_proof.proof(case, args, axes)


def _layer_norm(x):
  mean = jnp.mean(x, -1, keepdims=True)
  return (x - mean) * lax.rsqrt(jnp.var(x, -1, keepdims=True) + 1e-5)


_KEY = jax.random.key(0)


def _bsum(w, x):
  """w's first row broadcast to x's rows, summed over them: n x w[0]."""
  return jnp.broadcast_to(w[0, :1], (x.shape[0], 1)).sum(0)


@jax.jit
def _inner(h):
  return jax.nn.gelu(h) * 2.0


class ProvenTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("dense", lambda x, w: x @ w, 0),
    ("layer_norm_softmax", lambda x, w: jax.nn.softmax(_layer_norm(x) @ w), 0),
    ("a_jit_and_custom_jvp_inside", lambda x, w: _inner(x @ w), 0),
    ("vmap_of_a_row", lambda x, w: jax.vmap(lambda r: jnp.tanh(r @ w))(x), 0),
    (
      "sort_and_cumsum_along_features",
      lambda x, w: jnp.cumsum(jnp.sort(x), -1),
      0,
    ),
    # x.T is (16, n); reshaped (4, 4, n) it keeps the batch axis last and
    # whole; the sum over axis 0 leaves (4, n): the batch at axis 1.
    ("transpose_reshape", lambda x, w: (x.T.reshape(4, 4, -1) * 2).sum(0), 1),
  )
  def test_independent(self, fn, axis):
    self.assertIsNone(_proof(_case(fn, output_axis=axis)))

  def test_numpy_integer_axes(self):
    # in_axes and params may hold numpy integers (seed_mlp's did): the
    # same axes as Python's.
    case = _case(
      lambda x, w: jnp.tanh(x @ w) / 2.0, in_axes=(np.int64(0), None)
    )
    self.assertIsNone(_proof(case))

  def test_batch_on_a_rhs_free_axis(self):
    # W @ x.T: each output column is W's rows times one row of x.
    case = _case(lambda x, w: w.T @ x.T, output_axis=1)
    self.assertIsNone(_proof(case))

  def test_conv_over_a_shared_kernel(self):
    x = _G.standard_normal((6, 8, 8, 3)).astype(np.float32)
    k = _G.standard_normal((3, 3, 3, 4)).astype(np.float32)
    conv = lambda x, k: lax.conv_general_dilated(
      x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    self.assertIsNone(_proof(_case(conv, x, k)))


class NotProvenTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("batch_mean", lambda x, w: (x - x.mean(0)) @ w, "'reduce_sum' along"),
    ("rows_crossed", lambda x, w: x @ x.T, "'dot_general' (rows"),
    ("sort_along_rows", lambda x, w: jnp.sort(x, axis=0), "'sort' along"),
    ("a_shift_of_rows", lambda x, w: jnp.roll(x, 1, axis=0), "along"),
    ("a_gather", lambda x, w: x[:, jnp.array([3, 1])], "'gather'"),
    ("cumsum_over_rows", lambda x, w: jnp.cumsum(x, 0), "'cumsum' along"),
    # No axis: jnp.cumsum flattens the batch into one running sum.
    ("cumsum_flattened", lambda x, w: jnp.cumsum(x), "'reshape' (the batch"),
  )
  def test_mixed_or_not_followed(self, fn, why):
    got = _proof(_case(fn))
    self.assertIsNotNone(got)
    self.assertIn(why, got)

  @parameterized.named_parameters(
    ("row_index", lambda x, w: x * jnp.arange(x.shape[0])[:, None]),
    ("random_rows", lambda x, w: x + jax.random.normal(_KEY, x.shape)),
    ("a_broadcast_summed_over_rows", lambda x, w: x - _bsum(w, x)),
  )
  def test_values_made_along_the_batch_size(self, fn):
    # Shared data, but different for each row index (or for the batch
    # size): rows gathered would get other values.
    self.assertIn("along the batch size", _proof(_case(fn)))

  def test_a_broadcast_along_the_batch_is_shared(self):
    fn = lambda x, w: x[:, :8] + jnp.broadcast_to(w[0], (x.shape[0], 8))
    self.assertIsNone(_proof(_case(fn)))

  def test_an_output_axis_other_than_the_case_names(self):
    got = _proof(_case(lambda x, w: (x @ w).T, output_axis=0))
    self.assertEqual(got, "output leaf 0: batch axis 1, the case names 0")

  def test_a_shared_output_named_batched(self):
    got = _proof(_case(lambda x, w: w.sum(1), output_axis=0))
    self.assertEqual(got, "output leaf 0: batch axis None, the case names 0")


def _stats(row_abs):
  row_abs = np.asarray(row_abs, np.float64)
  top = float(np.max(row_abs))
  return accuracy.ErrorStats(
    1.0, 1.0, float(row_abs[0]), top, top, row_abs=row_abs
  )


class PredictorTest(absltest.TestCase):
  """An undeclared case above `rows.ALL_ROWS_UP_TO` rows: a sample judged
  where the jaxpr proves its rows independent, every row otherwise."""

  def _judged(self, fn, n=100):
    case = _case(fn)
    full = case.make_inputs()
    refs = reference.References(case, full, (n,))
    predictor = predict.Predictor(case, full, refs)
    errors = np.full(n, 1e-7)
    errors[n - 23] = 1.0
    return predictor._judged(n, (_stats(errors),)), predictor

  def test_proven_rows_are_sampled(self):
    judged, predictor = self._judged(lambda x, w: jnp.tanh(x @ w))
    self.assertIsNotNone(judged)
    self.assertEqual((judged[0], judged[-1]), (0, 99))
    self.assertIn(77, judged)  # the first pass's worst (row n - 23)
    self.assertLess(len(judged), 100)
    self.assertIsNone(predictor.subset_why)

  def test_unproven_rows_are_all_judged(self):
    judged, predictor = self._judged(lambda x, w: (x - x.mean(0)) @ w)
    self.assertIsNone(judged)
    self.assertIn("'reduce_sum' along the batch axis", predictor.subset_why)

  def test_up_to_the_bound_every_row(self):
    judged, _ = self._judged(lambda x, w: x @ w, n=rows.ALL_ROWS_UP_TO)
    self.assertIsNone(judged)


if __name__ == "__main__":
  absltest.main()
