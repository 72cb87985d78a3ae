"""Built-in cases that come from hloprobe's own issues, not a public report:
`int8_dots` (issue 24, integer dots). `builtin_cases.CASES` lists them.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hloprobe.compile.case_model import Case

__all__ = ["int8_dots"]


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
