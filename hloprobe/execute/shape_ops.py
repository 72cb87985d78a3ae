"""HLO ops that move values without arithmetic, in numpy: broadcast,
reshape, bitcast, transpose, slice, dynamic-slice, dynamic-update-slice,
concatenate, pad, reverse, iota, gather.

Values are held in logical (row-major numpy) order whatever their layout,
so `copy` and `transpose` need no layout; `bitcast` does: it reinterprets
the operand's bytes in the result's shape and layout, which on GPU modules
changes the logical order (XLA's layout assignment turns transposes into
bitcasts between layouts). `bitcast` therefore reads the operand in its
physical (major-to-minor) order and writes the result's physical order.

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

import re

import numpy as np

from hloprobe.execute.values import Unsupported, minor_to_major
from hloprobe.ir import HloInstruction

__all__ = [
  "bitcast",
  "broadcast",
  "concatenate",
  "dynamic_slice",
  "dynamic_update_slice",
  "gather",
  "iota",
  "pad",
  "reverse",
  "slice_",
  "window_pieces",
]


def broadcast(x: np.ndarray, dims: tuple[int, ...], out_dims) -> np.ndarray:
  """`broadcast(x), dimensions=dims`: operand dim i is result dim dims[i]."""
  shape = [1] * len(out_dims)
  order = np.argsort(dims) if dims else []
  x = np.transpose(x, order) if len(dims) > 1 else x
  for i, d in enumerate(sorted(dims)):
    shape[d] = x.shape[i]
  return np.broadcast_to(x.reshape(shape), tuple(out_dims))


def bitcast(x: np.ndarray, in_layout, out_shape) -> np.ndarray:
  """`bitcast`: the operand's elements in its physical order, read back in
  the result's physical order (module docstring).

  Args:
    x: the operand's logical value.
    in_layout: the operand's printed layout (None: default).
    out_shape: the result's `Shape` (dims and layout).

  Raises:
    Unsupported: the result's element count differs from the operand's.
  """
  in_m2m = minor_to_major(in_layout, x.ndim)
  out_dims = tuple(out_shape.dims)
  out_m2m = minor_to_major(out_shape.layout, len(out_dims))
  if x.size != int(np.prod(out_dims, dtype=np.int64)):
    raise Unsupported("bitcast changes the element count")
  physical = np.transpose(x, tuple(reversed(in_m2m))).reshape(-1)
  major_to_minor = tuple(reversed(out_m2m))
  stored = physical.reshape(tuple(out_dims[d] for d in major_to_minor))
  return np.transpose(stored, np.argsort(major_to_minor))


def slice_(x: np.ndarray, spec: str) -> np.ndarray:
  """`slice(x), slice={[start:limit:stride], ...}`.

  Raises:
    Unsupported: the spec's dimension count is not `x`'s rank.
  """
  parts = re.findall(r"\[([^\]]*)\]", spec)
  if len(parts) != x.ndim:
    raise Unsupported(f"slice spec {spec!r} for rank {x.ndim}")
  index = []
  for p in parts:
    nums = [int(n) for n in p.split(":")]
    start, limit = nums[0], nums[1]
    stride = nums[2] if len(nums) > 2 else 1
    index.append(slice(start, limit, stride))
  return x[tuple(index)]


def _clamped_starts(x_shape, starts, sizes) -> list[int]:
  """HLO clamps dynamic start indices into [0, dim - size]."""
  return [
    int(min(max(int(s), 0), d - z)) for s, d, z in zip(starts, x_shape, sizes)
  ]


def dynamic_slice(x: np.ndarray, starts, sizes) -> np.ndarray:
  """HLO `dynamic-slice`: the block of `x` of shape `sizes` at `starts`
  (one integer per dimension, any dtype of `x`). As XLA's operation
  semantics say (openxla/xla docs/operation_semantics.md, DynamicSlice:
  "start_indices[i] = clamp(start_indices[i], 0,
  operand.dimension_size[i] - size_indices[i])" before slicing), each
  start is clamped to [0, x.shape[i] - sizes[i]], so the block always lies
  inside `x`; no error is raised for a start out of range."""
  s = _clamped_starts(x.shape, starts, sizes)
  return x[tuple(slice(a, a + z) for a, z in zip(s, sizes))]


def dynamic_update_slice(x: np.ndarray, update: np.ndarray, starts):
  """HLO `dynamic-update-slice`: a copy of `x` with `update` (same rank and
  dtype) written at `starts`, each clamped to [0, x.shape[i] -
  update.shape[i]] as XLA's DynamicUpdateSlice semantics say; `x` is not
  changed."""
  s = _clamped_starts(x.shape, starts, update.shape)
  out = np.array(x, copy=True)
  out[tuple(slice(a, a + z) for a, z in zip(s, update.shape))] = update
  return out


def concatenate(xs: list[np.ndarray], dim: int) -> np.ndarray:
  """HLO `concatenate` of `xs` (same rank and dtype, equal but for `dim`)
  along dimension `dim`."""
  return np.concatenate(xs, axis=dim)


def pad(x: np.ndarray, value: np.ndarray, spec: str) -> np.ndarray:
  """`pad(x, value), padding=lo_hi_interior x ...`; negative edges crop.

  Raises:
    Unsupported: the spec's dimension count is not `x`'s rank.
  """
  dims = spec.split("x")
  if len(dims) != x.ndim:
    raise Unsupported(f"padding {spec!r} for rank {x.ndim}")
  config = []
  for d in dims:
    nums = [int(n) for n in d.split("_")]
    config.append((nums[0], nums[1], nums[2] if len(nums) > 2 else 0))
  out = x
  for axis, (_, _, interior) in enumerate(config):
    if interior and out.shape[axis] > 1:
      n = out.shape[axis]
      shape = list(out.shape)
      shape[axis] = n + (n - 1) * interior
      grown = np.full(shape, value, dtype=x.dtype)
      index = [slice(None)] * out.ndim
      index[axis] = slice(None, None, interior + 1)
      grown[tuple(index)] = out
      out = grown
  for axis, (lo, hi, _) in enumerate(config):
    shape = list(out.shape)
    shape[axis] = max(shape[axis] + lo + hi, 0)
    grown = np.full(shape, value, dtype=x.dtype)
    src = [slice(None)] * out.ndim
    dst = [slice(None)] * out.ndim
    n = out.shape[axis]
    src[axis] = slice(max(-lo, 0), n - max(-hi, 0))
    dst[axis] = slice(
      max(lo, 0), max(lo, 0) + max(n - max(-lo, 0) - max(-hi, 0), 0)
    )
    grown[tuple(dst)] = out[tuple(src)]
    out = grown
  return out


def reverse(x: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
  """HLO `reverse`: `x` with the dimensions `dims` reversed (`x` itself
  where `dims` is empty)."""
  return np.flip(x, axis=dims) if dims else x


def iota(dims, dim: int, dtype: np.dtype) -> np.ndarray:
  """`iota(), iota_dimension=dim` of shape `dims`."""
  shape = [1] * len(dims)
  shape[dim] = dims[dim]
  values = np.arange(dims[dim], dtype=np.int64).reshape(shape)
  return np.broadcast_to(values, tuple(dims)).astype(dtype)


def gather(
  operand: np.ndarray, indices: np.ndarray, inst: HloInstruction
) -> np.ndarray:
  """HLO `gather` (offset_dims, collapsed_slice_dims, start_index_map,
  index_vector_dim, slice_sizes), by its definition in
  https://openxla.org/xla/operation_semantics#gather, one batch element at
  a time.

  Raises:
    Unsupported: a gather with operand_batching_dims.
  """
  if inst.attrs.get("operand_batching_dims"):
    raise Unsupported("gather with operand_batching_dims")
  offset_dims = inst.dims_attr("offset_dims")
  collapsed = inst.dims_attr("collapsed_slice_dims")
  start_map = inst.dims_attr("start_index_map")
  ivd = int(inst.attrs.get("index_vector_dim", str(indices.ndim)))
  sizes = inst.dims_attr("slice_sizes")
  idx = indices.astype(np.int64)
  if ivd == idx.ndim:
    idx = idx[..., None]
  idx = np.moveaxis(idx, ivd, -1)
  batch_shape = idx.shape[:-1]
  kept = [d for d in range(operand.ndim) if d not in collapsed]
  out_rank = len(batch_shape) + len(kept)
  batch_dims = [d for d in range(out_rank) if d not in offset_dims]
  out_shape = [0] * out_rank
  for d, s in zip(batch_dims, batch_shape):
    out_shape[d] = s
  for d, k in zip(offset_dims, kept):
    out_shape[d] = sizes[k]
  out = np.empty(out_shape, dtype=operand.dtype)
  for b in np.ndindex(*batch_shape):
    starts = [0] * operand.ndim
    for k, d in enumerate(start_map):
      starts[d] = idx[b][k]
    s = _clamped_starts(operand.shape, starts, sizes)
    piece = operand[tuple(slice(a, a + z) for a, z in zip(s, sizes))]
    piece = piece.reshape([sizes[k] for k in kept])
    where = [slice(None)] * out_rank
    for d, i in zip(batch_dims, b):
      where[d] = i
    out[tuple(where)] = piece
  return out


def window_pieces(x: np.ndarray, init: np.ndarray, spec: str):
  """The operand pieces a `reduce-window` combines, one per window offset.

  `window={size=AxB stride=AxB pad=lo_hixlo_hi}`: the operand is padded
  with the init value, and for each offset in the window (in row-major
  order, as XLA's loop visits it) the elements at `offset + stride * i`
  form one piece of the result's shape.

  Raises:
    Unsupported: base or window dilation, or a spec of another rank.
  """
  fields = dict(re.findall(r"(\w+)=(\S+)", spec.strip("{}")))
  if any(k in fields for k in ("lhs_dilate", "rhs_dilate")):
    raise Unsupported("reduce-window with dilation")

  def per_dim(key, default):
    if key not in fields:
      return [default] * x.ndim
    return [v for v in fields[key].split("x")]

  size = [int(v) for v in per_dim("size", 1)]
  stride = [int(v) for v in per_dim("stride", 1)]
  pads = [tuple(int(p) for p in v.split("_")) for v in per_dim("pad", "0_0")]
  if not len(size) == len(stride) == len(pads) == x.ndim:
    raise Unsupported(f"window {spec!r} for rank {x.ndim}")
  spec_pad = "x".join(f"{lo}_{hi}" for lo, hi in pads)
  padded = pad(x, init, spec_pad) if x.ndim else x
  out = [(padded.shape[d] - size[d]) // stride[d] + 1 for d in range(x.ndim)]
  for offset in np.ndindex(*size):
    yield padded[
      tuple(
        slice(o, o + stride[d] * (out[d] - 1) + 1, stride[d])
        for d, o in enumerate(offset)
      )
    ]
