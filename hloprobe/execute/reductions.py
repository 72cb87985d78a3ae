"""HLO `reduce` and `reduce-window` in numpy, their reducer run on arrays.

A reducer that is one binary op of its two parameters (add, multiply,
maximum, minimum, and, or) is a numpy ufunc reduction (`fast_reducer`):
floats narrower than f32 are reduced in f32 and rounded once, as XLA's
GPU reductions accumulate them; numpy sums pairwise, which is within the
f32 band of any order a kernel uses. Any other reducer (variadic ones
included) is run step by step over the reduced elements, on whole arrays
of the kept dimensions (`apply`). A `reduce-window` applies the reducer
to one window offset at a time (`shape_ops.window_pieces`).

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hloprobe.execute import shape_ops
from hloprobe.execute.values import MISSING, Unsupported, is_float
from hloprobe.ir import HloInstruction

__all__ = [
  "fast_reducer",
  "reduce",
  "reduce_window",
]

# Reducer root opcode -> numpy ufunc (`fast_reducer`).
_FAST_REDUCERS = {
  "add": np.add,
  "multiply": np.multiply,
  "maximum": np.maximum,
  "minimum": np.minimum,
  "and": np.logical_and,
  "or": np.logical_or,
}


def fast_reducer(comp) -> np.ufunc | None:
  """The ufunc of a reducer computation that is one binary op of its two
  parameters; None for any other."""
  if comp is None or len(comp.instructions) != 3:
    return None
  root = comp.root
  params = {i.name for i in comp.instructions if i.opcode == "parameter"}
  if len(params) == 2 and set(root.operands) == params:
    return _FAST_REDUCERS.get(root.opcode)
  return None


def reduce(
  inst: HloInstruction, operands: list, fast, apply: Callable[[list], object]
):
  """`reduce`: an array, or a tuple of arrays for a variadic reduce;
  MISSING if the reducer could not run."""
  n = len(operands) // 2
  xs, inits = operands[:n], operands[n:]
  dims = inst.dims_attr("dimensions")
  if fast is not None and n == 1:
    return _reduce_fast(fast, xs[0], inits[0], dims)
  kept = [d for d in range(xs[0].ndim) if d not in dims]
  kept_shape = tuple(xs[0].shape[d] for d in kept)
  moved = [
    np.transpose(x, (*dims, *kept)).reshape((-1, *kept_shape)) for x in xs
  ]
  acc = [np.broadcast_to(v, kept_shape) for v in inits]
  for r in range(moved[0].shape[0]):
    out = apply([*acc, *(m[r] for m in moved)])
    if out is MISSING:
      return MISSING
    acc = list(out) if n > 1 else [out]
  values = tuple(np.asarray(a) for a in acc)
  return values[0] if n == 1 else values


def reduce_window(
  inst: HloInstruction, operands: list, fast, apply: Callable[[list], object]
):
  """`reduce-window` of one operand; MISSING if the reducer could not
  run.

  Raises:
    Unsupported: a reduce-window of several operands.
  """
  if len(operands) != 2:
    raise Unsupported("a reduce-window of several operands")
  x, init = operands
  acc = np.broadcast_to(init, tuple(inst.shape.dims))
  for piece in shape_ops.window_pieces(x, init, inst.attrs.get("window", "")):
    acc = fast(acc, piece) if fast is not None else apply([acc, piece])
    if acc is MISSING:
      return MISSING
  return np.asarray(acc)


def _reduce_fast(fn, x: np.ndarray, init: np.ndarray, dims) -> np.ndarray:
  """`reduce` by one ufunc (module docstring)."""
  work = x.dtype
  if is_float(x.dtype) and x.dtype.itemsize < 4:
    work = np.dtype(np.float32)
  if any(x.shape[d] == 0 for d in dims):
    kept = tuple(s for d, s in enumerate(x.shape) if d not in dims)
    return np.broadcast_to(init, kept)
  reduced = fn.reduce(x.astype(work), axis=tuple(dims)) if dims else x
  return fn(init.astype(work), reduced)
