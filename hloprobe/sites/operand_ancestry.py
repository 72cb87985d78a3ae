"""Carriers: the optimized-HLO instructions that may compute a dot site.

`find_carriers` walks an optimized module from ENTRY and records every dot,
convolution, multiply, gemm custom call, cuDNN convolution custom call and
cuDNN fused attention call (`ir.is_attention_target`; its operands 0 and 1
are q and k) with the entry parameters each
operand depends on (its ancestry), the data-flow key `dot_sites` matches
StableHLO dot sites by. Checked on jaxlib 0.10.2 and 0.12.0.1.

An operand that is a `concatenate` keeps the ancestry of each of its parts
(`Concatenation`), through the shape-only ops and fusion boundaries between
the concatenate and the dot, so that a dot XLA's `dot-merger` made out of
several sites can be split back into them (`identify`).

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

import dataclasses
import functools
import math

from hloprobe.ir import HloInstruction, HloModule, is_attention_target

__all__ = [
  "CONV_CUSTOM_CALLS",
  "GEMM_CUSTOM_CALLS",
  "Carrier",
  "Concatenation",
  "backend_config_kind",
  "custom_call_target",
  "find_carriers",
  "kernel_emitter",
]

# cuBLAS custom-call targets (xla/service/gpu/cublas_cudnn.cc) -> fate words.
GEMM_CUSTOM_CALLS = {
  "__cublas$gemm": "cuBLAS",
  "__cublas$lt$matmul": "cuBLASLt",
  "__cublas$lt$matmul$f8": "cuBLASLt",
}
# cuDNN convolution custom-call targets (xla/service/gpu/cublas_cudnn.cc:
# kCudnnConvForwardCallTarget, ...BackwardInput..., ...BackwardFilter...,
# ...BiasActivationForward..., ...ForwardGraph...), which XLA's conv
# rewriter (xla/service/gpu/transforms/conv_rewriter.cc) and the fused conv
# rewriter make of an HLO convolution; operands 0 and 1 are the
# convolution's two (input and kernel; a backward call's dy and the other
# one), in the rewritten layout. Seen on jaxlib 0.10.2 and 0.12.0.1 for an
# A100: `__cudnn$convBiasActivationForward` for conv + bias + relu.
CONV_CUSTOM_CALLS = (
  "__cudnn$convForward",
  "__cudnn$convBackwardInput",
  "__cudnn$convBackwardFilter",
  "__cudnn$convBiasActivationForward",
  "__cudnn$convForwardGraph",
)
_WALKED_OPCODES = (
  "fusion",
  "call",
  "while",
  "conditional",
  "async-start",
  "custom-call",
)
# Ops that move or relabel a concatenation's elements without mixing its
# parts: a `Concatenation` passes through them whole. dot-merger's operand
# reaches the merged dot through these (jaxlib 0.12.0.1: a `transpose` of
# a part, a `bitcast` of the dot, the concatenate in its own kInput fusion).
_PASSTHROUGH_OPCODES = ("bitcast", "copy", "reshape", "transpose", "convert")
# The opcodes whose value `_value` makes otherwise than as the union of
# their operands' (called computations walked, tuples, concatenations
# passed through): any other's is that union.
_OWN_VALUE_OPCODES = frozenset(
  (*_WALKED_OPCODES, *_PASSTHROUGH_OPCODES, "tuple", "get-tuple-element")
)


class Concatenation(frozenset):
  """The ancestry of a `concatenate`, with the ancestry of each of its parts.

  As a frozenset it is the union of the parts' entry parameters, so every
  rule that takes an ancestry takes it unchanged.

  Attributes:
    parts: per concatenated operand, in order, the entry parameters it
      depends on; a concatenate of concatenates lists the inner parts.
    part_elements: per part, its element count (int; 0 where the
      computation does not show its shape).
  """

  __slots__ = ("part_elements", "parts")

  def __new__(cls, parts, part_elements):
    self = super().__new__(cls, frozenset().union(*parts))
    self.parts = tuple(frozenset(p) for p in parts)
    self.part_elements = tuple(part_elements)
    return self

  def __reduce__(self):
    return (Concatenation, (self.parts, self.part_elements))


@dataclasses.dataclass(frozen=True, slots=True)
class Carrier:
  """An optimized-HLO instruction that may compute a dot site.

  Attributes:
    instruction: the dot, multiply or custom call.
    computation: name of the computation holding it.
    enclosing: the fusion/call instructions around it, outermost first.
    operand_ancestry: per operand, the entry parameter numbers it depends on
      (a `Concatenation` where the operand is a concatenate).
    operand_shapes: per operand, its shape where the computation shows it.
  """

  instruction: HloInstruction
  computation: str
  enclosing: tuple[HloInstruction, ...]
  operand_ancestry: tuple[frozenset[int], ...]
  operand_shapes: tuple = ()

  @property
  def kernel(self) -> HloInstruction | None:
    """The outermost fusion or custom call around the instruction: its kernel.

    Loops, calls and conditionals around it are control flow, not kernels.
    """
    for inst in self.enclosing:
      if inst.opcode in ("fusion", "custom-call"):
        return inst
    return None

  @property
  def path(self) -> tuple[str, ...]:
    return tuple(i.name for i in self.enclosing) + (self.instruction.name,)


def find_carriers(module: HloModule) -> list[Carrier]:
  """Lists every dot, convolution, multiply and gemm or cuDNN convolution
  custom call, per call path.

  Walks from the ENTRY computation into fusions, calls, while bodies and
  conditionals, binding each computation's parameters to the ancestry of the
  calling instruction's operands, so a computation called twice (XLA GPU
  deduplicates fusions) is seen once per caller. Tuples keep one ancestry
  per element (`tuple`, `get-tuple-element`), so a while body's parameter
  elements are bound to the loop's initial values, as StableHLO's iterArgs
  are (`stablehlo`); a while's or conditional's result depends on
  everything its inputs and bodies do.
  """
  out: list[Carrier] = []
  entry = module.entry
  params = {n: frozenset({n}) for n in entry.parameters()}
  _walk(module, entry.name, params, (), out, 0)
  return out


def _flat(value) -> frozenset[int]:
  """An ancestry (frozenset) or a tuple of them, flattened."""
  if isinstance(value, frozenset):
    return value
  return frozenset().union(*map(_flat, value)) if value else frozenset()


def _walk(module, comp_name, params, enclosing, out, depth):
  """Walks one computation; returns its root's ancestry value."""
  comp = module.computations[comp_name]
  if depth > 32:
    return frozenset()
  env, shapes = {}, {i.name: i.shape for i in comp.instructions}
  for inst in comp.instructions:
    if inst.opcode == "parameter":
      env[inst.name] = params.get(inst.parameter_number, frozenset())
      continue
    ops = [env.get(o, frozenset()) for o in inst.operands]
    if inst.opcode in ("dot", "convolution", "multiply") or (
      inst.opcode == "custom-call"
      and (
        custom_call_target(inst) in GEMM_CUSTOM_CALLS
        or custom_call_target(inst) in CONV_CUSTOM_CALLS
        or is_attention_target(custom_call_target(inst))
      )
    ):
      operand_shapes = tuple(shapes.get(o) for o in inst.operands)
      out.append(
        Carrier(
          inst, comp.name, enclosing, tuple(map(_flat, ops)), operand_shapes
        )
      )
    if inst.opcode == "concatenate":
      env[inst.name] = _concatenation(inst, ops, shapes)
    elif inst.opcode not in _OWN_VALUE_OPCODES:  # `_value`'s last line
      env[inst.name] = _flat(ops)
    else:
      walk = functools.partial(
        _walk_called, module, enclosing + (inst,), out, depth + 1
      )
      env[inst.name] = _value(module, inst, ops, walk)
  return env.get(comp.root.name, frozenset())


