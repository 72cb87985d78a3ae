"""The fixed summation orders of hloprobe.numerics.emulate_dot hold memory
bounded by the outputs (issue 37 item 1), and sum what the materializing
implementations before it summed, bit for bit.

Independent sources: numpy float32 sums in the stated order (the tree of
`_tree_sum` and the blocks of `_blocked`), on operands rounded to bf16 so
that every product is exact in f32 (no FMA or vector width changes a bit),
and the previous implementations, copied here (`_old_pairwise`,
`_old_blocked`: every chunk's sums stacked; every block's partials
stacked), on small shapes. Memory: XLA's own buffer assignment of the
compiled emulation (`memory_analysis().temp_size_in_bytes`), no run.
"""

from __future__ import annotations

import functools
from unittest import mock

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from absl.testing import absltest, parameterized
from jax import lax

from hloprobe.compile import cases
from hloprobe.numerics import emulate, emulate_dot

pytestmark = [pytest.mark.cpu_numerics, pytest.mark.compiles]

_MATMUL = (((1,), (0,)), ((), ()))
_ALGORITHMS = (
  "BF16_BF16_F32",
  "BF16_BF16_F32_X3",
  "BF16_PRODUCTS_F32",
  "BF16_PRODUCTS_BF16",
  "BF16_BF16_BF16",
)


def _old_tree_sum(x, axis, total=emulate_dot._same):
  while x.shape[axis] > 1:
    half = x.shape[axis] // 2
    x = total(
      lax.slice_in_dim(x, 0, half, axis=axis)
      + lax.slice_in_dim(x, half, 2 * half, axis=axis)
    )
  return jnp.squeeze(x, axis)


def _old_pairwise(a, b, product=emulate_dot._same, total=emulate_dot._same):
  """emulate_dot._pairwise before issue 37, for one chunk (small shapes):
  every product materialized, then the tree."""
  k = a.shape[2]
  padded = 1 << max(k - 1, 0).bit_length()
  a = jnp.pad(a, ((0, 0), (0, 0), (0, padded - k)))
  b = jnp.pad(b, ((0, 0), (0, padded - k), (0, 0)))
  return _old_tree_sum(
    product(a[:, :, :, None] * b[:, None, :, :]), axis=2, total=total
  )


