"""Whether a case's rows are independent, proven from its jaxpr.

A batch case's rows are independent when output row r is computed from
input row r of each batched argument and from the shared arguments only
(what `jax.vmap` of a per-row function gives). Then any subset of rows can
be computed exactly on those rows' inputs gathered, as `rows.judged_rows`
needs (issue 37: compute only what is judged).

`proof` walks the case's jaxpr (`jax.make_jaxpr` at one size) and follows
each value's batch axis: an argument's is its `in_axes` entry (None: the
argument is shared, so is everything computed from shared values only),
and each primitive either carries it to its output (a known rule below) or
mixes rows. The rules are the primitives' shape semantics
(jax/_src/lax/lax.py, slicing.py, convolution.py; jax 0.10.2 and
0.12.0.1):

  elementwise (`_ELEMENTWISE`)   every batched operand at the same axis,
                                 of the output's rank and batch size (its
                                 other size-1 dimensions broadcast, as jax
                                 0.12's binary ops allow)
  broadcast_in_dim               the axis's place in broadcast_dimensions
  reshape                        the axis kept whole, with the same product
                                 of sizes before it (row-major order)
  transpose                      the axis's place in the permutation
  squeeze, expand_dims           the axis moved by the dropped/added ones
  reduce_*, argmax, argmin       over other axes only
  cumsum, cumprod, cum*, sort    along another axis only
  rev, pad, slice, split,        the axis untouched (full, unpadded,
  concatenate                    not reversed, not split or joined along)
  dot_general                    one operand batched at a free axis (the
                                 other shared), or both at a paired batch
                                 dimension; never contracted
  conv_general_dilated           the lhs batched at its batch dimension,
                                 the kernel shared, one group
  jit, custom_jvp/vjp calls      their body, followed

The jaxpr is traced at `_ROWS` rows (abstract values), so that a value
made without a batched operand but along the batch size is seen: a
broadcast of shared values is the same in every row and may meet the
rows elementwise; anything else (an iota of the batch size, random bits
of the batch's shape) differs by row index, which rows gathered would
not keep, and is not followed.

Anything else with a batched operand (gather, scatter, dynamic slices,
loops, collectives, a primitive not listed) is not followed: the proof
fails and names it, and the caller falls back to every row. A proof is
sound, not complete: it never calls mixed rows independent; it may fail
on independent ones. Each output leaf's proven axis must also be the one
the case names (`Case.output_axes`).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import numpy as np

from hloprobe.compile import JAXPR_API as jex
from hloprobe.numerics.jaxpr_sites import CALL_PRIMITIVES, open_jaxpr, trace

__all__ = ["proof"]

# Primitives whose every output element is a function of the operands'
# elements at the same index (scalars broadcast): jax/_src/lax/lax.py's
# unops, binops and `select_n`, `clamp`, `convert_element_type`,
# `reduce_precision`, `integer_pow`; jax/_src/lax/special.py's.
_ELEMENTWISE = frozenset(
  """
  abs acos acosh add and asin asinh atan atan2 atanh cbrt ceil clamp
  clz complex conj convert_element_type copy copy_p cos cosh digamma div
  eq erf erf_inv erfc exp exp2 expm1 floor ge gt igamma igammac imag
  integer_pow is_finite le lgamma log log1p logistic lt max min mul ne
  neg nextafter not or polygamma population_count pow real reduce_precision
  regularized_incomplete_beta rem round rsqrt select_n shift_left
  shift_right_arithmetic shift_right_logical sign sin sinh sqrt square
  stop_gradient sub tan tanh xor zeta bessel_i0e bessel_i1e
  """.split()
)
_REDUCTIONS = frozenset(
  "reduce_sum reduce_max reduce_min reduce_prod reduce_and reduce_or "
  "reduce_xor argmax argmin".split()
)
_CUMULATIVE = frozenset("cumsum cumprod cummax cummin cumlogsumexp".split())


# The batch size the jaxpr is traced at (abstract values, no data): a
# prime no other dimension is likely to equal, so that a shared value of
# that size was made along the batch (`_shared`).
_ROWS = 1009
# A shared value broadcast along the batch size: the same in every row.
_FLAT = "flat"


class _NotProven(Exception):
  """A primitive the proof cannot follow with a batched operand."""


def proof(case, args: Sequence, out_axes: Sequence[int | None]) -> str | None:
  """None where `case.fn`'s rows are proven independent; else why not.

  Args:
    case: a batch case (`compile.Case`: its `fn` and `arg_axes`).
    args: its arguments at one size (arrays or pytrees of them).
    out_axes: each output leaf's batch axis, as the case names it
      (`Case.output_axes`; None: the leaf is not batched).

  Returns:
    None when every batched output leaf's row r is proven to come from
    row r of the batched arguments and the shared ones only, at the axis
    `out_axes` names, and every unbatched leaf from shared arguments only;
    else one line, e.g. "not proven: primitive 'gather' (a batched
    operand)" or "output leaf 0 mixes rows".
  """
  axes = case.arg_axes(len(args))
  leaf_axes, shaped = [], []
  for arg, axis in zip(args, axes):
    leaves, tree = jax.tree_util.tree_flatten(arg)
    found = []
    for leaf in leaves:
      shape = list(np.shape(leaf))
      if axis is not None:  # a Python int: numpy's is no `int`
        leaf_axes.append(int(axis) % len(shape))
        shape[leaf_axes[-1]] = _ROWS
      else:
        leaf_axes.append(None)
      found.append(jax.ShapeDtypeStruct(tuple(shape), np.result_type(leaf)))
    shaped.append(jax.tree_util.tree_unflatten(tree, found))
  try:
    closed, _ = trace(case.fn, shaped)
  except Exception as e:  # a program that cannot take _ROWS rows
    return f"not proven: not traced at {_ROWS} rows ({type(e).__name__})"
  jaxpr = open_jaxpr(closed)
  if len(leaf_axes) != len(jaxpr.invars):
    return "not proven: the arguments' leaves do not match the jaxpr's"
  try:
    found = _walk(jaxpr, leaf_axes)
  except _NotProven as e:
    return f"not proven: {e}"
  if len(found) != len(out_axes):
    return "not proven: the output leaves do not match the case's axes"
  for i, (got, want, var) in enumerate(zip(found, out_axes, jaxpr.outvars)):
    if want is not None:
      want %= len(var.aval.shape)
    if got is _FLAT:
      return f"not proven: output leaf {i} is made along the batch size"
    if got != want:
      return f"output leaf {i}: batch axis {got}, the case names {want}"
  return None


def _walk(jaxpr, in_axes: Sequence[int | None]) -> list[int | None]:
  """Each output's batch axis (None: shared) of an open jaxpr."""
  env: dict = {}
  for var, axis in zip(jaxpr.invars, in_axes):
    env[var] = axis
  for var in jaxpr.constvars:
    env[var] = None

  def read(v):
    return None if isinstance(v, jex.Literal) else env.get(v)

  for eqn in jaxpr.eqns:
    ins = [read(v) for v in eqn.invars]
    name = eqn.primitive.name
    if name in CALL_PRIMITIVES:
      outs = _walk(open_jaxpr(eqn.params[CALL_PRIMITIVES[name]]), ins)
    elif any(isinstance(a, int) for a in ins):
      outs = _rule(eqn, ins)
    else:
      outs = _shared(eqn, ins)
    for var, axis in zip(eqn.outvars, outs):
      if isinstance(axis, np.integer):  # from a param: an int here
        axis = int(axis)
      if not isinstance(var, jex.DropVar):
        env[var] = axis
  return [read(v) for v in jaxpr.outvars]


