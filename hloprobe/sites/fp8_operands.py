"""Which f8 values a dot site's operands come from, in the optimized HLO.

The walk XLA's GemmRewriter makes from a dot's operand looking for an fp8
gemm (xla/service/gpu/transforms/gemm_rewriter.cc,
`FindF8SubgraphRecursive`, read at openxla/xla 01631ca8): an instruction
of an f8 type ends it; any one-operand instruction (convert, broadcast,
bitcast, copy, reshape, transpose, slice, ...), divide, dynamic-slice and
pad continue through their first operand, multiply through either
operand, select through either value; anything else ends it with nothing.
Here the walk starts at the carrier that computes a site (its dot, its
strength-reduced multiply, its gemm call) and also crosses the kernel
boundaries XLA's fusion passes added after GemmRewriter ran: a fusion
parameter continues at the fusion's operand, a fusion's (or call's)
result at its computation's root. So a scaled f8 matmul is found whether
Triton fused the converts and scale multiplies into its gemm (the h100),
left the converts in fusions of their own (the a100), strength-reduced it
into a multiply (n = 1) or cuBLASLt takes the f8 values (the FP8 call).
Checked on the `fp8_scaled_matmul` compiles of jaxlib 0.10.2 and 0.12.0.1
(tests/testdata/compiles).

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

from hloprobe.ir import HloInstruction, HloModule
from hloprobe.sites.site_fate import MappedSite

__all__ = ["f8_operand_types", "is_f8"]

# Deeper chains than this are not an operand's dequantization.
_MAX_DEPTH = 64
_KERNELS = ("fusion", "call")


def is_f8(dtype: str) -> bool:
  """Any 8-bit float type HLO spells (f8e4m3fn, f8e5m2, f8e4m3fnuz, ...)."""
  return dtype.startswith("f8")


class _Walk:
  """The backward walk of one module (module docstring)."""

  def __init__(self, module: HloModule):
    self.module = module
    self.names = {
      name: {i.name: i for i in comp.instructions}
      for name, comp in module.computations.items()
    }

  def locate(self, carriers: tuple[str, ...]):
    """(carrier instruction, its computation, the (caller, caller's
    computation) stack above it), or None where a name is not found."""
    comp, stack = self.module.entry_name, ()
    for name in carriers[:-1]:
      inst = self.names[comp].get(name)
      if inst is None or not inst.called_computations:
        return None
      stack += ((inst, comp),)
      comp = inst.called_computations[0]
    inst = self.names.get(comp, {}).get(carriers[-1]) if carriers else None
    return None if inst is None else (inst, comp, stack)

  def source(self, comp: str, name: str, stack: tuple, depth: int = 0):
    """The f8 type the value `name` of `comp` comes from, or None."""
    inst = self.names.get(comp, {}).get(name)
    if inst is None or depth > _MAX_DEPTH:
      return None
    if not inst.shape.is_tuple and is_f8(inst.shape.dtype):
      return inst.shape.dtype
    if inst.opcode == "parameter":
      return self._from_caller(inst, stack, depth)
    if inst.opcode in _KERNELS and inst.called_computations:
      called = inst.called_computations[0]
      root = self.module.computations[called].root
      return self.source(called, root.name, (*stack, (inst, comp)), depth + 1)
    for operand in _paths(inst):
      if found := self.source(comp, operand, stack, depth + 1):
        return found
    return None

  def _from_caller(self, param: HloInstruction, stack: tuple, depth: int):
    """A kernel's parameter: where its caller's operand comes from."""
    if not stack:
      return None
    caller, caller_comp = stack[-1]
    n = param.parameter_number
    if caller.opcode not in _KERNELS or n is None or n >= len(caller.operands):
      return None
    return self.source(caller_comp, caller.operands[n], stack[:-1], depth + 1)


def _paths(inst: HloInstruction) -> tuple[str, ...]:
  """The operands `FindF8SubgraphRecursive` continues through."""
  ops = inst.operands
  if inst.opcode == "multiply":
    return ops[:2]
  if inst.opcode == "select":
    return ops[1:3]
  if len(ops) == 1 or inst.opcode in ("divide", "dynamic-slice", "pad"):
    return ops[:1]
  return ()


def f8_operand_types(
  f: MappedSite, module: HloModule
) -> tuple[str | None, str | None]:
  """The f8 type each of the site's two operands comes from, or None.

  Args:
    f: the mapped site (its `carriers`, outermost first).
    module: the optimized HLO it was mapped in.

  Returns:
    (the carrier's operand 0's f8 type, operand 1's) by the walk of the
    module docstring; a site no carrier computes (gone, ambiguous) gives
    its StableHLO operand types where they are f8, else None.
  """
  walk = _Walk(module)
  found = walk.locate(f.carriers)
  if found is None or len(found[0].operands) < 2:
    own = (f.site.lhs.dtype, f.site.rhs.dtype)
    return tuple(t if is_f8(t) else None for t in own)
  inst, comp, stack = found
  return (
    walk.source(comp, inst.operands[0], stack),
    walk.source(comp, inst.operands[1], stack),
  )
