"""A deep program's fixed orders with each dot site compiled alone
(`emulate_outlined`, issue 37: compiles that do not grow with depth).

Independent sources: numpy's f32 arithmetic for the sequential order (k =
0, 1, ...: each running sum rounded to f32 after a fused multiply-add, as
XLA:CPU contracts `acc + a * b` where the CPU has FMA, or after the product
rounded too, where it has not: `--xla_cpu_max_isa=AVX`; both seen on jaxlib
0.12.0.1 and 0.10.2; operands rounded to TF32 by bit arithmetic,
`testutil.tf32_rna`); jax's public compile events for the compile counts
(`testutil.xla_compiles`).
"""

from __future__ import annotations

from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import testutil
from absl.testing import absltest
from jax.sharding import PartitionSpec as P

from hloprobe.compile import cases
from hloprobe.errors import EmulationError, InvalidArgumentError
from hloprobe.numerics import (
  emulate,
  emulate_dot,
  emulate_outlined,
  emulation_cache,
  evaluator,
)
from hloprobe.numerics.jaxpr_sites import jaxpr_sites

pytestmark = [pytest.mark.cpu_numerics]

_F32, _TF32 = "F32_F32_F32", "TF32_TF32_F32"


def _stack(layers: int, width: int = 24):
  """x @ W_0 + b_0, then ... @ W_l + b_l: `layers` dots of one shape,
  (2, width) x (width, width)."""

  def fn(x, ws, bs):
    for w, b in zip(ws, bs):
      x = jnp.matmul(x, w) + b
    return x

  g = np.random.default_rng(3)
  x = g.standard_normal((2, width)).astype(np.float32)
  ws = [
    g.standard_normal((width, width)).astype(np.float32) for _ in range(layers)
  ]
  bs = [g.standard_normal((width,)).astype(np.float32) for _ in range(layers)]
  return fn, (x, ws, bs)


def _sequential_f32(x, ws, bs, names, fused: bool):
  """The stack in numpy f32, each dot's terms summed in k order: with
  `fused`, each step one rounding of the exact acc + a * b (an FMA; exact
  in float64: 48 significant bits of product), else two."""
  for w, b, name in zip(ws, bs, names):
    a, v = (
      (testutil.tf32_rna(x), testutil.tf32_rna(w)) if name == _TF32 else (x, w)
    )
    acc = np.zeros((a.shape[0], v.shape[1]), np.float32)
    for k in range(a.shape[1]):
      ak, vk = a[:, k : k + 1], v[k : k + 1, :]
      if fused:
        acc = (acc + ak.astype(np.float64) * vk).astype(np.float32)
      else:
        acc = acc + ak * vk
    x = acc + b
  return x


def _assert_sequential(got, x, ws, bs, names):
  """`got` is the stack's sequential f32 loop, fused or not, bit for bit."""
  fused = _sequential_f32(x, ws, bs, names, True)
  plain = _sequential_f32(x, ws, bs, names, False)
  if not np.array_equal(got, fused):
    np.testing.assert_array_equal(got, plain)


class RepeatsTest(absltest.TestCase):
  def test_a_stack_repeats_from_two_layers(self):
    for layers, want in ((1, False), (2, True), (5, True)):
      fn, args = _stack(layers)
      self.assertEqual(
        emulate_outlined.repeats(jaxpr_sites(fn, args)), want, layers
      )

  def test_distinct_shapes_do_not_repeat(self):
    fn = lambda x, w, v: jnp.matmul(jnp.matmul(x, w), v)
    args = (np.ones((2, 8), np.float32), np.ones((8, 4), np.float32))
    args += (np.ones((4, 3), np.float32),)
    self.assertFalse(emulate_outlined.repeats(jaxpr_sites(fn, args)))
    self.assertFalse(emulate_outlined.repeats(()))