def _shape(v) -> tuple[int, ...]:
  return tuple(v.aval.shape)


def _shared(eqn, ins) -> list:
  """The outputs of an eqn without a batched operand: shared (None);
  `_FLAT` for a broadcast along the batch size (or elementwise ops of
  such), the same in every row; anything else made along the batch size
  (an iota, random bits of the batch's shape) is not proven: its rows
  differ by their index, which a gathered subset would not keep."""
  name = eqn.primitive.name
  flat = any(a is _FLAT for a in ins)
  sized = any(_ROWS in _shape(v) for v in eqn.outvars)
  if not flat and not sized:
    return [None] * len(eqn.outvars)
  if name == "broadcast_in_dim" or (flat and name in _ELEMENTWISE):
    return [_FLAT] * len(eqn.outvars)
  raise _NotProven(f"primitive {name!r} along the batch size")


def _rule(eqn, ins: list[int | None]) -> list[int | None]:
  """The outputs' batch axes of one eqn with a batched operand."""
  name = eqn.primitive.name
  params = eqn.params
  batched = [a for a in ins if isinstance(a, int)]
  out_shape = _shape(eqn.outvars[0])
  if name in _ELEMENTWISE:  # a _FLAT operand is the same in every row
    axis = batched[0]
    for a, v in zip(ins, eqn.invars):
      if isinstance(a, int) and (
        a != axis
        or len(_shape(v)) != len(out_shape)
        or _shape(v)[a] != out_shape[a]
      ):
        raise _NotProven(f"primitive {name!r} (operands at other axes)")
    return [axis]
  if _FLAT in ins:
    raise _NotProven(f"primitive {name!r} along the batch size")
  if name == "dot_general":
    return [_dot(eqn, ins)]
  if name == "conv_general_dilated":
    return [_conv(eqn, ins)]
  if name in ("sort", "concatenate"):
    axis = batched[0]
    _same_axes(ins, axis, name)
    dim = params["dimension"]
    _untouched(axis, (dim,), name)
    return [axis] * len(eqn.outvars)
  axis = ins[0]
  if axis is None or len(batched) != 1:
    raise _NotProven(f"primitive {name!r} (a batched operand)")
  if name == "broadcast_in_dim":
    return [params["broadcast_dimensions"][axis]]
  if name == "reshape":
    return [_reshaped(_shape(eqn.invars[0]), out_shape, axis, name)]
  if name == "transpose":
    return [list(params["permutation"]).index(axis)]
  if name == "squeeze":
    dims = [d % len(_shape(eqn.invars[0])) for d in params["dimensions"]]
    _untouched(axis, dims, name)
    return [axis - sum(d < axis for d in dims)]
  if name == "expand_dims":
    dims = sorted(params["dimensions"])
    for d in dims:
      axis += d <= axis
    return [axis]
  if name in _REDUCTIONS:
    dims = params["axes"]
    _untouched(axis, dims, name)
    return [axis - sum(d < axis for d in dims)]
  if name in _CUMULATIVE:
    _untouched(axis, (params["axis"],), name)
    return [axis]
  if name == "rev":
    _untouched(axis, params["dimensions"], name)
    return [axis]
  if name == "pad":
    if tuple(params["padding_config"][axis]) != (0, 0, 0):
      raise _NotProven(f"primitive {name!r} along the batch axis")
    return [axis]
  if name == "slice":
    size = _shape(eqn.invars[0])[axis]
    strides = params["strides"] or (1,) * len(out_shape)
    if (params["start_indices"][axis], params["limit_indices"][axis]) != (
      0,
      size,
    ) or strides[axis] != 1:
      raise _NotProven(f"primitive {name!r} along the batch axis")
    return [axis]
  if name == "split":
    _untouched(axis, (params["axis"],), name)
    return [axis] * len(eqn.outvars)
  raise _NotProven(f"primitive {name!r} (a batched operand)")


