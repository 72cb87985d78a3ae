"""HLO `scatter` and `sort`, whose user computations (the update
combiner, the comparator) the caller runs on arrays (`apply`).

`scatter` follows XLA's operation semantics
(https://openxla.org/xla/operation_semantics#scatter): for each index of
the update's scatter dimensions, the start index vector is read from
`scatter_indices` (along `index_vector_dim`) and placed on the operand
dimensions `scatter_dims_to_operand_dims`; the update window (the
`update_window_dims`) lands on the operand's dimensions that are not
`inserted_window_dims`, in order; each element becomes
`combiner(old, update)`, updates applied in the order of their indices. A
window that does not fit inside the operand is skipped, as XLA's
backends do. One operand only; batching dims are not modelled.

`sort` evaluates the comparator once on all pairs of each row (operand k
as parameters 2k and 2k+1, broadcast against each other), so any
comparator jax writes (its NaN and -0 canonicalising total order
included) is run as written; the sorted position of element i is the
count of elements the comparator puts before it, ties kept in their
original order (a stable sort, which is also a valid unstable one). Rows
of more than `_PAIRWISE_LIMIT` pairs are not executed.

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hloprobe.execute.values import MISSING, Unsupported
from hloprobe.ir import HloInstruction

__all__ = [
  "scatter",
  "sort",
]

_PAIRWISE_LIMIT = 1 << 24


def scatter(
  inst: HloInstruction,
  operands: list,
  apply: Callable[[list], object],
):
  """The value of `scatter` (module docstring); MISSING if the combiner
  could not run.

  Raises:
    Unsupported: a scatter of several operands, or with batching dims.
  """
  if len(operands) != 3:
    raise Unsupported("a scatter of several operands")
  for key in ("input_batching_dims", "scatter_indices_batching_dims"):
    if inst.attrs.get(key, "{}").strip("{}"):
      raise Unsupported(f"a scatter with {key}")
  operand, indices, updates = operands
  window_dims = inst.dims_attr("update_window_dims")
  inserted = inst.dims_attr("inserted_window_dims")
  to_operand = inst.dims_attr("scatter_dims_to_operand_dims")
  ivd = int(inst.attrs.get("index_vector_dim", str(indices.ndim)))
  idx = indices.astype(np.int64)
  if ivd == idx.ndim:
    idx = idx[..., None]
  idx = np.moveaxis(idx, ivd, -1)
  scatter_dims = [d for d in range(updates.ndim) if d not in window_dims]
  kept = [d for d in range(operand.ndim) if d not in inserted]
  out = np.array(operand, copy=True)
  for u in np.ndindex(*(updates.shape[d] for d in scatter_dims)):
    start = [0] * operand.ndim
    for k, d in enumerate(to_operand):
      start[d] = int(idx[u][k])
    where = [slice(None)] * updates.ndim
    for d, i in zip(scatter_dims, u):
      where[d] = i
    window = updates[tuple(where)]
    sizes = [1] * operand.ndim
    for d, s in zip(kept, window.shape):
      sizes[d] = s
    if any(s < 0 or s + z > n for s, z, n in zip(start, sizes, operand.shape)):
      continue
    target = tuple(slice(s, s + z) for s, z in zip(start, sizes))
    new = apply([out[target], window.reshape(sizes)])
    if new is MISSING:
      return MISSING
    out[target] = new
  return out


def sort(inst: HloInstruction, operands: list, apply: Callable[[list], object]):
  """The value of `sort` (module docstring): an array, or a tuple for
  several operands; MISSING if the comparator could not run.

  Raises:
    Unsupported: rows too long to compare every pair (`_PAIRWISE_LIMIT`).
  """
  dim = inst.dims_attr("dimensions")[0]
  xs = [np.moveaxis(x, dim, -1) for x in operands]
  n = xs[0].shape[-1]
  if xs[0].size * n > _PAIRWISE_LIMIT:
    raise Unsupported(f"a sort of rows of {n}: too many pairs to compare")
  args = []
  for x in xs:
    args += [x[..., :, None], x[..., None, :]]
  less = apply(args)
  if less is MISSING:
    return MISSING
  less = np.broadcast_to(np.asarray(less, bool), (*xs[0].shape, n))
  before = less.sum(axis=-2)  # elements the comparator puts before i
  tie = ~less & ~np.swapaxes(less, -1, -2)
  earlier = np.tril(np.ones((n, n), bool), k=-1)  # j < i at [i, j]
  position = before + (tie & earlier).sum(axis=-1)
  sorted_ = []
  for x in xs:
    out = np.empty_like(x)
    np.put_along_axis(out, position, x, axis=-1)
    sorted_.append(np.moveaxis(out, -1, dim))
  return sorted_[0] if len(sorted_) == 1 else tuple(sorted_)
