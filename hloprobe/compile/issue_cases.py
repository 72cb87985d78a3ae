"""Built-in cases that come from hloprobe's own issues, not a public report:
`int8_dots` (issue 24, integer dots) and `sharded_matmul` (issue 24, a
contraction sharded over 8 devices). `builtin_cases.CASES` lists them.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from hloprobe.compile.case_model import Case

__all__ = ["int8_dots", "sharded_matmul"]


def _int8_dots(x, w, v):
  """s8 x s8 -> s32 (exact here) and s8 x s8 -> s8 (wraps: |sum| > 127)."""
  dims = (((1,), (0,)), ((), ()))
  wide = jax.lax.dot_general(x, w, dims, preferred_element_type=jnp.int32)
  return {"s32": wide, "s8": jax.lax.dot_general(x, v, dims)}


def _int8_inputs():
  """x: s8[9,64], w: s8[64,32], v: s8[64,16], uniform over s8 (seed 24).

  With K = 64, every s32 sum is exact (|sum| <= 64 * 128^2 < 2^31) and
  nearly every s8 one overflows (a sum of 64 products of size ~ 5000).
  """
  rng = np.random.default_rng(24)
  ints = lambda *shape: rng.integers(-128, 128, shape, dtype=np.int8)
  return ints(9, 64), ints(64, 32), ints(64, 16)


int8_dots = Case(
  "int8_dots",
  "int8 x int8 dots: exact into int32, overflowing (wrapping) into int8",
  _int8_dots,
  _int8_inputs,
  rows_independent=True,
)


def _matmul(x, w):
  """x @ w at the ambient matmul precision (one dot_general)."""
  return x @ w


def _sharded_inputs():
  """x: f32[9,256], w: f32[256,32], standard normal (seed 245).

  K = 256 splits into 8 shards of 32: each device sums 32 products, and
  the all-reduce adds the 8 partial sums, an order no single-device dot
  of K = 256 has.
  """
  rng = np.random.default_rng(245)
  x = rng.standard_normal((9, 256)).astype(np.float32)
  return x, rng.standard_normal((256, 32)).astype(np.float32)


sharded_matmul = Case(
  "sharded_matmul",
  "x @ w with K = 256 sharded over 8 devices: per-device dots, then an "
  "all-reduce of the partial sums",
  _matmul,
  _sharded_inputs,
  rows_independent=True,
  mesh_shape=(8,),
  mesh_axes=("k",),
  in_specs=(PartitionSpec(None, "k"), PartitionSpec("k", None)),
  out_specs=PartitionSpec(),
)