def _old_blocked(a, b, product=emulate_dot._same, total=emulate_dot._same):
  """emulate_dot._blocked before issue 37: every block's partial stacked."""
  bk = 32
  bsz, m, k = a.shape
  n = b.shape[2]
  blocks = -(-k // bk)
  pad = blocks * bk - k
  a4 = jnp.pad(a, ((0, 0), (0, 0), (0, pad))).reshape(bsz, m, blocks, bk)
  b4 = jnp.pad(b, ((0, 0), (0, pad), (0, 0))).reshape(bsz, blocks, bk, n)

  def step(j, acc):
    aj = jnp.moveaxis(lax.dynamic_index_in_dim(a4, j, 3, keepdims=False), 2, 1)
    bj = lax.dynamic_index_in_dim(b4, j, 2, keepdims=False)
    return total(acc + product(aj[:, :, :, None] * bj[:, :, None, :]))

  partials = lax.fori_loop(0, bk, step, jnp.zeros((bsz, blocks, m, n)))

  def reduce(i, acc):
    return total(acc + lax.dynamic_index_in_dim(partials, i, 1, keepdims=False))

  return lax.fori_loop(0, blocks, reduce, jnp.zeros((bsz, m, n), a.dtype))


def _old_orders():
  """The old orders lifted to dot_general, as emulate_dot lifts its own."""
  return {
    "pairwise": emulate_dot._in_order(_old_pairwise),
    "blocked": emulate_dot._in_order(_old_blocked),
  }


def _bf16_operands(seed, m, k, n):
  g = np.random.default_rng(seed)
  to = lambda x: x.astype(ml_dtypes.bfloat16).astype(np.float32)
  return to(g.standard_normal((m, k))), to(g.standard_normal((k, n)))


@functools.cache
def _old_bits(algorithm: str, order: str) -> np.ndarray:
  """The old implementation's `algorithm` in `order` on
  `_bf16_operands(7, 5, 100, 6)`: one chunk (it reads no chunk limit), so
  made once for both of `test_the_old_implementation_bit_for_bit`'s chunk
  limits."""
  a, b = _bf16_operands(7, 5, 100, 6)
  saved = dict(emulate_dot._CONTRACTIONS)
  try:
    emulate_dot._CONTRACTIONS.update(_old_orders())
    emulate_dot._ORDERED.update(pairwise=_old_pairwise, blocked=_old_blocked)
    return np.asarray(_emulate(algorithm, order)(a, b))
  finally:
    emulate_dot._CONTRACTIONS.update(saved)
    emulate_dot._ORDERED.update(
      pairwise=emulate_dot._pairwise, blocked=emulate_dot._blocked
    )


def _numpy_tree(products: np.ndarray) -> np.ndarray:
  """float32 tree over axis 0, padded to a power of two: pairs i, i + P/2."""
  k = products.shape[0]
  padded = 1 << max(k - 1, 0).bit_length()
  x = np.concatenate(
    [products, np.zeros((padded - k, *products.shape[1:]), np.float32)]
  )
  while x.shape[0] > 1:
    half = x.shape[0] // 2
    x = (x[:half] + x[half:]).astype(np.float32)
  return x[0]


def _numpy_sequential(a, b) -> np.ndarray:
  """float32 sums in k order, each running sum rounded (exact products:
  bf16 operands)."""
  acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
  for k in range(a.shape[1]):
    acc = (acc + np.outer(a[:, k], b[k])).astype(np.float32)
  return acc


def _numpy_blocked(a, b) -> np.ndarray:
  """float32 sums of K blocks of 32, each in k order from zero, then the
  block sums in order (exact products: bf16 operands)."""
  total = np.zeros((a.shape[0], b.shape[1]), np.float32)
  for start in range(0, a.shape[1], 32):
    total = (
      total + _numpy_sequential(a[:, start : start + 32], b[start:])
    ).astype(np.float32)
  return total


def _emulate(algorithm, order):
  return jax.jit(
    lambda a, b: emulate_dot.emulated_dot_general(
      a, b, _MATMUL, algorithm, order=order
    )
  )


class SameSumsTest(parameterized.TestCase):
  def tearDown(self):
    emulate_dot._PAIRWISE_CHUNK_ELEMENTS = 1 << 24
    emulate_dot._PAIRWISE_TILE_ELEMENTS = 1 << 16
    super().tearDown()

  @parameterized.product(
    algorithm=_ALGORITHMS,
    order=("pairwise", "blocked"),
    chunk=(1 << 24, 64),
  )
  def test_the_old_implementation_bit_for_bit(self, algorithm, order, chunk):
    # chunk 64 elements: the pairwise order sums 100 (padded 128) terms in
    # 64 strided chunks of 2 into its counter; the same tree, so the same
    # bits as the old one chunk.
    a, b = _bf16_operands(7, 5, 100, 6)
    want = _old_bits(algorithm, order)
    emulate_dot._PAIRWISE_CHUNK_ELEMENTS = chunk
    got = np.asarray(_emulate(algorithm, order)(a, b))
    np.testing.assert_array_equal(got, want)

  @parameterized.parameters(1, 2, 8, 9)
  def test_the_seed_s_f32_orders_are_the_old_bits(self, n):
    # f32 operands: whether a product is fused into an FMA depends on the
    # ops' shapes, so the orders keep the old ops where they fit one chunk
    # (the seed's noise floor, JSON-equal results).
    case = cases.get_case("seed_mlp")
    args = case.inputs_for(case.make_inputs(), n)
    for order in ("pairwise", "blocked"):
      got = emulate.emulate_case(case.fn, args, "F32_F32_F32", order=order)
      saved = dict(emulate_dot._CONTRACTIONS)
      try:
        emulate_dot._CONTRACTIONS.update(_old_orders())
        want = emulate.emulate_case(case.fn, args, "F32_F32_F32", order=order)
      finally:
        emulate_dot._CONTRACTIONS.update(saved)
      np.testing.assert_array_equal(got, want, err_msg=order)

  @parameterized.parameters(1 << 24, 3 * 4, 1)
  def test_pairwise_is_numpy_s_tree_for_every_chunk_size(self, chunk):
    # m * n = 3 * 4 = 12 outputs: chunk limit 12 makes chunks of one term
    # (1000 chunks, padded 1024), 1 << 24 one chunk of all.
    a, b = _bf16_operands(8, 3, 1000, 4)
    emulate_dot._PAIRWISE_CHUNK_ELEMENTS = chunk
    got = np.asarray(_emulate("BF16_BF16_F32", "pairwise")(a, b))
    products = (a.T[:, :, None] * b[:, None, :]).astype(np.float32)
    np.testing.assert_array_equal(got, _numpy_tree(products))

  @parameterized.parameters(8, 1 << 16)
  def test_pairwise_in_tiles_of_rows_is_numpy_s_tree(self, tile):
    # 8 x 1000 x 4: chunks of 2 terms (limit 64 = 2 x 32 outputs), 512 of
    # them; a tile limit of 8 outputs makes 4 tiles of 2 rows, each its
    # own counter (1 << 16: one tile). A tile read from or written to the
    # wrong rows, or a chunk of the wrong terms, changes values.
    a, b = _bf16_operands(10, 8, 1000, 4)
    emulate_dot._PAIRWISE_CHUNK_ELEMENTS = 64
    emulate_dot._PAIRWISE_TILE_ELEMENTS = tile
    got = np.asarray(_emulate("BF16_BF16_F32", "pairwise")(a, b))
    products = (a.T[:, :, None] * b[:, None, :]).astype(np.float32)
    np.testing.assert_array_equal(got, _numpy_tree(products))

  @parameterized.parameters(
    (1024, 768, 2304), (1024, 3072, 768), (128, 768, 2304), (8, 768, 50257)
  )
  def test_pairwise_in_tiles_is_one_tile_s_bits_on_f32(self, m, k, n):
    # GPT-2-small's sites (qkv at 8 and 1 rows, the MLP's out, the LM
    # head at 8 rows: tiles of one row): f32
    # operands, whose products XLA:CPU fuses into FMAs or not by the ops'
    # shapes (chunks of 4 terms here, 16 for the out site); the tiles keep
    # the whole output's chunks and so each element's ops (issue 37).
    g = np.random.default_rng(11)
    a = g.standard_normal((m, k)).astype(np.float32)
    b = (g.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    got = np.asarray(_emulate("F32_F32_F32", "pairwise")(a, b))
    emulate_dot._PAIRWISE_TILE_ELEMENTS = m * n
    want = np.asarray(_emulate("F32_F32_F32", "pairwise")(a, b))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))

  def test_pairwise_in_tiles_of_a_batched_dot_is_one_tile_s_bits_on_f32(
    self,
  ):
    # GPT-2-small's attention scores at 2 rows (24 heads x rows, 128 x 64
    # x 128): chunks of 32 terms, 2 of them, tiles of 16 rows of every
    # batch element; f32 operands, the bits of one tile.
    g = np.random.default_rng(12)
    a = g.standard_normal((24, 128, 64)).astype(np.float32)
    b = (g.standard_normal((24, 64, 128)) / 8).astype(np.float32)
    batched = (((2,), (1,)), ((0,), (0,)))
    emulate = lambda: np.asarray(
      jax.jit(
        lambda a, b: emulate_dot.emulated_dot_general(
          a, b, batched, "F32_F32_F32", order="pairwise"
        )
      )(a, b)
    )
    got = emulate()
    emulate_dot._PAIRWISE_TILE_ELEMENTS = 24 * 128 * 128
    want = emulate()
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))

  def test_blocked_is_numpy_s_blocks_in_order(self):
    a, b = _bf16_operands(9, 4, 200, 3)
    got = np.asarray(_emulate("BF16_BF16_F32", "blocked")(a, b))
    np.testing.assert_array_equal(got, _numpy_blocked(a, b))

  def test_blocked_a_block_at_a_time_is_the_partials_bits_on_f32(self):
    # One GPT-2-small row's MLP dot (128 x 768 x 3072: 9.4 M partials),
    # f32 operands (no rounding: the products' FMA fusion could differ by
    # path): the old ops, every partial held (`_blocked_partials`), and a
    # block at a time (`_BLOCKED_PARTIALS_ELEMENTS`), the same bits.
    g = np.random.default_rng(3)
    a = g.standard_normal((128, 768)).astype(np.float32)
    b = g.standard_normal((768, 3072)).astype(np.float32)
    self.assertGreater(128 * 24 * 3072, emulate_dot._BLOCKED_PARTIALS_ELEMENTS)
    got = np.asarray(_emulate("F32_F32_F32", "blocked")(a, b))
    with mock.patch.object(emulate_dot, "_BLOCKED_PARTIALS_ELEMENTS", 1 << 24):
      want = np.asarray(_emulate("F32_F32_F32", "blocked")(a, b))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


