"""A module's gather, scatter and reduce-window as `jax.lax` calls, for
`module_jax`.

The HLO attributes are read as XLA prints them (xla/hlo/ir/
hlo_instruction.cc: `offset_dims`, `collapsed_slice_dims`,
`start_index_map`, `operand_batching_dims`, `start_indices_batching_dims`,
`index_vector_dim`, `slice_sizes`; a scatter's `update_window_dims`,
`inserted_window_dims`, `scatter_dims_to_operand_dims`,
`input_batching_dims`, `scatter_indices_batching_dims`; `window={size=...
stride=... pad=lo_hi... lhs_dilate=... rhs_dilate=...}`). `lax.gather` and
`lax.scatter*` want the index vector as the last dimension of the
indices: it is moved there (or added, when `index_vector_dim` is the
rank). Out-of-range indices are left to XLA (`PROMISE_IN_BOUNDS`, jax's
mode that lowers to the bare op: XLA's own semantics, clamped for gather
and skipped for scatter, per XLA's operation semantics).

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np
from jax import lax

from hloprobe.errors import CaseError
from hloprobe.ir import HloInstruction

__all__ = ["gather", "reduce_window", "scatter", "window"]

_SCATTERS = {
  "replace": lax.scatter,
  "add": lax.scatter_add,
  "multiply": lax.scatter_mul,
  "maximum": lax.scatter_max,
  "minimum": lax.scatter_min,
}


def _indices(inst: HloInstruction, indices):
  """The start indices with the index vector as their last dimension."""
  vector, rank = int(inst.attrs.get("index_vector_dim", 0)), np.ndim(indices)
  if vector == rank:
    return lax.expand_dims(indices, (vector,))
  if vector != rank - 1:
    return jnp.moveaxis(indices, vector, -1)
  return indices


def gather(inst: HloInstruction, ops: list):
  """`gather(operand, indices)`."""
  dims = lax.GatherDimensionNumbers(
    offset_dims=inst.dims_attr("offset_dims"),
    collapsed_slice_dims=inst.dims_attr("collapsed_slice_dims"),
    start_index_map=inst.dims_attr("start_index_map"),
    operand_batching_dims=inst.dims_attr("operand_batching_dims"),
    start_indices_batching_dims=inst.dims_attr("start_indices_batching_dims"),
  )
  return lax.gather(
    ops[0],
    _indices(inst, ops[1]),
    dims,
    inst.dims_attr("slice_sizes"),
    indices_are_sorted=inst.attrs.get("indices_are_sorted") == "true",
    mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS,
  )


def scatter(inst: HloInstruction, ops: list, kind: str):
  """`scatter(operand, indices, updates)` whose update computation is
  `kind` ("replace", "add", "multiply", "maximum", "minimum").

  Raises:
    CaseError: another update computation, or several operands.
  """
  if kind not in _SCATTERS or len(ops) != 3:
    raise CaseError(
      f"scatter {inst.name}: its update ({kind}, {len(ops)} operands) is not "
      "translated to jax.lax; one operand updated by replace, add, multiply, "
      "maximum or minimum is"
    )
  dims = lax.ScatterDimensionNumbers(
    update_window_dims=inst.dims_attr("update_window_dims"),
    inserted_window_dims=inst.dims_attr("inserted_window_dims"),
    scatter_dims_to_operand_dims=inst.dims_attr("scatter_dims_to_operand_dims"),
    operand_batching_dims=inst.dims_attr("input_batching_dims"),
    scatter_indices_batching_dims=inst.dims_attr(
      "scatter_indices_batching_dims"
    ),
  )
  return _SCATTERS[kind](
    ops[0],
    _indices(inst, ops[1]),
    ops[2],
    dims,
    indices_are_sorted=inst.attrs.get("indices_are_sorted") == "true",
    unique_indices=inst.attrs.get("unique_indices") == "true",
    mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS,
  )


def reduce_window(inst: HloInstruction, ops: list, computation: Callable):
  """`reduce-window(operand, init)` with `computation` (a `lax` monoid,
  which gives jax's reduce_window_sum/max/min primitive, or a function).

  Raises:
    CaseError: several operands.
  """
  if len(ops) != 2:
    raise CaseError(
      f"reduce-window {inst.name}: {len(ops) // 2} operands; one is "
      "translated to jax.lax"
    )
  w = window(inst.attrs.get("window", ""), np.ndim(ops[0]))
  return lax.reduce_window(
    ops[0],
    ops[1],
    computation,
    w["size"],
    w["stride"],
    w["pad"],
    base_dilation=w["lhs_dilate"],
    window_dilation=w["rhs_dilate"],
  )


def window(text: str, rank: int) -> dict:
  """`window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=..}`
  as per-dimension tuples (defaults 1, pads (0, 0))."""
  fields = dict(
    f.split("=", 1) for f in text.strip().strip("{}").split() if "=" in f
  )

  def ints(key: str) -> tuple[int, ...]:
    raw = fields.get(key)
    return tuple(int(v) for v in raw.split("x")) if raw else (1,) * rank

  pads = fields.get("pad")
  pad = (
    [tuple(int(v) for v in p.split("_")) for p in pads.split("x")]
    if pads
    else [(0, 0)] * rank
  )
  return {
    "size": ints("size"),
    "stride": ints("stride"),
    "pad": pad,
    "lhs_dilate": ints("lhs_dilate"),
    "rhs_dilate": ints("rhs_dilate"),
  }