def _untouched(axis: int, dims, name: str) -> None:
  if axis in dims:
    raise _NotProven(f"primitive {name!r} along the batch axis")


def _same_axes(ins, axis: int, name: str) -> None:
  if any(a not in (None, axis) for a in ins):
    raise _NotProven(f"primitive {name!r} (operands at other axes)")


def _reshaped(old, new, axis: int, name: str) -> int:
  """The batch axis after a row-major reshape that keeps it whole."""
  before = math.prod(old[:axis])
  for j, size in enumerate(new):
    if math.prod(new[:j]) == before and size == old[axis]:
      return j
  raise _NotProven(f"primitive {name!r} (the batch axis merged or split)")


def _dot(eqn, ins) -> int:
  """dot_general's output batch axis: (batch dims, lhs free, rhs free)."""
  (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
  lhs, rhs = ins
  nl, nr = (len(_shape(v)) for v in eqn.invars)
  l_free = [d for d in range(nl) if d not in (*lc, *lb)]
  r_free = [d for d in range(nr) if d not in (*rc, *rb)]
  if lhs is not None and rhs is not None:
    if lhs in lb and rhs in rb and lb.index(lhs) == rb.index(rhs):
      return lb.index(lhs)
  elif lhs is not None and lhs not in lc:
    return lb.index(lhs) if lhs in lb else len(lb) + l_free.index(lhs)
  elif rhs is not None and rhs not in rc:
    if rhs in rb:
      return rb.index(rhs)
    return len(lb) + len(l_free) + r_free.index(rhs)
  raise _NotProven("primitive 'dot_general' (rows contracted or crossed)")


def _conv(eqn, ins) -> int:
  """conv_general_dilated's output batch axis (lhs batched, kernel
  shared, one feature and batch group)."""
  p = eqn.params
  dn = p["dimension_numbers"]
  if (
    ins[1] is not None
    or ins[0] != dn.lhs_spec[0]
    or p["feature_group_count"] != 1
    or p["batch_group_count"] != 1
  ):
    raise _NotProven("primitive 'conv_general_dilated' (rows mixed)")
  return dn.out_spec[0]