class TiledTest(parameterized.TestCase):
  """`emulated_dot_general(tiled=True)`, a site computed alone
  (`emulate_outlined`, issue 37): tiles of columns, pairwise chunks of 8
  terms without the padding's products."""

  def _tiled(self, a, b, order):
    return np.asarray(
      jax.jit(
        lambda a, b: emulate_dot.emulated_dot_general(
          a, b, _MATMUL, "BF16_BF16_F32", order=order, tiled=True
        )
      )(a, b)
    )

  @parameterized.parameters("sequential", "pairwise", "blocked")
  def test_tiles_of_columns_sum_in_the_order(self, order):
    # 3 x 700 x 300: tiles of 128 columns (3 x 128 outputs), two whole and
    # 44 columns left; pairwise pads 700 terms to 1024, chunks of 8
    # strided by 128, of which 6 are made (k = 5 * 128 + j is past 700
    # for j >= 60: zeros made, then added as the tree adds them);
    # sequential and blocked 8 steps a loop iteration (700 = 87 x 8 + 4;
    # blocked: 22 blocks of 32, the last 28 terms and padding). A tile
    # written to the wrong columns, a chunk of the wrong terms, a pair or
    # a step dropped changes values.
    a, b = _bf16_operands(13, 3, 700, 300)
    with mock.patch.object(emulate_dot, "_TILE_OUTPUTS", 3 * 128):
      got = self._tiled(a, b, order)
    products = (a.T[:, :, None] * b[:, None, :]).astype(np.float32)
    want = {
      "pairwise": lambda: _numpy_tree(products),
      "sequential": lambda: _numpy_sequential(a, b),
      "blocked": lambda: _numpy_blocked(a, b),
    }[order]()
    np.testing.assert_array_equal(got, want)

  def test_the_padding_s_zeros_are_added_as_the_padded_tree_adds_them(self):
    # K = 3 (padded 4): the third product's partner is the padding's +0,
    # added (a helper's review): a column of -0 products sums to +0, and
    # a product that overflows is rounded to inf before the next sum
    # (inf + -inf: NaN), as numpy's padded tree gives, not fused into it.
    a = np.array([[0, 0, 0], [-np.inf, 1.21875, 0.87890625]], np.float32)
    b = np.tile(
      np.array([[-1, 0.33984375], [-1, 3e38], [-1, -0.44140625]], np.float32),
      (1, 150),
    )
    with mock.patch.object(emulate_dot, "_TILE_OUTPUTS", 2 * 128):
      got = self._tiled(a, b, "pairwise")
    with np.errstate(over="ignore", invalid="ignore"):
      products = (a.T[:, :, None] * b[:, None, :]).astype(np.float32)
      want = _numpy_tree(products)
    self.assertTrue(np.isnan(want[1, 1::2]).all())
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(  # the sign of zero too
      got[finite].view(np.uint32), want[finite].view(np.uint32)
    )

  def test_a_tile_of_more_than_half_the_columns_is_not_made(self):
    # 2 x 40 x 100 at the default size: 16384 columns a tile, untiled; the
    # pairwise tree is still in chunks of 8 (64 padded terms, 5 made).
    a, b = _bf16_operands(14, 2, 40, 100)
    products = (a.T[:, :, None] * b[:, None, :]).astype(np.float32)
    np.testing.assert_array_equal(
      self._tiled(a, b, "pairwise"), _numpy_tree(products)
    )
    np.testing.assert_array_equal(
      self._tiled(a, b, "sequential"), _numpy_sequential(a, b)
    )


