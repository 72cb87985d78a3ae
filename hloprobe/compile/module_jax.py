"""An unoptimized HLO module as a JAX function: each instruction a `jax.lax`
call, so a module file is a case like any program (see `module_case`).

`module_function(module)` returns `fn(*arguments)`: the entry computation
evaluated with `jax.lax` (one call per instruction, in the printed order,
which is a topological one: xla/hlo/ir/hlo_computation.cc
`MakeInstructionPostOrder`, checked on jaxlib 0.10.2 and 0.12.0.1 dumps).
Its jaxpr has one `dot_general` / `conv_general_dilated` per HLO `dot` /
`convolution`, in the module's order, so every stage built on a jaxpr
(float64 reference, emulation, noise floor, site numbering) and on
lowering (StableHLO, compile for any target, passes, PTX) works on it
unchanged.

Precision: a contraction is emitted with `precision=None` (the module's own
`operand_precision` / `algorithm` dropped), so the sweep's matmul precision
sets it exactly as `jax_default_matmul_precision` would have in the
program (`jax._src.lax.lax.canonicalize_precision`); `preferred_element_type`
is the HLO result type, as jax's own lowering
(`jax._src.lax.lax._dot_general_lower`) writes it.

Source lines: each contraction is called from a frame whose file and line
are the ones `source(index, instruction)` gives (`module_case`: the
dumped program's line from `metadata`, else the module file's own line),
so jax's source info (`jax._src.source_info_util.user_frame`: the
innermost frame outside jax) and hence the site's source line are those.

What is not translated (a `custom-call` other than jax's sharding
annotations, `sort`, `rng`, a scatter or reduce-window of several
operands, a tuple-shaped entry parameter...) is refused up front, one `CaseError` line naming the
instruction and its opcode.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
from jax import dtypes, lax

from hloprobe.compile import module_indexing
from hloprobe.compile.module_contraction import CONTRACTIONS, contraction_call
from hloprobe.errors import CaseError
from hloprobe.execute import numpy_dtype, parse_literal
from hloprobe.ir import HloComputation, HloInstruction, HloModule

__all__ = ["CONTRACTIONS", "contraction_count", "module_function"]

_UNARY = {
  "abs": lax.abs,
  "negate": lax.neg,
  "exponential": lax.exp,
  "exponential-minus-one": lax.expm1,
  "log": lax.log,
  "log-plus-one": lax.log1p,
  "tanh": lax.tanh,
  "logistic": lax.logistic,
  "sqrt": lax.sqrt,
  "rsqrt": lax.rsqrt,
  "cbrt": lax.cbrt,
  "sine": lax.sin,
  "cosine": lax.cos,
  "tan": lax.tan,
  "floor": lax.floor,
  "ceil": lax.ceil,
  "sign": lax.sign,
  "not": lax.bitwise_not,
  "is-finite": lax.is_finite,
  "erf": lax.erf,
  "popcnt": lax.population_count,
  "count-leading-zeros": lax.clz,
  "real": lax.real,
  "imag": lax.imag,
  "copy": lambda x: x,
  "optimization-barrier": lax.optimization_barrier,
  "round-nearest-afz": lambda x: lax.round(
    x, lax.RoundingMethod.AWAY_FROM_ZERO
  ),
  "round-nearest-even": lambda x: lax.round(
    x, lax.RoundingMethod.TO_NEAREST_EVEN
  ),
}
_BINARY = {
  "add": lax.add,
  "subtract": lax.sub,
  "multiply": lax.mul,
  "divide": lax.div,
  "maximum": lax.max,
  "minimum": lax.min,
  "power": lax.pow,
  "remainder": lax.rem,
  "and": lax.bitwise_and,
  "or": lax.bitwise_or,
  "xor": lax.bitwise_xor,
  "shift-left": lax.shift_left,
  "shift-right-logical": lax.shift_right_logical,
  "shift-right-arithmetic": lax.shift_right_arithmetic,
  "atan2": lax.atan2,
}
_COMPARE = {
  "EQ": lax.eq,
  "NE": lax.ne,
  "LT": lax.lt,
  "LE": lax.le,
  "GT": lax.gt,
  "GE": lax.ge,
}
_STRUCTURAL = (
  "parameter",
  "constant",
  "tuple",
  "get-tuple-element",
  "call",
  "while",
  "conditional",
  "reduce",
  "compare",
  "select",
  "clamp",
  "convert",
  "bitcast-convert",
  "broadcast",
  "reshape",
  "transpose",
  "slice",
  "concatenate",
  "iota",
  "pad",
  "reverse",
  "dynamic-slice",
  "dynamic-update-slice",
  "gather",
  "scatter",
  "reduce-window",
  "custom-call",
  *CONTRACTIONS,
)
# Custom calls that are the identity on one device: jax's sharding
# annotations (`jax._src.sharding_impls`: with_sharding_constraint lowers
# to `Sharding`; shard_map to the SPMD shape calls), which XLA's
# ShardingRemover drops without a partitioner (sharding_remover.cc).
_IDENTITY_CALLS = ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape")
KNOWN_OPCODES = frozenset((*_UNARY, *_BINARY, *_STRUCTURAL))
_SLICE_RE = re.compile(r"\[(-?\d+):(-?\d+)(?::(-?\d+))?\]")


def contraction_count(module: HloModule) -> int:
  """How many dots and convolutions the module has (every computation)."""
  return sum(i.opcode in CONTRACTIONS for _, i in module.all_instructions())


def module_function(
  module: HloModule,
  where: str,
  source: Callable[[int, HloInstruction], str | None] = lambda i, inst: None,
) -> Callable:
  """The module's entry computation as a JAX function of its parameters.

  Args:
    module: an unoptimized HLO module (a `before_optimizations` dump, or
      the HLO of a StableHLO module).
    where: the file it came from, for error messages.
    source: `file:line` of the contraction traced `index`-th (0, 1, ...
      in one trace: program order, a loop body's once), or None for none.

  Returns:
    `fn(*arguments)`: one array per entry parameter, in parameter order;
    returns an array for an array-shaped root, a tuple of arrays for a
    tuple root.

  Raises:
    CaseError: an instruction this translation has no `jax.lax` call for,
      or a tuple-shaped entry parameter (one line naming it).
  """
  for comp, inst in module.all_instructions():
    target = inst.attrs.get("custom_call_target", "").strip('"')
    if inst.opcode not in KNOWN_OPCODES or (
      inst.opcode == "custom-call" and target not in _IDENTITY_CALLS
    ):
      raise CaseError(
        f"module {where!r}: instruction {inst.name} in {comp.name}: "
        f"opcode {inst.opcode!r} is not translated to jax.lax by hloprobe"
        f"{_target_note(inst)}; known: dots, convolutions, elementwise, "
        "shape, reduce and control-flow opcodes"
      )
  for number, param in module.entry.parameters().items():
    if param.shape.is_tuple:
      raise CaseError(
        f"module {where!r}: entry parameter {number} ({param.name}) is a "
        "tuple; give a module whose parameters are arrays"
      )
  translator = _Translator(module, where, source)

  def fn(*arguments):
    translator.traced = 0
    return translator.run(module.entry, arguments)

  fn.__name__ = module.name
  return fn


def _target_note(inst: HloInstruction) -> str:
  target = inst.attrs.get("custom_call_target")
  return f" (custom_call_target={target})" if target else ""


class _Translator:
  """Evaluates computations of one module with `jax.lax`, under a trace."""

  def __init__(self, module: HloModule, where: str, source: Callable):
    self._module = module
    self._where = where
    self._source = source
    self._frames: dict[tuple[str, int], Callable] = {}
    self.traced = 0  # contractions traced so far in this trace

  def run(self, comp: HloComputation, arguments: Sequence):
    params = comp.parameters()
    if len(arguments) != len(params):
      raise CaseError(
        f"module {self._where!r}: {comp.name} takes {len(params)} "
        f"arguments, got {len(arguments)}"
      )
    env: dict[str, object] = {}
    for inst in comp.instructions:
      operands = [env[o] for o in inst.operands]
      if inst.opcode == "parameter":
        env[inst.name] = arguments[inst.parameter_number]
      else:
        env[inst.name] = self._checked(inst, self._one(inst, operands))
    return env[comp.root.name]

  def _checked(self, inst: HloInstruction, value):
    """`value`, once its shape is the instruction's (a translation that
    gets one wrong fails here, naming it, not somewhere downstream)."""
    if not inst.shape.is_tuple and np.shape(value) != tuple(inst.shape.dims):
      raise CaseError(
        f"module {self._where!r}: {inst.opcode} {inst.name} translated to "
        f"shape {list(np.shape(value))}, not its {list(inst.shape.dims)}"
      )
    return value

  def _called(self, name: str) -> Callable:
    comp = self._module.computations[name.lstrip("%")]
    return lambda *args: self.run(comp, args)

  def _one(self, inst: HloInstruction, ops: list):
    op = inst.opcode
    if op in _UNARY:
      return _UNARY[op](ops[0])
    if op in _BINARY:
      return _BINARY[op](ops[0], ops[1])
    if op in CONTRACTIONS:
      call, args, kwargs = contraction_call(inst, ops)
      return self._at_source(inst, call, args, kwargs)
    return getattr(self, "_" + op.replace("-", "_"))(inst, ops)

  def _at_source(self, inst: HloInstruction, fn: Callable, args, kwargs):
    """`fn(*args, **kwargs)` called from a frame at the instruction's
    source line (a one-line function compiled under that file name and
    line: nothing of the file is read or run)."""
    where = self._source(self.traced, inst)
    self.traced += 1
    file, _, line = (where or "").rpartition(":")
    if not file or not line.isdigit() or int(line) < 1:
      return fn(*args, **kwargs)
    key = (file, int(line))
    if key not in self._frames:
      text = "\n" * (key[1] - 1) + "def site(f, a, k): return f(*a, **k)\n"
      scope: dict = {}
      exec(compile(text, file, "exec"), scope)  # noqa: S102 (a blank frame)
      self._frames[key] = scope["site"]
    return self._frames[key](fn, args, kwargs)

  # Structure.
  def _constant(self, inst, ops):
    dtype = numpy_dtype(inst.shape.dtype)
    try:
      return parse_literal(inst.literal or "", dtype, inst.shape.dims)
    except Exception as e:  # the executor's Unsupported: one line
      raise CaseError(
        f"module {self._where!r}: constant {inst.name}: {e}; dump with "
        "--xla_dump_large_constants to keep large constants"
      ) from None

  def _tuple(self, inst, ops):
    return tuple(ops)

  def _get_tuple_element(self, inst, ops):
    return ops[0][int(inst.attrs["index"])]

  def _call(self, inst, ops):
    return self._called(inst.attrs["to_apply"])(*ops)

  def _while(self, inst, ops):
    cond, body = (
      self._called(inst.attrs["condition"]),
      self._called(inst.attrs["body"]),
    )
    return lax.while_loop(lambda s: cond(s), lambda s: body(s), ops[0])

  def _conditional(self, inst, ops):
    if "branch_computations" in inst.attrs:
      names = inst.called_computations
      index = ops[0]
    else:
      names = (inst.attrs["false_computation"], inst.attrs["true_computation"])
      index = lax.convert_element_type(ops[0], np.int32)
    branches = [
      (lambda args, f=self._called(n), i=i: f(args[i]))
      for i, n in enumerate(names)
    ]
    return lax.switch(index, branches, tuple(ops[1:]))

  def _reduce(self, inst, ops):
    half = len(ops) // 2
    comp = self._module.computations[inst.attrs["to_apply"].lstrip("%")]
    dims = inst.dims_attr("dimensions")
    monoid = _monoid(comp)
    if half == 1 and monoid is not None:
      return lax.reduce(ops[0], ops[1], monoid, dims)
    f = self._called(comp.name)
    if half == 1:
      return lax.reduce(ops[0], ops[1], f, dims)
    return tuple(
      lax.reduce(
        tuple(ops[:half]), tuple(ops[half:]), lambda a, b: f(*a, *b), dims
      )
    )

  # Elementwise with attributes.
  def _compare(self, inst, ops):
    return _COMPARE[inst.attrs["direction"]](ops[0], ops[1])

  def _select(self, inst, ops):
    return lax.select(*ops)

  def _clamp(self, inst, ops):
    return lax.clamp(*ops)

  def _convert(self, inst, ops):
    return lax.convert_element_type(ops[0], numpy_dtype(inst.shape.dtype))

  def _bitcast_convert(self, inst, ops):
    return lax.bitcast_convert_type(ops[0], numpy_dtype(inst.shape.dtype))

  # Shapes.
  def _broadcast(self, inst, ops):
    return lax.broadcast_in_dim(
      ops[0], inst.shape.dims, inst.dims_attr("dimensions")
    )

  def _reshape(self, inst, ops):
    return lax.reshape(ops[0], inst.shape.dims)

  def _transpose(self, inst, ops):
    return lax.transpose(ops[0], inst.dims_attr("dimensions"))

  def _slice(self, inst, ops):
    parts = _SLICE_RE.findall(inst.attrs.get("slice", ""))
    return lax.slice(
      ops[0],
      [int(a) for a, _, _ in parts],
      [int(b) for _, b, _ in parts],
      [int(c or 1) for _, _, c in parts],
    )

  def _concatenate(self, inst, ops):
    return lax.concatenate(ops, inst.dims_attr("dimensions")[0])

  def _iota(self, inst, ops):
    # Without x64 a 64-bit integer iota (jax.random's x32 lowering has a
    # u64 one) is 32 bits, as jax makes it: the same values, no warning.
    return lax.broadcasted_iota(
      dtypes.canonicalize_dtype(numpy_dtype(inst.shape.dtype)),
      inst.shape.dims,
      int(inst.attrs["iota_dimension"]),
    )

  def _pad(self, inst, ops):
    config = [
      tuple(int(v) for v in (d.split("_") + ["0"])[:3])
      for d in inst.attrs.get("padding", "").split("x")
      if d
    ]
    return lax.pad(ops[0], ops[1], config)

  def _reverse(self, inst, ops):
    return lax.rev(ops[0], inst.dims_attr("dimensions"))

  def _dynamic_slice(self, inst, ops):
    return lax.dynamic_slice(
      ops[0], ops[1:], inst.dims_attr("dynamic_slice_sizes")
    )

  def _dynamic_update_slice(self, inst, ops):
    return lax.dynamic_update_slice(ops[0], ops[1], ops[2:])

  def _custom_call(self, inst, ops):  # an `_IDENTITY_CALLS` one
    return ops[0]

  def _gather(self, inst, ops):
    return module_indexing.gather(inst, ops)

  def _scatter(self, inst, ops):
    comp = self._module.computations[inst.attrs["to_apply"].lstrip("%")]
    return module_indexing.scatter(inst, ops, _scatter_kind(comp))

  def _reduce_window(self, inst, ops):
    comp = self._module.computations[inst.attrs["to_apply"].lstrip("%")]
    monoid = _monoid(comp)
    return module_indexing.reduce_window(
      inst, ops, monoid or self._called(comp.name)
    )


def _scatter_kind(comp: HloComputation) -> str:
  """A scatter's update computation as `module_indexing.scatter` names it:
  "replace" (returns its second parameter, the update), or the binary
  opcode of its two parameters ("add", "multiply", "maximum", "minimum")."""
  root, params = comp.root, comp.parameters()
  if len(params) == 2 and root.name == params[1].name:
    return "replace"
  monoid = _monoid(comp)
  return root.opcode if monoid is not None else f"computation {comp.name}"


def _monoid(comp: HloComputation) -> Callable | None:
  """`lax.add` (etc.) when `comp` is one binary op of its two parameters,
  so that `lax.reduce` gives jax's own reduce_sum/max/... primitive, as
  `jnp.sum` does (`jax._src.lax.lax._get_monoid_reducer`)."""
  root = comp.root
  params = comp.parameters()
  if len(params) != 2 or root.opcode not in _BINARY:
    return None
  if set(root.operands) != {params[0].name, params[1].name}:
    return None
  if root.opcode not in ("add", "multiply", "maximum", "minimum", "and", "or"):
    return None
  return _BINARY[root.opcode]
