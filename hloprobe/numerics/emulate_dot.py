"""One dot_general computed the way a dot algorithm computes it, on the CPU.

`emulated_dot_general` takes a `jax.lax.DotAlgorithmPreset` name and
reproduces that algorithm's arithmetic with CPU operations: operands
rounded to the algorithm's storage type (`rounding`), products exact, sums
in the accumulation type. The split algorithms are sums of partial products
of high, middle and low parts, in the order XLA's Triton emitter adds them.

What it does not promise: the f32 summation order of a GPU kernel (tile
sizes, split-K and the tensor core's internal order are not modelled); the
`order` argument instead lets a caller measure how much the order matters.
Products in every order may be fused into FMAs by the CPU compiler (an
exact product, as in XLA:CPU's dot that "blocked" calls per block); for
rounded operands (TF32, BF16) the products are exact either way, and the
sums of each order are the same bits whatever the shape.

Memory (issue 37): every order holds a bounded multiple of its output,
never a product per (M, K, N) element: "sequential" and "blocked" one or
two sums of the output's shape, "pairwise" one chunk of products (at most
`_PAIRWISE_CHUNK_ELEMENTS`, or one term per output) and log2(K) + 1 sums.
Nor do a program's sites add up: a fixed order's operands, and a split
algorithm's in every order (XLA's too), pass an optimization barrier, and
a fixed order's initial zeros are made after its operands (`_zeros`), so
that XLA:CPU makes each site's copies, parts and sums when the site runs,
not all at the program's start; a program's temporaries are about its
largest site's, whatever its depth (a 12-layer GPT-2's BF16_BF16_F32_X6
in XLA's order: 26 MiB, as at one layer). A single-pass algorithm in
XLA's order passes no barrier: it makes no copy of a weight beyond its
rounding, and a barrier would stop XLA folding a transpose into the dot.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax

from hloprobe.errors import EmulationError, InvalidArgumentError
from hloprobe.ir import ALGORITHMS
from hloprobe.numerics import rounding

__all__ = [
  "EMULATED_ALGORITHMS",
  "SUMMATION_ORDERS",
  "SWITCHABLE",
  "Switched",
  "TF32_TRUNCATED",
  "emulated_dot_general",
  "rounded_operand",
]

# f32 summation orders: "xla" is whatever order the CPU's own dot uses (on
# jaxlib 0.10.2 a sequential sum for small shapes, another for large ones);
# the others sum the same f32 products in a fixed order (see
# `_CONTRACTIONS`).
SUMMATION_ORDERS = ("xla", "sequential", "pairwise", "blocked")
# "blocked": K is cut into blocks of this many terms, like a GEMM's K tiles.
_BLOCK_K = 32
# "pairwise": products are materialized in chunks of at most this many
# elements (64 MiB of f32), or one term per output where an output is
# larger; each chunk's tree sum joins the tree as it comes (`_pairwise`).
_PAIRWISE_CHUNK_ELEMENTS = 1 << 24
# "blocked": every block's partial sum is held at once (`_blocked_partials`,
# the ops before issue 37) up to this many elements of them together (B x
# blocks x M x N; 4 MiB of f32), beyond it one block at a time. The
# partials of a large dot do not stay in the caches: a GPT-2-small row's
# 128 x 768 x 3072 dot (9.4 M partials) took 0.19 s so, 0.05 s a block at
# a time, the same bits (f32 operands, jaxlib 0.12.0.1 and 0.10.2,
# emulate_orders_test, 2026-12-07; it was 2^24, `_PAIRWISE_CHUNK_ELEMENTS`,
# which a large program's row at a time, `emulation_cache.EmulationCache.
# by_rows`, fell under).
_BLOCKED_PARTIALS_ELEMENTS = 1 << 20
# "pairwise": above this many outputs (B x M x N), where K is more than
# one chunk, the tree over the chunks is made one tile of M rows at a
# time, M halved while it is even and the tile above this many elements,
# so that each tile's counter of partial sums (`_tree_of_chunks`, a level
# at most 256 KiB of f32 where M's factors of two allow: B x N alone may
# be more, an odd M is one tile) stays in the CPU's caches (`_pairwise`).
_PAIRWISE_TILE_ELEMENTS = 1 << 16

# A site computed alone (`emulate_outlined`, `emulated_dot_general`'s
# `tiled`): a fixed order's output is made in tiles of columns of about
# this many outputs (B x M x columns; 128 KiB of f32), at least
# `_TILE_COLUMNS` columns, a multiple of them, so that each tile's running
# sums stay in the CPU's caches while K is walked; and the pairwise order's
# chunks are `_TILE_CHUNK_TERMS` terms, with the padding's products not
# made (`_pairwise`). Each output element's products and sums are the ones
# of the untiled order, in the same order, the padding's zeros added where
# a term's partner is one (`_tree_sum`); where XLA:CPU fuses f32 products
# into sums as FMAs may not be (the same bits as untiled on GPT-2-small's
# row sites, f32 and TF32 operands, jaxlib 0.12.0.1 and 0.10.2;
# bf16-rounded ones are numpy's sums: emulate_orders_test). Measured on one GPT-2-small row's projections
# (128 x 768 x 2304, 768, 3072 and 128 x 3072 x 768, f32 operands, jaxlib
# 0.12.0.1, 2026-12-07): sequential 55 -> 45 ms a layer, pairwise 115 ->
# 52 (77 with the padding's products made).
_TILE_OUTPUTS = 1 << 15
_TILE_COLUMNS = 64
_TILE_CHUNK_TERMS = 8
# ... and the sequential and blocked orders' loops take this many steps an
# iteration, which XLA:CPU fuses into one pass over a tile's sums (the same
# ops in the same order; on those four sites, f32 and TF32 operands, the
# tiled orders' bits are the untiled ones on jaxlib 0.12.0.1 and 0.10.2):
# sequential 45 -> 27 ms a layer (2 and 4 steps: 28), blocked, a block at
# a time, 59 -> 32 (tiled alone: 50; jaxlib 0.12.0.1).
_TILE_UNROLL = 8

# Split algorithms: (lhs part, rhs part) products, part 0 the highest, in
# the order XLA's Triton emitter accumulates them
# (xla/backends/gpu/codegen/triton/transforms/stablehlo_lower_to_triton.cc:
# `EmitBF16x3Matmul`, `EmitBF16x6Matmul`, `EmitBF16x9Matmul`; TF32_X3 is
# Triton's `TF32x3` rewrite, lib/Dialect/TritonGPU/Transforms/F32DotTC.cpp).
# A split with p passes (`precisions.ALGORITHMS[...].passes`, the one
# statement of the counts) adds the last p products of `_PRODUCT_ORDER`:
# X9 all nine, X6 the six with parts summing to at most 2, X3 (BF16 and
# TF32) the three with at most 1, each smallest first. Before the last
# product (high x high) the sum so far is zeroed where it is not finite
# (`ZeroNaNs`), so that inf x 0 between a part and an infinite operand
# cannot poison the result. Each product here is its own contraction,
# summed in that order; the kernel adds them into one accumulator per K
# tile, which differs at the f32 rounding level only.
#
# Checked on jaxlib 0.10.2 by compiling 256x512x256 f32 dots for an A100
# without a GPU (Triton IR and PTX of the `__triton_nested_gemm_fusion`):
# X3 and X6 split with `arith.truncf` (PTX cvt.rn.bf16.f32) and issue 3 and
# 6 bf16 `mma` passes per K tile; TF32_X3 is `tt.dot inputPrecision=tf32x3`
# with cvt.rna.tf32.f32. BF16_BF16_F32_X9, however, reaches the Triton IR
# as a dot with no algorithm and DEFAULT precision, and runs ONE TF32 pass
# (mma...tf32, cvt.rna.tf32.f32; also at 64^3, 1024^3 and 8x4096x8): such a
# site's effective algorithm on that path is TF32_TF32_F32, not X9.
_PRODUCT_ORDER = (
  (2, 2),
  (1, 2),
  (2, 1),
  (1, 1),
  (2, 0),
  (0, 2),
  (1, 0),
  (0, 1),
  (0, 0),
)
_SPLITS = {
  a.name: _PRODUCT_ORDER[-a.passes :]
  for a in ALGORITHMS.values()
  if a.passes > 1
}
# One pass, operands rounded to their storage type, f32 sums.
_SINGLE_PASS = tuple(
  a.name
  for a in ALGORITHMS.values()
  if a.passes == 1 and a.accumulation == "f32"
)
# Kernels without tensor cores that multiply or add in 16 bits (PTX
# `mul.rn.bf16`, `fma.rn.bf16`, `add.rn.f16`, ...; see `ptx.for_operands`):
# name -> (16-bit type, products rounded to it, sums rounded to it). The
# *_PRODUCTS_* names are no DotAlgorithmPreset: each product is rounded to
# the 16-bit type before it is added (on jaxlib 0.10.2 an H100's
# strength-reduced bf16 dot multiplies with `mul.rn.bf16` and sums in f32).
# BF16_BF16_BF16 and F16_F16_F16 are the presets: exact products (an fma),
# each sum rounded.
_SIXTEEN_BIT = {
  "BF16_PRODUCTS_F32": ("bf16", True, False),
  "F16_PRODUCTS_F32": ("f16", True, False),
  "BF16_PRODUCTS_BF16": ("bf16", True, True),
  "F16_PRODUCTS_F16": ("f16", True, True),
  "BF16_BF16_BF16": ("bf16", False, True),
  "F16_F16_F16": ("f16", False, True),
}
# A TF32 mma fed f32 registers with no `cvt.rna.tf32.f32` before it (the
# PTX reader's tf32_rounding "truncate", `ir.ptx.classify_instructions`):
# the tensor core ignores each operand's low 13 bits (MMA-Sim, the tf32
# operand read; `kernel_model`), so the operands are truncated toward zero
# (`rounding` 'rz'), f32 sums. No DotAlgorithmPreset names it: the
# prediction emulates a site so read at this name (`candidates.
# chosen_algorithms`), whose band has truncation's unit (`bands`).
TF32_TRUNCATED = "TF32_TRUNCATED_F32"
EMULATED_ALGORITHMS = (
  _SINGLE_PASS
  + (TF32_TRUNCATED,)
  + tuple(_SPLITS)
  + tuple(_SIXTEEN_BIT)
  + ("F64_F64_F64",)
)
# The algorithms a `Switched` site may choose among at run time: those
# that round each operand once.
#
# Why no split (X3/X6/X9, TF32_X3) or 16-bit sum (issue 37, tried on
# jaxlib 0.12.0.1): its several contractions cannot share one, so each
# would be a `lax.switch` branch of its own, and XLA:CPU's own dot gives
# other bits when a conditional or a select stands next to it. Its
# layout assignment and transpose folding choose each dot's operand
# order and layout from the ops around it (a transpose of the result
# folds into one YNNPACK dot of swapped operands, which sums in another
# order), and a conditional's result or a select between the dot and its
# consumer stops that. Measured, each against `emulate.emulate_case` of
# the same assignment: seed_mlp's 48x48 sites at F32 inside a branch, or
# joined with a split branch by a select, 1 ULP; its last site at F32
# (switched among single-pass names only) after three switched split
# sites, 1 ULP; conv_net's sites at X6 in a branch, every fixed order,
# 1 ULP. Splits among themselves at a site in XLA's order gave the same
# bits on seed_mlp and conv_net, but with other sites switched they did
# not, so no rule was found that keeps each choice the bits of its
# emulation alone; a split's assignments are emulated one emulator each
# (a few per compile, `emulation_cache.INLINE_SITES`).
SWITCHABLE = (*_SINGLE_PASS, TF32_TRUNCATED)


def emulated_dot_general(
  lhs,
  rhs,
  dimension_numbers,
  algorithm: str,
  *,
  order: str = "xla",
  tf32_rounding: str = "rna",
  tiled: bool = False,
) -> jnp.ndarray:
  """`lax.dot_general` as `algorithm` computes it; usable under `jit`.

  Args:
    lhs, rhs: real floating arrays (f16, bf16, f32 or f64), any shapes that
      `lax.dot_general` accepts with `dimension_numbers`.
    dimension_numbers: `((lhs_contracting, rhs_contracting), (lhs_batch,
      rhs_batch))`, as for `lax.dot_general`.
    algorithm: a name from `EMULATED_ALGORITHMS`, or a `Switched` choice
      among single-pass ones made at run time. F32_F32_F32: f32 operands
      and sums (the CPU dot at HIGHEST). TF32_TF32_F32, BF16_BF16_F32,
      F16_F16_F32: operands rounded, f32 sums. TF32_TRUNCATED_F32:
      operands truncated to TF32 whatever `tf32_rounding` (`TF32_TRUNCATED`). The _X3/_X6/_X9 splits: see
      `_SPLITS`. 16-bit products or sums: see `_SIXTEEN_BIT` (the CPU's own
      dot cannot round them, so "xla" order sums them pairwise).
      F64_F64_F64: f64 throughout; needs `jax.enable_x64`.
    order: f32 summation order, one of `SUMMATION_ORDERS`.
    tf32_rounding: 'rna' (XLA's Triton GEMMs), 'rne' (the cuBLAS model)
      or 'rz'; see `rounding`.
    tiled: a fixed order (not "xla") made in tiles of columns, pairwise
      in chunks of `_TILE_CHUNK_TERMS` terms, sequential and blocked
      `_TILE_UNROLL` steps a loop iteration (`_TILED`): each output's
      products and sums are the untiled order's, but where XLA:CPU fuses
      f32 products into sums as FMAs may differ by the ops' shapes, so
      f32 operands' last bits may differ from the untiled ones. For a site
      computed alone, as `emulate_outlined` computes each (issue 37); a
      whole program's emulation keeps the untiled ops, whose bits the
      golden results hold. 16-bit products or sums are never tiled.

  Returns:
    The result in the accumulation type (f32, or f64 for F64_F64_F64), of
    the shape `lax.dot_general` gives: batch, lhs free, rhs free dims.

  Raises:
    InvalidArgumentError: unknown algorithm, order or rounding mode.
    EmulationError: non-real operands, or F64_F64_F64 without x64.
  """
  if order not in SUMMATION_ORDERS:
    raise InvalidArgumentError(
      f"unknown summation order {order!r}; choose from {SUMMATION_ORDERS}"
    )
  if tf32_rounding not in rounding.ROUNDING_MODES:
    raise InvalidArgumentError(
      f"unknown tf32_rounding {tf32_rounding!r}; choose from "
      f"{rounding.ROUNDING_MODES}"
    )
  lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
  for x in (lhs, rhs):
    if not jnp.issubdtype(x.dtype, jnp.floating):
      raise EmulationError(
        f"[hloprobe] cannot emulate a dot of {x.dtype} operands; dot "
        "algorithms apply to real floating operands (e.g. f32)"
      )
  # (A `Switched` choice is one rounding of each operand: no split, and
  # not hashable, its index being traced.)
  split = isinstance(algorithm, str) and algorithm in _SPLITS
  if order != "xla" or split:
    # A fixed order's own ops (roundings, splits, pads) wait for both
    # operands. Else XLA:CPU may make every site's weight-side copies at
    # the program's start, each live until its site, so that memory grows
    # with depth (issue 37: 1 GB of temporaries for a 4-layer GPT-2), and
    # may fuse the ops that made an operand into its padding, where their
    # bits can differ from those XLA's order gives the same ops. A split's
    # parts in XLA's order likewise (each site's parts of its weight: a
    # 12-layer GPT-2's X6 held 1 GB of them from the start); the dots then
    # read parts, never the operands, so no transpose folding is lost
    # (the same bits: emulate_orders_test, the golden check).
    lhs, rhs = lax.optimization_barrier((lhs, rhs))
  contract = (_TILED if tiled and order in _TILED else _CONTRACTIONS)[order]
  if isinstance(algorithm, Switched):
    casts = [_operand_rounding(a, tf32_rounding) for a in algorithm.names]
    cast = lambda x: lax.switch(algorithm.index, casts, x)
    return contract(cast(lhs), cast(rhs), dimension_numbers)
  if algorithm in SWITCHABLE:
    cast = _operand_rounding(algorithm, tf32_rounding)
    return contract(cast(lhs), cast(rhs), dimension_numbers)
  if algorithm in _SPLITS:
    return _split_dot(
      lhs, rhs, dimension_numbers, algorithm, contract, tf32_rounding
    )
  if algorithm == "F64_F64_F64":
    return _f64_dot(lhs, rhs, dimension_numbers, contract)
  if algorithm in _SIXTEEN_BIT:
    return _sixteen_bit_dot(lhs, rhs, dimension_numbers, algorithm, order)
  raise InvalidArgumentError(
    f"algorithm {algorithm!r} is not emulated; choose from "
    f"{', '.join(EMULATED_ALGORITHMS)}"
  )


@dataclasses.dataclass(frozen=True)
class Switched:
  """A site's algorithm chosen at run time among single-pass ones.

  `emulated_dot_general` rounds the operands by the algorithm of
  `names[index]` (a `lax.switch` over the roundings, which are integer
  operations on the bit pattern, so exact wherever they run) and computes
  the one contraction they share; every other op is the one a name alone
  gives, so each choice gives the bits of that name alone.

  Attributes:
    names: single-pass algorithm names (`SWITCHABLE`), at least two.
    index: a traced int32 scalar, the position of the chosen name.
  """

  names: tuple[str, ...]
  index: object

  def __post_init__(self):
    bad = [a for a in self.names if a not in SWITCHABLE]
    if bad:
      raise EmulationError(
        f"[hloprobe] algorithms {bad} cannot be chosen at run time; only "
        f"{', '.join(SWITCHABLE)} can"
      )


def rounded_operand(x, algorithm: str, tf32_rounding: str = "rna"):
  """`x` (a real float array) as a single-pass algorithm (`SWITCHABLE`)
  rounds each operand before its f32 products and sums: f32 out, of x's
  shape. So a single-pass dot at `algorithm` is the F32_F32_F32 dot of its
  operands so rounded, in every order: the same ops but the rounding.

  Raises:
    InvalidArgumentError: an algorithm not single-pass (a split's or a
      16-bit sum's operands are not one rounding).
  """
  if algorithm not in SWITCHABLE:
    raise InvalidArgumentError(
      f"{algorithm!r} is not a single-pass algorithm; choose from "
      f"{', '.join(SWITCHABLE)}"
    )
  return _operand_rounding(algorithm, tf32_rounding)(x)


def _operand_rounding(algorithm: str, tf32_rounding: str) -> Callable:
  """The operand conversion of a single-pass algorithm; f32 out."""
  if algorithm == TF32_TRUNCATED:
    return lambda x: rounding.round_to_tf32(x, "rz")
  return {
    "f32": lambda x: x.astype(jnp.float32),
    "tf32": lambda x: rounding.round_to_tf32(x, tf32_rounding),
    "bf16": rounding.round_to_bf16,
    "f16": rounding.round_to_f16,
  }[ALGORITHMS[algorithm].lhs]


def _split_dot(lhs, rhs, dn, algorithm, contract, tf32_rounding):
  """Sum of the partial products `_SPLITS[algorithm]`, f32."""
  if ALGORITHMS[algorithm].lhs == "tf32":
    lhs_parts = rounding.split_tf32(lhs, tf32_rounding)
    rhs_parts = rounding.split_tf32(rhs, tf32_rounding)
  else:
    n = 1 + max(max(pair) for pair in _SPLITS[algorithm])
    lhs_parts = rounding.split_bf16(lhs, n)
    rhs_parts = rounding.split_bf16(rhs, n)
  *low_terms, (hi_l, hi_r) = _SPLITS[algorithm]
  total = None
  for i, j in low_terms:
    term = contract(lhs_parts[i], rhs_parts[j], dn)
    total = term if total is None else total + term
  total = jnp.where(jnp.abs(total) < jnp.inf, total, 0.0)
  return total + contract(lhs_parts[hi_l], rhs_parts[hi_r], dn)


def _f64_dot(lhs, rhs, dn, contract):
  """F64_F64_F64: both operands and the sums in f64."""
  if jax.dtypes.canonicalize_dtype(jnp.float64) != jnp.float64:
    raise EmulationError(
      "[hloprobe] F64_F64_F64 needs 64-bit types; run the emulation inside "
      "`with jax.enable_x64(True):`"
    )
  return contract(lhs.astype(jnp.float64), rhs.astype(jnp.float64), dn)


def _sixteen_bit_dot(lhs, rhs, dn, algorithm, order):
  """Products and/or sums rounded to 16 bits (`_SIXTEEN_BIT`), f32 out.

  Operands are rounded to the 16-bit type first (exact for 16-bit inputs).
  A rounded sum is the f32 sum rounded to 16 bits; where that f32 sum is
  itself inexact this double rounding may differ from the kernel's in the
  last 16-bit place, far below the 16-bit rounding being modelled.
  """
  kind, round_products, round_sums = _SIXTEEN_BIT[algorithm]
  to16 = rounding.round_to_bf16 if kind == "bf16" else rounding.round_to_f16
  sums = _ORDERED["pairwise" if order == "xla" else order]
  return _in_order(
    functools.partial(
      sums,
      product=to16 if round_products else _same,
      total=to16 if round_sums else _same,
    )
  )(to16(lhs), to16(rhs), dn)


# --- summation orders -------------------------------------------------------


def _xla_contract(a, b, dn):
  """The CPU's own dot at HIGHEST, accumulating in the operands' type."""
  return lax.dot_general(
    a, b, dn, precision=lax.Precision.HIGHEST, preferred_element_type=a.dtype
  )


def _canonical(a, b, dn):
  """Reshapes to a (B, M, K) and b (B, K, N); returns them and the out shape."""
  (lc, rc), (lb, rb) = dn
  lf = [d for d in range(a.ndim) if d not in (*lc, *lb)]
  rf = [d for d in range(b.ndim) if d not in (*rc, *rb)]
  size = lambda x, dims: math.prod(x.shape[d] for d in dims)
  out_shape = (
    *(a.shape[d] for d in lb),
    *(a.shape[d] for d in lf),
    *(b.shape[d] for d in rf),
  )
  a3 = jnp.transpose(a, (*lb, *lf, *lc)).reshape(
    size(a, lb), size(a, lf), size(a, lc)
  )
  b3 = jnp.transpose(b, (*rb, *rc, *rf)).reshape(
    size(b, rb), size(b, rc), size(b, rf)
  )
  return a3, b3, out_shape


def _in_order(sum_products: Callable) -> Callable:
  """Lifts a (B,M,K) x (B,K,N) -> (B,M,N) summation to dot_general."""

  def contract(a, b, dn):
    a3, b3, out_shape = _canonical(a, b, dn)
    return sum_products(a3, b3).reshape(out_shape)

  return contract


def _same(x):
  return x


def _zeros(shape, dtype, *after):
  """Zeros of `shape` made after the arrays `after`, each call its own.

  A constant's broadcast has no operands, so XLA:CPU's scheduler may make
  it at the program's start, and CSE merges equal ones: one loop's initial
  sums would then be live from the start to the last site of that shape,
  and every site's buffers would add up with depth (issue 37). A zero
  scalar that comes out of an optimization barrier with `after` is no
  constant: its broadcast follows `after` and is per site. The values are
  the same zeros.
  """
  *_, zero = lax.optimization_barrier((*after, jnp.zeros((), dtype)))
  return lax.broadcast(zero, shape)


def _sequential(a, b, product=_same, total=_same, unroll=1):
  """acc += a[:, :, k] * b[:, k, :] for k = 0, 1, ..., K-1.

  `product` and `total` round each product and each running sum (identity:
  the operands' own arithmetic); so do `_pairwise`'s and `_blocked`'s.
  `unroll` (`_TILED`): that many steps a loop iteration, which XLA:CPU
  fuses into one pass over the sums (the same ops in the same order).
  """

  def step(k, acc):
    ak = lax.dynamic_index_in_dim(a, k, axis=2, keepdims=False)
    bk = lax.dynamic_index_in_dim(b, k, axis=1, keepdims=False)
    return total(acc + product(ak[:, :, None] * bk[:, None, :]))

  zeros = _zeros((a.shape[0], a.shape[1], b.shape[2]), a.dtype, a, b)
  return lax.fori_loop(0, a.shape[2], step, zeros, unroll=unroll)


def _tree_sum(x, axis: int, total=_same, size: int | None = None):
  """Balanced binary-tree sum over `axis`, whose length is a power of two.

  With `size` (a power of two, at least the axis's length), the tree over
  `size` terms whose terms past the axis's length are zeros, which are not
  made: a term whose partner is such a zero (or a subtree of them) is
  added to one +0, which XLA cannot fold away (`_zeros`), as the padded
  tree adds it: -0 + 0 is +0, and a product fused into that sum as an FMA
  is rounded there, overflow included, not in the next level's sum (a
  helper's review, 2026-12-07: without the add, tiled pairwise gave -0.0
  for +0.0 and -inf for NaN).
  """
  size = x.shape[axis] if size is None else size
  zero = _zeros((), x.dtype) if x.shape[axis] < size else None
  while size > 1:
    half = size // 2
    live = x.shape[axis]
    if live > half:
      pairs = lax.slice_in_dim(x, 0, live - half, axis=axis) + lax.slice_in_dim(
        x, half, live, axis=axis
      )
      if live < size:
        alone = lax.slice_in_dim(x, live - half, half, axis=axis) + zero
        pairs = jnp.concatenate([pairs, alone], axis)
      x = total(pairs)
    elif live < size:
      x = total(x + zero)
    size = half
  return jnp.squeeze(x, axis)


def _pairwise(a, b, product=_same, total=_same, chunk_terms=None):
  """Products summed in a balanced binary tree over K (padded with zeros).

  The tree is `_tree_sum`'s over the whole padded K: its first level adds
  the products k and k + P/2 (P the padded length), and so on. Its
  subtree after log2(C) levels is the same tree over the strided chunk
  k = j, j + P/C, j + 2 P/C, ... (C terms), so the products are made one
  strided chunk of C at a time (at most `_PAIRWISE_CHUNK_ELEMENTS`
  products, else one term per output), and the chunk sums are added into
  the tree as they come, like a binary counter (chunks in bit-reversed
  order; `_tree_of_chunks`). Memory: one chunk's products and log2(P/C) +
  1 partial sums of the output's shape (of one tile's, below).

  The chunk size C is chosen for the whole output. Above
  `_PAIRWISE_TILE_ELEMENTS` outputs and more than one chunk, the chunks'
  tree is made one tile of M rows at a time (M halved while even and the
  tile above that many outputs): each output element's products
  and sums are the same ops on the same values, only the rows a loop
  visits together differ, and the tile's counter stays in the caches (a
  GPT-2-small layer's sites at 8 rows: 2-3x less CPU, issue 37). The same
  bits as one tile: emulate_orders_test, on the GPT-2-small sites' shapes.

  (The chunk size itself is not free: on jaxlib 0.12.0.1 XLA:CPU fuses
  f32 products into the first level's sums as FMAs for some chunk sizes
  and shapes and not for others, measured 2026-12-06: a 1024 x 768 x 2304
  dot's chunks of 4 terms fuse, of 16 do not; bf16-rounded operands, whose
  products are exact, give numpy's tree for every chunk size.)

  `chunk_terms` (`_TILED`): chunks of that many terms (a power of two)
  whatever the output's size, and of each chunk's terms only those up to
  the last one any chunk has below K: the padding's products past them
  are zeros, not made; the tree adds one +0 in their place (`_tree_sum`'s
  `size`; 768 terms padded to 1024 in chunks of 8: 6 made a chunk).
  """
  bsz, m, k = a.shape
  n = b.shape[2]
  padded = 1 << max(k - 1, 0).bit_length()
  a = jnp.pad(a, ((0, 0), (0, 0), (0, padded - k)))
  b = jnp.pad(b, ((0, 0), (0, padded - k), (0, 0)))
  chunk = padded if chunk_terms is None else min(padded, chunk_terms)
  while chunk > 1 and bsz * m * n * chunk > _PAIRWISE_CHUNK_ELEMENTS:
    chunk //= 2
  blocks = padded // chunk
  # Chunk j holds k = c * blocks + j for c = 0 .. chunk - 1, in order; with
  # `chunk_terms`, c below `terms` alone (the rest k >= K in every chunk).
  terms = chunk if chunk_terms is None else -(-k // blocks)
  a4 = a.reshape(bsz, m, chunk, blocks)[:, :, :terms]
  b4 = b.reshape(bsz, chunk, blocks, n)[:, :terms]

  def tree(rows):
    """The tree of the chunks of `rows` (a (B, tile, C, blocks) slice
    of `a4`): (B, tile, N)."""

    def chunk_sum(j):
      aj = lax.dynamic_index_in_dim(rows, j, axis=3, keepdims=False)
      bj = lax.dynamic_index_in_dim(b4, j, axis=2, keepdims=False)
      products = product(aj[:, :, :, None] * bj[:, None, :, :])
      return _tree_sum(products, 2, total, chunk)  # (B, tile, N)

    if blocks == 1:
      return chunk_sum(0)
    shape = (bsz, rows.shape[1], n)
    return _tree_of_chunks(chunk_sum, blocks, shape, a.dtype, total, (rows, b4))

  tile = m
  while (
    blocks > 1 and tile % 2 == 0 and bsz * tile * n > _PAIRWISE_TILE_ELEMENTS
  ):
    tile //= 2
  if tile == m:
    return tree(a4)

  def one_tile(t, out):
    rows = lax.dynamic_slice_in_dim(a4, t * tile, tile, axis=1)
    return lax.dynamic_update_slice_in_dim(out, tree(rows), t * tile, axis=1)

  out = _zeros((bsz, m, n), a.dtype, a4, b4)
  return lax.fori_loop(0, m // tile, one_tile, out)


def _tree_of_chunks(chunk_sum, blocks: int, shape, dtype, total, after=()):
  """`_tree_sum` over the `blocks` (a power of two) values `chunk_sum(j)`,
  holding log2(blocks) + 1 of them at a time.

  `_tree_sum` pairs value j with j + blocks/2 first, which is the
  adjacent-pairs tree over the values in bit-reversed order: the r-th
  leaf is value bitrev(r). Leaves are pushed in that order onto a binary
  counter (`stack[l]` holds a finished subtree of 2^l leaves): leaf r
  merges with the subtrees of r's trailing one bits, each merge one sum.
  """
  levels = blocks.bit_length() - 1

  def bitrev(r):
    return sum(((r >> i) & 1) << (levels - 1 - i) for i in range(levels))

  def push(r, stack):
    def merge(state):
      level, cur, stack = state
      left = lax.dynamic_index_in_dim(stack, level, axis=0, keepdims=False)
      return level + 1, total(left + cur), stack

    level, cur, stack = lax.while_loop(
      lambda state: ((r >> state[0]) & 1) == 1,
      merge,
      (jnp.int32(0), chunk_sum(bitrev(r)), stack),
    )
    return lax.dynamic_update_index_in_dim(stack, cur, level, axis=0)

  stack = lax.fori_loop(
    0, blocks, push, _zeros((levels + 1, *shape), dtype, *after)
  )
  return stack[levels]


def _blocked(a, b, product=_same, total=_same, unroll=None):
  """K cut into blocks of `_BLOCK_K`: each summed sequentially, then the
  block sums added in order (a split-K GEMM's partials and reduction).

  Where every block's partial together holds at most
  `_BLOCKED_PARTIALS_ELEMENTS` they are made at once (`_blocked_partials`).
  Beyond, one block at a time, its products and sums made elementwise in
  order. (XLA:CPU's own
  dot of a block is not used: its summation order is the release's
  choice; jaxlib 0.10.2's differs from the in-order sum by 1 ULP on
  bf16-rounded operands where 0.12.0.1's matches it.) Memory: one chunk,
  or one partial and the sum, each of the output's shape.

  `unroll` (`_TILED`): a block at a time whatever the size, its loop
  taking that many steps an iteration (`_sequential`'s `unroll`).
  """
  bsz, m, k = a.shape
  n = b.shape[2]
  blocks = -(-k // _BLOCK_K)
  pad = blocks * _BLOCK_K - k
  a4 = jnp.pad(a, ((0, 0), (0, 0), (0, pad))).reshape(bsz, m, blocks, _BLOCK_K)
  b4 = jnp.pad(b, ((0, 0), (0, pad), (0, 0))).reshape(bsz, blocks, _BLOCK_K, n)
  if unroll is None and bsz * blocks * m * n <= _BLOCKED_PARTIALS_ELEMENTS:
    return _blocked_partials(a4, b4, product, total)

  def block_sum(i):
    ai = lax.dynamic_index_in_dim(a4, i, 2, keepdims=False)  # (B, M, 32)
    bi = lax.dynamic_index_in_dim(b4, i, 1, keepdims=False)  # (B, 32, N)

    def step(j, acc):
      aj = lax.dynamic_index_in_dim(ai, j, 2, keepdims=False)
      bj = lax.dynamic_index_in_dim(bi, j, 1, keepdims=False)
      return total(acc + product(aj[:, :, None] * bj[:, None, :]))

    return lax.fori_loop(
      0, _BLOCK_K, step, jnp.zeros((bsz, m, n), a.dtype), unroll=unroll or 1
    )

  def reduce(i, acc):
    return total(acc + block_sum(i))

  zeros = _zeros((bsz, m, n), a.dtype, a4, b4)
  return lax.fori_loop(0, blocks, reduce, zeros)


def _blocked_partials(a4, b4, product, total):
  """`_blocked` with every block's partial sum held at once, (B, blocks,
  M, N), each made elementwise: the ops of hloprobe before issue 37, kept
  where they fit `_BLOCKED_PARTIALS_ELEMENTS` so that f32
  operands, whose products the CPU compiler may or may not fuse into FMAs
  by shape, give the bits they gave (the seed's noise floor included)."""
  bsz, m, blocks, _ = a4.shape
  n = b4.shape[3]

  def step(j, acc):  # acc: (B, blocks, M, N)
    aj = jnp.moveaxis(lax.dynamic_index_in_dim(a4, j, 3, keepdims=False), 2, 1)
    bj = lax.dynamic_index_in_dim(b4, j, 2, keepdims=False)
    return total(acc + product(aj[:, :, :, None] * bj[:, :, None, :]))

  partials = lax.fori_loop(
    0, _BLOCK_K, step, _zeros((bsz, blocks, m, n), a4.dtype, a4, b4)
  )

  def reduce(i, acc):
    return total(acc + lax.dynamic_index_in_dim(partials, i, 1, keepdims=False))

  zeros = _zeros((bsz, m, n), a4.dtype, partials)
  return lax.fori_loop(0, blocks, reduce, zeros)


def _in_column_tiles(sums: Callable) -> Callable:
  """`sums` (a (B,M,K) x (B,K,N) summation) made one tile of columns at a
  time (`_TILE_OUTPUTS`): a loop over the whole tiles, then the columns
  left; untiled where a tile would be under `_TILE_COLUMNS` columns or
  over half of N. Each column's ops are those of `sums` on its own."""

  def tiled(a, b, product=_same, total=_same):
    bsz, m, _ = a.shape
    n = b.shape[2]
    width = _TILE_OUTPUTS // (bsz * m)
    width -= width % _TILE_COLUMNS
    if width < _TILE_COLUMNS or 2 * width > n:
      return sums(a, b, product, total)

    def one(t, out):
      bt = lax.dynamic_slice_in_dim(b, t * width, width, axis=2)
      return lax.dynamic_update_slice_in_dim(
        out, sums(a, bt, product, total), t * width, axis=2
      )

    whole = n // width * width
    out = lax.fori_loop(0, n // width, one, _zeros((bsz, m, n), a.dtype, a, b))
    if whole == n:
      return out
    rest = sums(a, lax.slice_in_dim(b, whole, n, axis=2), product, total)
    return lax.dynamic_update_slice_in_dim(out, rest, whole, axis=2)

  return tiled


_ORDERED = {
  "sequential": _sequential,
  "pairwise": _pairwise,
  "blocked": _blocked,
}
_CONTRACTIONS = {"xla": _xla_contract} | {
  name: _in_order(sums) for name, sums in _ORDERED.items()
}
# `emulated_dot_general(tiled=True)`'s orders (`_TILE_OUTPUTS`).
_TILED = {
  "sequential": _in_order(
    _in_column_tiles(functools.partial(_sequential, unroll=_TILE_UNROLL))
  ),
  "pairwise": _in_order(
    _in_column_tiles(
      functools.partial(_pairwise, chunk_terms=_TILE_CHUNK_TERMS)
    )
  ),
  "blocked": _in_order(
    _in_column_tiles(functools.partial(_blocked, unroll=_TILE_UNROLL))
  ),
}