# jaxlib 0.10.2's XLA:CPU still hoists the fixed orders' operand copies and
# zeros to the program's start and fuses the ops around the pairwise order's
# padding, optimization barrier or not (measured 2026-12-05 with `make
# test-old`: pairwise differs from XLA's order in 3030 of 131072 values, as
# before issue 37's change, and temporaries grow with depth). On that release
# the fixed orders keep their old memory and bits; these tests state what
# 0.12.0.1 gives.
_OLD_XLA_CPU = jax.__version_info__ < (0, 12)
_OLD_XLA_CPU_WHY = (
  "jaxlib 0.10.2's XLA:CPU hoists and fuses across the orders' optimization "
  "barrier: its fixed orders keep their old memory and bits (measured, "
  "2026-12-05)"
)


def _layer_norm_gelu(x):
  mean = jnp.mean(x, -1, keepdims=True)
  var = jnp.mean(jnp.square(x - mean), -1, keepdims=True)
  return jax.nn.gelu((x - mean) * lax.rsqrt(var + 1e-5) * 1.5 + 0.25)


class OtherOpsTest(parameterized.TestCase):
  @parameterized.parameters("sequential", "pairwise", "blocked")
  def test_an_order_computes_the_other_ops_as_xla_s_order(self, order):
    if order == "pairwise" and _OLD_XLA_CPU:
      self.skipTest(_OLD_XLA_CPU_WHY)
    # Each output of the dot is one product by 2.0 (a column-selection
    # matrix): exact, and the same in every order, so every bit that
    # differs from XLA's order comes from the layer norm, gelu and tanh
    # around it. Before the operands' barrier the pairwise order fused
    # them into its padding and differed in 3030 of 131072 values.
    g = np.random.default_rng(1)
    x = g.standard_normal((256, 768)).astype(np.float32)
    w = np.zeros((768, 512), np.float32)
    w[g.permutation(768)[:512], np.arange(512)] = 2.0

    def fn(x, w):
      h = _layer_norm_gelu(x)
      return jnp.tanh(h @ w) * 2.0 + h[:, :512]

    want = emulate.emulate_case(fn, (x, w), "F32_F32_F32", order="xla")
    got = emulate.emulate_case(fn, (x, w), "F32_F32_F32", order=order)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


