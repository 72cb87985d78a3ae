"""One HLO instruction's value from its operands' values: the table of
opcodes the executor computes (`Ops.evaluate`).

An opcode or custom call that is not in the table raises `Unsupported`,
which the interpreter records as a `NotExecuted` naming it. Every array
result is held in its HLO element type (`values.compute_dtype`: float64
for floats under `widen`).

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hloprobe.execute import (
  blas,
  contraction,
  conv,
  elementwise,
  reductions,
  reorder,
  shape_ops,
)
from hloprobe.execute.values import (
  Unsupported,
  compute_dtype,
  numpy_dtype,
  parse_literal,
)
from hloprobe.ir import HloInstruction

__all__ = [
  "Ops",
  "target_of",
]

_IDENTITY_OPS = ("optimization-barrier", "add-dependency")
# Custom calls that pass their one operand through (sharding annotations
# of a single-device program; jax's unoptimized HLO has them).
_IDENTITY_CALLS = ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape")


# Collective opcodes -> the method of `spmd.Collectives` that computes
# them (one device's run of an SPMD-partitioned module); the async
# -start/-done pairs compute at the start.
_COLLECTIVES = {
  "all-reduce": "all_reduce",
  "all-gather": "all_gather",
  "reduce-scatter": "reduce_scatter",
  "collective-permute": "collective_permute",
  "all-to-all": "all_to_all",
}


def target_of(inst: HloInstruction) -> str:
  """What a `NotExecuted` names: the custom call target or the opcode."""
  if inst.opcode == "custom-call":
    return inst.attrs.get("custom_call_target", "custom-call").strip('"')
  return inst.opcode


class Ops:
  """The opcode table, bound to one interpreter (for calls and records)."""

  def __init__(self, interp):
    self.interp = interp
    self.widen = interp.widen
    self._by_name: dict[str, dict[str, HloInstruction]] = {}
    self._table: dict[str, Callable] = {
      "constant": self._constant,
      "iota": self._iota,
      "tuple": lambda c, i, o, s: tuple(o),
      "get-tuple-element": lambda c, i, o, s: o[0][int(i.attrs["index"])],
      "compare": self._compare,
      "select": self._select,
      "clamp": self._clamp,
      "convert": self._convert,
      "bitcast-convert": self._bitcast_convert,
      "reduce-precision": self._reduce_precision,
      "broadcast": self._broadcast,
      "reshape": lambda c, i, o, s: o[0].reshape(tuple(i.shape.dims)),
      "bitcast": self._bitcast,
      "copy": lambda c, i, o, s: o[0],
      "transpose": lambda c, i, o, s: np.transpose(
        o[0], i.dims_attr("dimensions")
      ),
      "slice": lambda c, i, o, s: shape_ops.slice_(o[0], i.attrs["slice"]),
      "dynamic-slice": lambda c, i, o, s: shape_ops.dynamic_slice(
        o[0], [int(v) for v in o[1:]], i.dims_attr("dynamic_slice_sizes")
      ),
      "dynamic-update-slice": lambda c, i, o, s: shape_ops.dynamic_update_slice(
        o[0], o[1], [int(v) for v in o[2:]]
      ),
      "concatenate": lambda c, i, o, s: shape_ops.concatenate(
        list(o), i.dims_attr("dimensions")[0]
      ),
      "pad": lambda c, i, o, s: shape_ops.pad(o[0], o[1], i.attrs["padding"]),
      "reverse": lambda c, i, o, s: shape_ops.reverse(
        o[0], i.dims_attr("dimensions")
      ),
      "gather": lambda c, i, o, s: shape_ops.gather(o[0], o[1], i),
      "reduce": self._reduce,
      "scatter": lambda c, i, o, s: reorder.scatter(i, o, self._applier(i, s)),
      "sort": lambda c, i, o, s: reorder.sort(i, o, self._applier(i, s)),
      "reduce-window": self._reduce_window,
      "dot": self._dot,
      "convolution": self._convolution,
      "fusion": self._fusion,
      "call": self._call,
      "map": self._map,
      "while": lambda c, i, o, s: self.interp.while_loop(i, o[0]),
      "conditional": self._conditional,
      "custom-call": self._custom_call,
      "after-all": lambda c, i, o, s: (),
      "copy-start": lambda c, i, o, s: (o[0], o[0], np.zeros((), np.uint32)),
      "copy-done": lambda c, i, o, s: o[0][0],
      "async-start": self._async_start,
      "async-update": lambda c, i, o, s: o[0],
      "async-done": lambda c, i, o, s: o[0][1],
      "fusion-start": self._fusion_start,
      "fusion-done": lambda c, i, o, s: o[0][1],
      "partition-id": lambda c, i, o, s: np.asarray(
        self.interp.partition, np.uint32
      ),
      "replica-id": lambda c, i, o, s: np.zeros((), np.uint32),
    }
    for name, method in _COLLECTIVES.items():
      self._table[name] = self._collective(method)
      self._table[name + "-start"] = self._collective(method)
      self._table[name + "-done"] = lambda c, i, o, s: (
        o[0][-1] if isinstance(o[0], tuple) else o[0]
      )
    for name in _IDENTITY_OPS:
      self._table[name] = lambda c, i, o, s: o[0]
    for name in elementwise.UNARY:
      self._table.setdefault(name, self._unary)
    for name in elementwise.BINARY:
      self._table[name] = self._binary

  # --- entry points ------------------------------------------------------

  def argument(self, param: HloInstruction, value):
    """An entry argument held in the parameter's compute type."""
    return self._held(param.shape, value)

  def _held(self, shape, value):
    if shape.is_tuple:
      return tuple(self._held(e, v) for e, v in zip(shape.elements, value))
    # No copy where the type is kept (a value is never written in place
    # here): a non-widened run's f32 weights are read as given.
    dtype = compute_dtype(shape.dtype, self.widen)
    return np.asarray(value).astype(dtype, copy=False)

  def evaluate(self, comp, inst: HloInstruction, operands, scope):
    """The value of `inst` (module docstring).

    Raises:
      Unsupported: an opcode or custom call without a model here.
    """
    handler = self._table.get(inst.opcode)
    if handler is None:
      raise Unsupported("no numpy model of this opcode")
    value = handler(comp, inst, operands, scope)
    if isinstance(value, np.generic):
      value = np.asarray(value)
    if isinstance(value, np.ndarray) and not inst.shape.is_tuple:
      dtype = self._dtype(inst)
      if value.dtype != dtype:
        value = value.astype(dtype)
    return value

  def _collective(self, method: str):
    def run(comp, inst, operands, scope):
      collectives = self.interp.collectives
      if collectives is None:
        raise Unsupported("a collective outside a per-device run")
      value = getattr(collectives, method)(inst, list(operands))
      if inst.opcode.endswith("-start") and inst.shape.is_tuple:
        return (operands[0], value)  # (operand, result) of an async start
      return value

    return run

  # --- helpers -----------------------------------------------------------

  def _dtype(self, inst: HloInstruction) -> np.dtype:
    return compute_dtype(inst.shape.dtype, self.widen)

  def _operand(self, comp, inst: HloInstruction, i: int):
    names = self._by_name.get(comp.name)
    if names is None:
      names = self._by_name[comp.name] = comp.by_name()
    return names[inst.operands[i]]

  # --- arrays and elementwise -------------------------------------------

  def _constant(self, comp, inst, operands, scope):
    dtype = numpy_dtype(inst.shape.dtype)
    return parse_literal(inst.literal or "", dtype, tuple(inst.shape.dims))

  def _iota(self, comp, inst, operands, scope):
    dim = int(inst.attrs.get("iota_dimension", "0"))
    return shape_ops.iota(tuple(inst.shape.dims), dim, self._dtype(inst))

  def _unary(self, comp, inst, operands, scope):
    return elementwise.unary(inst.opcode, operands[0], self._dtype(inst))

  def _binary(self, comp, inst, operands, scope):
    a, b = operands
    return elementwise.binary(inst.opcode, a, b, self._dtype(inst))

  def _compare(self, comp, inst, operands, scope):
    direction = inst.attrs.get("direction", "")
    total = (
      inst.attrs.get("type") == "TOTALORDER"
      or inst.attrs.get("order") == "TOTAL"
    )
    return elementwise.compare(direction, operands[0], operands[1], total)

  def _select(self, comp, inst, operands, scope):
    pred, a, b = operands
    return np.where(pred, a, b)

  def _clamp(self, comp, inst, operands, scope):
    lo, x, hi = operands
    return np.minimum(np.maximum(x, lo), hi)

  def _convert(self, comp, inst, operands, scope):
    return elementwise.convert(operands[0], self._dtype(inst))

  def _bitcast_convert(self, comp, inst, operands, scope):
    source = numpy_dtype(self._operand(comp, inst, 0).shape.dtype)
    target = numpy_dtype(inst.shape.dtype)
    x = elementwise.convert(operands[0], source)
    return elementwise.bitcast_convert(x, target, tuple(inst.shape.dims))

  def _reduce_precision(self, comp, inst, operands, scope):
    if self.widen:
      return operands[0]
    return elementwise.reduce_precision(
      operands[0],
      int(inst.attrs["exponent_bits"]),
      int(inst.attrs["mantissa_bits"]),
    )

  def _broadcast(self, comp, inst, operands, scope):
    dims = inst.dims_attr("dimensions")
    return shape_ops.broadcast(operands[0], dims, tuple(inst.shape.dims))

  def _bitcast(self, comp, inst, operands, scope):
    source = self._operand(comp, inst, 0).shape
    x = operands[0]
    if source.dtype != inst.shape.dtype:
      if self.widen:
        raise Unsupported("a bitcast between element types under widen")
      x = np.ascontiguousarray(x).view(numpy_dtype(inst.shape.dtype))
      x = x.reshape(tuple(source.dims))
    return shape_ops.bitcast(x, source.layout, inst.shape)

  # --- reductions --------------------------------------------------------

  def _applier(self, inst: HloInstruction, scope):
    """Runs `inst`'s called computation on arrays (a combiner or a
    comparator applied elementwise)."""
    name = inst.called_computations[0]
    sub = type(scope)(vectorized=True)
    return lambda args: self.interp.computation(name, args, sub)

  def _reducer(self, inst: HloInstruction):
    name = inst.called_computations[0]
    return reductions.fast_reducer(self.interp.module.computations.get(name))

  def _reduce(self, comp, inst, operands, scope):
    value = reductions.reduce(
      inst, list(operands), self._reducer(inst), self._applier(inst, scope)
    )
    if not isinstance(value, tuple):
      return value
    return tuple(
      a.astype(compute_dtype(e.dtype, self.widen))
      for a, e in zip(value, inst.shape.elements)
    )

  def _reduce_window(self, comp, inst, operands, scope):
    return reductions.reduce_window(
      inst, list(operands), self._reducer(inst), self._applier(inst, scope)
    )

  # --- contractions ------------------------------------------------------

  def _dot(self, comp, inst, operands, scope):
    dims = contraction.DotDims(
      lhs_batch=inst.dims_attr("lhs_batch_dims"),
      rhs_batch=inst.dims_attr("rhs_batch_dims"),
      lhs_contracting=inst.dims_attr("lhs_contracting_dims"),
      rhs_contracting=inst.dims_attr("rhs_contracting_dims"),
    )
    algorithm = self.interp.algorithm_for(inst, scope)
    a, b = operands
    value = contraction.contract(a, b, dims, algorithm, scope.tf32_mode)
    if value.dtype.kind in "iu":
      algorithm = "integer"
    self.interp.record_gemm(comp, inst, scope.gemm_kind, algorithm, scope)
    return value

  def _convolution(self, comp, inst, operands, scope):
    algorithm = self.interp.algorithm_for(inst, scope)
    x, w = operands
    value = conv.convolution(inst, x, w, algorithm, scope.tf32_mode)
    self.interp.record_gemm(comp, inst, "convolution", algorithm, scope)
    return value

  def _cudnn_conv(self, comp, inst, operands, scope, target):
    element = inst.shape.elements[0] if inst.shape.is_tuple else inst.shape
    algorithm = self.interp.algorithm_for(inst, scope)
    value, (scale, side) = conv.cudnn_conv(
      inst,
      target,
      list(operands),
      algorithm,
      compute_dtype(element.dtype, self.widen),
    )
    config = conv.conv_scales(inst)
    self.interp.record_gemm(
      comp,
      inst,
      "cudnn conv",
      algorithm,
      scope,
      alpha=scale,
      beta=side,
      epilogue=str(config.get("activation_mode", "kNone")),
      has_bias=target.endswith("BiasActivationForward") and len(operands) > 2,
    )
    return value

  def _custom_call(self, comp, inst, operands, scope):
    target = target_of(inst)
    if target in conv.CONV_TARGETS:
      return self._cudnn_conv(comp, inst, operands, scope, target)
    if target in _IDENTITY_CALLS and len(operands) == 1:
      return operands[0]
    if target not in blas.GEMM_TARGETS:
      raise Unsupported("no numpy model of this custom call", target)
    layouts = [
      self._operand(comp, inst, i).shape.layout for i in range(len(operands))
    ]
    element = inst.shape.elements[0] if inst.shape.is_tuple else inst.shape
    algorithm = self.interp.algorithm_for(inst, scope)
    value, fields, has_bias = blas.run_gemm(
      inst,
      target,
      list(operands),
      layouts,
      compute_dtype(element.dtype, self.widen),
      algorithm,
    )
    self.interp.record_gemm(
      comp,
      inst,
      target,
      algorithm,
      scope,
      alpha=fields.alpha,
      beta=fields.beta,
      epilogue=fields.epilogue,
      has_bias=has_bias,
    )
    return value

  # --- calls and control flow -------------------------------------------

  def _fusion(self, comp, inst, operands, scope):
    inner = self.interp.fusion_scope(inst, scope)
    return self.interp.computation(inst.called_computations[0], operands, inner)

  def _call(self, comp, inst, operands, scope):
    return self.interp.computation(inst.called_computations[0], operands, scope)

  def _async_start(self, comp, inst, operands, scope):
    """`async-start` runs its computation at once: ((operands), result,
    context), the tuple `async-done` takes element 1 of."""
    result = self._call(comp, inst, operands, scope)
    return (tuple(operands), result, np.zeros((), np.uint32))

  def _fusion_start(self, comp, inst, operands, scope):
    """`fusion-start`: an async fusion (its `calls` the fused computation,
    its result ((operands), fusion result, context), as `async-start`'s),
    run at once; `fusion-done` takes element 1. XLA:GPU makes one of a
    while body's dynamic-slice fusions (seen on jaxlib 0.12.0.1, a100: a
    `lax.scan`'s `fused_dynamic_slice`)."""
    result = self._fusion(comp, inst, operands, scope)
    return (tuple(operands), result, np.zeros((), np.uint32))

  def _map(self, comp, inst, operands, scope):
    sub = type(scope)(vectorized=True)
    return self.interp.computation(inst.called_computations[0], operands, sub)

  def _conditional(self, comp, inst, operands, scope):
    branches = inst.called_computations
    if "branch_computations" not in inst.attrs:
      branches = (
        inst.attrs["true_computation"].lstrip("%"),
        inst.attrs["false_computation"].lstrip("%"),
      )
    selector = np.asarray(operands[0]).reshape(())
    if selector.dtype == np.bool_:
      index = 0 if bool(selector) else 1
    else:
      index = int(selector)
      if not 0 <= index < len(branches):
        index = len(branches) - 1
    return self.interp.computation(
      branches[index], [operands[1 + index]], type(scope)()
    )