def _walk_called(module, enclosing, out, depth, name, binding):
  return _walk(module, name, binding, enclosing, out, depth)


def _concatenation(inst: HloInstruction, ops: list, shapes) -> Concatenation:
  """A concatenate's ancestry, part by part (nested ones spliced in)."""
  parts, sizes = [], []
  for name, value in zip(inst.operands, ops):
    if isinstance(value, Concatenation):
      parts += value.parts
      sizes += value.part_elements
      continue
    shape = shapes.get(name)
    parts.append(_flat(value))
    sizes.append(
      math.prod(shape.dims) if shape is not None and not shape.is_tuple else 0
    )
  return Concatenation(parts, sizes)


def _value(module, inst: HloInstruction, ops: list, walk):
  """The ancestry value of one instruction (walking what it calls)."""
  called = [c for c in inst.called_computations if c in module.computations]
  if (
    inst.opcode in _PASSTHROUGH_OPCODES
    and len(ops) == 1
    and isinstance(ops[0], Concatenation)
  ):
    return ops[0]
  if inst.opcode == "tuple":
    return tuple(ops)
  if inst.opcode == "get-tuple-element":
    index = int(inst.attrs.get("index", "-1"))
    value = ops[0] if ops else frozenset()
    if isinstance(value, tuple) and 0 <= index < len(value):
      return value[index]
    return _flat(value)
  if inst.opcode == "while":
    init = ops[0] if ops else frozenset()
    roots = [walk(c, {0: init}) for c in called]
    return _flat(init) | _flat(roots)
  if inst.opcode == "conditional":
    roots = [
      walk(c, {0: ops[k + 1]}) for k, c in enumerate(called) if k + 1 < len(ops)
    ]
    return _flat(ops) | _flat(roots)
  if inst.opcode in _WALKED_OPCODES and called:
    roots = [walk(c, dict(enumerate(ops))) for c in called]
    if inst.opcode in ("fusion", "call") and len(roots) == 1:
      return roots[0]
    return _flat(ops) | _flat(roots)
  return _flat(ops)


def custom_call_target(inst: HloInstruction) -> str:
  """A custom call's `custom_call_target`, unquoted (e.g.
  "__cublas$lt$matmul"); "" for an instruction without one."""
  return inst.attrs.get("custom_call_target", "").strip('"')


def backend_config_kind(fusion: HloInstruction) -> str | None:
  """A fusion's backend config kind, e.g. "__triton_nested_gemm_fusion".

  GPU prints it as `backend_config={"fusion_backend_config":{"kind":...}}`,
  CPU as `{"fusion_config":{"kind":...}}` (jaxlib 0.10.2 and 0.12.0.1, whose
  CPU dots run in a `__ynn_fusion`); None when the
  instruction is no fusion or prints neither.
  """
  if fusion.opcode != "fusion":
    return None
  config = fusion.backend_config
  fbc = config.get("fusion_backend_config") or config.get("fusion_config") or {}
  return fbc.get("kind")


def kernel_emitter(kernel: HloInstruction) -> str | None:
  """The most specific name of what emits a kernel, as XLA prints it.

  A custom call's `custom_call_target`, else a fusion's backend config kind
  (`backend_config_kind`), else its `kind=` (kLoop, kInput, kOutput,
  kCustom); other instructions are named by their opcode.
  """
  if kernel.opcode == "custom-call":
    return custom_call_target(kernel)
  if kernel.opcode != "fusion":
    return kernel.opcode
  return backend_config_kind(kernel) or kernel.attrs.get("kind")