class MemoryTest(parameterized.TestCase):
  """Compiled, not run: XLA's buffer assignment of a 1024 x 4096 x 1024 dot
  (4 MiB of output). The old pairwise order stacked 256 chunk sums (1 GiB),
  the old blocked one 128 block partials (512 MiB)."""

  def _temp_bytes(self, order):
    a = jax.ShapeDtypeStruct((1024, 4096), np.float32)
    b = jax.ShapeDtypeStruct((4096, 1024), np.float32)
    compiled = _emulate("F32_F32_F32", order).lower(a, b).compile()
    return compiled.memory_analysis().temp_size_in_bytes

  def test_pairwise_holds_one_chunk_and_log_k_sums(self):
    out = 1024 * 1024 * 4
    chunk = emulate_dot._PAIRWISE_CHUNK_ELEMENTS * 4  # one chunk's products
    # 256 chunks: a counter of 9 sums, the padded operands (32 MiB).
    bound = 2 * chunk + (9 + 4) * out + 2 * 4096 * 1024 * 4
    self.assertLessEqual(self._temp_bytes("pairwise"), bound)

  def test_blocked_holds_a_few_outputs(self):
    out = 1024 * 1024 * 4
    bound = 4 * out + 2 * 4096 * 1024 * 4
    self.assertLessEqual(self._temp_bytes("blocked"), bound)

  @parameterized.product(
    order=("sequential", "pairwise", "blocked"),
    algorithm=("F32_F32_F32", "BF16_BF16_F32_X3"),
  )
  def test_a_deeper_program_holds_no_more(self, order, algorithm):
    if _OLD_XLA_CPU:
      self.skipTest(_OLD_XLA_CPU_WHY)

    # A stack of dense layers (512 x 512 weights, 128 rows): the sites run
    # one after another, so their copies and sums can share memory. Before
    # issue 37's barriers XLA:CPU made every layer's padded or split
    # weights and zeros at the start: pairwise F32 grew 75 -> 241 MiB and
    # blocked 115 -> 462 MiB from 1 to 4 GPT-2 layers.
    def temp_bytes(layers):
      def fn(x, ws):
        for w in ws:
          x = _layer_norm_gelu(x @ w)
        return x

      x = jax.ShapeDtypeStruct((128, 512), np.float32)
      ws = [jax.ShapeDtypeStruct((512, 512), np.float32)] * layers
      emulator = emulate.make_emulator(fn, (x, ws), algorithm, order=order)
      compiled = emulator._run.lower(emulator._consts, x, ws).compile()
      return compiled.memory_analysis().temp_size_in_bytes

    one, four = temp_bytes(1), temp_bytes(4)
    # Slack: a few (128, 512) values of the layers around the sites.
    self.assertLessEqual(four, one + 8 * 128 * 512 * 4, (one, four))

  @parameterized.parameters(
    "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "TF32_TF32_F32_X3"
  )
  def test_a_split_in_xla_s_order_holds_no_more(self, algorithm):
    if _OLD_XLA_CPU:
      self.skipTest(_OLD_XLA_CPU_WHY)

    # A split's parts in XLA's order wait for both operands too (issue 37):
    # before, XLA:CPU made every layer's split weights at the start, and a
    # 12-layer GPT-2's BF16_BF16_F32_X6 emulation held them all (2.5 GB
    # case worker); 166 -> 26 MiB of temporaries at two GPT-2 layers.
    def temp_bytes(layers):
      def fn(x, ws):
        for w in ws:
          x = jnp.tanh(x @ w)
        return x

      x = jax.ShapeDtypeStruct((128, 512), np.float32)
      ws = [jax.ShapeDtypeStruct((512, 512), np.float32)] * layers
      emulator = emulate.make_emulator(fn, (x, ws), algorithm)
      compiled = emulator._run.lower(emulator._consts, x, ws).compile()
      return compiled.memory_analysis().temp_size_in_bytes

    one, four = temp_bytes(1), temp_bytes(4)
    self.assertLessEqual(four, one + 8 * 128 * 512 * 4, (one, four))

  @parameterized.parameters("BF16_BF16_F32_X6", "TF32_TF32_F32_X3")
  def test_a_split_in_xla_s_order_is_each_dot_alone(self, algorithm):
    # The barrier moves when a site's parts are made, not what they are:
    # the whole program's output is that of each layer's dot emulated
    # alone, one jit each, bit for bit.
    g = np.random.default_rng(5)
    x = g.standard_normal((64, 256)).astype(np.float32)
    ws = [
      (g.standard_normal((256, 256)) / 16).astype(np.float32) for _ in range(3)
    ]

    def fn(x, ws):
      for w in ws:
        x = jnp.tanh(x @ w)
      return x

    got = emulate.emulate_case(fn, (x, ws), algorithm)
    want = x
    for w in ws:
      want = np.asarray(jnp.tanh(_emulate(algorithm, "xla")(want, w)))
    np.testing.assert_array_equal(
      np.asarray(got).view(np.uint32), want.view(np.uint32)
    )


if __name__ == "__main__":
  absltest.main()