@pytest.mark.compiles
class OutlinedEmulationTest(absltest.TestCase):
  def test_the_sequential_order_is_numpy_s_f32_loop(self):
    fn, args = _stack(3)
    runs = emulate_outlined.OutlinedEmulation(
      fn, args, (emulate.SWITCHABLE,) * 3, order="sequential"
    )
    leaves = jax.tree_util.tree_leaves(args)
    for names in ((_F32,) * 3, (_TF32, _F32, _TF32)):
      (got,) = runs(names, leaves)
      _assert_sequential(got, *args, names)
    # F32's operands tell a fused loop from a plain one, and both from
    # another order's sums.
    fused, plain = (_sequential_f32(*args, (_F32,) * 3, f) for f in (1, 0))
    self.assertFalse(np.array_equal(fused, plain))
    (pairwise,) = emulate_outlined.OutlinedEmulation(
      fn,
      args,
      ((_F32,),) * 3,
      order="pairwise",
    )((_F32,) * 3, leaves)
    self.assertFalse(np.array_equal(pairwise, fused))
    self.assertFalse(np.array_equal(pairwise, plain))

  def test_its_sites_are_made_in_tiles_of_columns(self):
    # 2 x 160 x 160 dots, tiles of 64 columns (2 x 64 outputs): two whole
    # tiles and 32 columns left (`emulate_dot._TILE_OUTPUTS`, issue 37: a
    # site computed alone keeps its running sums in the caches), each
    # column numpy's sequential loop.
    fn, args = _stack(2, width=160)
    with mock.patch.object(emulate_dot, "_TILE_OUTPUTS", 2 * 64):
      runs = emulate_outlined.OutlinedEmulation(
        fn, args, (emulate.SWITCHABLE,) * 2, order="sequential"
      )
      for names in ((_F32, _F32), (_TF32, _F32)):
        (got,) = runs(names, jax.tree_util.tree_leaves(args))
        _assert_sequential(got, *args, names)

  def test_another_single_pass_algorithm_shares_f32_s_site_dots(self):
    # TF32 and BF16 sites are F32's dots of operands rounded first
    # (`emulate_dot.rounded_operand`): a walk at BF16 after F32's and
    # TF32's adds no site dot to jax's cache (the first rounded walk adds
    # one entry, for arrays where the first site read numpy's: no XLA
    # compile) and compiles the roundings of its two operand shapes alone;
    # its sites are still numpy's TF32 loop.
    fn, args = _stack(3, width=40)
    runs = emulate_outlined.OutlinedEmulation(
      fn, args, (emulate.SWITCHABLE,) * 3, order="blocked"
    )
    leaves = jax.tree_util.tree_leaves(args)
    runs((_F32,) * 3, leaves)
    runs((_TF32,) * 3, leaves)
    dots = emulate_outlined._site_dot._cache_size()
    bf16 = ("BF16_BF16_F32",) * 3
    self.assertEqual(testutil.xla_compiles(lambda: runs(bf16, leaves)), 2)
    self.assertEqual(emulate_outlined._site_dot._cache_size(), dots)
    sequential = emulate_outlined.OutlinedEmulation(
      fn, args, (emulate.SWITCHABLE,) * 3, order="sequential"
    )
    (got,) = sequential((_TF32,) * 3, leaves)
    _assert_sequential(got, *args, (_TF32,) * 3)
    # A split's operands are no one rounding.
    with self.assertRaises(InvalidArgumentError):
      emulate_dot.rounded_operand(args[0], "BF16_BF16_F32_X3")

  def test_its_compiles_do_not_grow_with_depth(self):
    def compiles(layers: int) -> int:
      fn, args = _stack(layers)
      runs = emulate_outlined.OutlinedEmulation(
        fn, args, (emulate.SWITCHABLE,) * layers, order="pairwise"
      )
      leaves = jax.tree_util.tree_leaves(args)
      # A shape no other test runs, so that jax's caches start empty.
      leaves[0] = np.ones((5, 24), np.float32)
      return testutil.xla_compiles(lambda: runs((_F32,) * layers, leaves))

    two = compiles(2)
    self.assertGreater(two, 0)
    self.assertEqual(compiles(6), 0)  # every one cached by the first

  def test_a_name_not_among_the_choices_is_refused(self):
    fn, args = _stack(2)
    runs = emulate_outlined.OutlinedEmulation(
      fn, args, ((_F32,), (_F32,)), order="blocked"
    )
    leaves = jax.tree_util.tree_leaves(args)
    with self.assertRaisesRegex(ValueError, "TF32"):
      runs((_F32, _TF32), leaves)
    with self.assertRaisesRegex(ValueError, "3 algorithms for 2"):
      runs((_F32,) * 3, leaves)

  def test_a_mesh_split_k_is_summed_per_device(self):
    # x (1, 4) @ ones (4, 4) with K over 2 devices: each device's f32 sum
    # absorbs its 1 (1e8 + 1 and -1e8 + 1 round to +-1e8), and the two
    # partial sums cancel: 0. Unsplit, 1e8 + 1 - 1e8 + 1 = 1 in f32, fused
    # or not, then 4 and 16 through the next two layers.
    fn, (_, ws, _) = _stack(3)
    x = np.array([[1e8, 1, -1e8, 1]], np.float32)
    ws = [np.ones((4, 4), np.float32)] * 3
    bs = [np.zeros((4,), np.float32)] * 3

    def split(x, ws, bs):
      return fn(x, ws, bs)

    split.hloprobe_mesh = ({"k": 2}, (P(None, "k"), P("k", None), P()))
    leaves = jax.tree_util.tree_leaves((x, ws, bs))
    for f, want in ((split, 0.0), (fn, 16.0)):
      runs = emulate_outlined.OutlinedEmulation(
        f, (x, ws, bs), ((_F32,),) * 3, order="sequential"
      )
      (got,) = runs((_F32,) * 3, leaves)
      np.testing.assert_array_equal(got, np.full((1, 4), want, np.float32))

  def test_each_value_is_dropped_after_its_last_use(self):
    closed = jax.make_jaxpr(lambda x: jnp.sin(x) * 2 + x)(
      np.ones(3, np.float32)
    )
    jaxpr = closed.jaxpr
    (x,), (sin, mul, add) = jaxpr.invars, jaxpr.eqns
    last = evaluator.last_uses(jaxpr)
    self.assertNotIn(0, last)  # x is read again by the add
    self.assertEqual(last[1], [sin.outvars[0]])
    self.assertCountEqual(last[2], [mul.outvars[0], x])  # not the output
    self.assertNotIn(add.outvars[0], [v for vs in last.values() for v in vs])
    # An output nothing reads goes with the equation that makes it.
    jaxpr = jax.make_jaxpr(lambda x: (jnp.sin(x), jnp.cos(x))[0] * 2)(
      np.ones(3, np.float32)
    ).jaxpr
    (x,), (sin, cos, _) = jaxpr.invars, jaxpr.eqns
    last = evaluator.last_uses(jaxpr)
    self.assertCountEqual(last[1], [x, cos.outvars[0]])
    self.assertEqual(last[2], [sin.outvars[0]])

  def test_an_unknown_order_or_a_split_choice_is_refused_when_made(self):
    fn, args = _stack(2)
    with self.assertRaisesRegex(InvalidArgumentError, "bogus"):
      emulate_outlined.OutlinedEmulation(
        fn, args, ((_F32,),) * 2, order="bogus"
      )
    with self.assertRaisesRegex(EmulationError, "X3"):
      emulate_outlined.OutlinedEmulation(
        fn, args, ((_F32,), ("BF16_BF16_F32_X3",)), order="pairwise"
      )

  def test_a_site_in_a_loop_is_not_outlined(self):
    def fn(x, w):
      return jax.lax.fori_loop(0, 2, lambda i, h: jnp.matmul(h, w), x)

    args = (np.ones((2, 4), np.float32), np.ones((4, 4), np.float32))
    with self.assertRaisesRegex(EmulationError, "inside a scan"):
      emulate_outlined.OutlinedEmulation(
        fn, args, (emulate.SWITCHABLE,), order="sequential"
      )


@pytest.mark.compiles
class CacheTest(absltest.TestCase):
  def test_a_deep_program_s_rows_are_outlined(self):
    fn, (x, ws, bs) = _stack(4)
    x = np.random.default_rng(4).standard_normal((6, 24)).astype(np.float32)
    case = cases.Case(
      "t_outlined",
      "a stack of equal dots",
      fn,
      lambda: (x, ws, bs),
      in_axes=(0, None, None),
      rows_independent=True,
    )
    cache = emulation_cache.EmulationCache(case, case.make_inputs())
    self.assertTrue(cache.by_rows((0,), 4))
    names = (_TF32, _F32, _F32, _TF32)
    (got,) = cache.get((1, 4), names, "sequential")
    self.assertIsInstance(
      cache._row_runs["sequential"], emulate_outlined.OutlinedEmulation
    )
    _assert_sequential(got, x[[1, 4]], ws, bs, names)


if __name__ == "__main__":
  absltest.main()
