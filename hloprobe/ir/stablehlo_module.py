"""A whole StableHLO module from a file: text, bytecode or a portable
artifact, as one text with its name and entry parameters.

Bytecode comes two ways: plain MLIR bytecode (`write_bytecode`, what
`jax.extend.mlir.hlo_to_stablehlo` returns: "ML\\xefR" then "\\rMLIR") and
StableHLO's portable artifact (VHLO, "ML\\xefR" then "\\x01StableHLO_v",
`stablehlo.serialize_portable_artifact`), read back with the bindings'
`stablehlo.deserialize_portable_artifact` (jaxlib 0.10.2 and 0.12.0.1).

XLA's HLO-to-StableHLO translation (`hlo_to_stablehlo`, xla/hlo/translate/
hlo_to_mhlo/hlo_function_importer.cc, `ImportInstructionImpl` for kDot)
writes a dot with one contracting dimension and no batch dimension as the
deprecated `stablehlo.dot`; `dots_as_dot_general` rewrites each one as the
`stablehlo.dot_general` it stands for (lhs contracting its last dimension,
rhs its first: the StableHLO spec's `dot`), keeping its precision config
and location, so that a module read from HLO has the same contraction
sites as the program's own lowering.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

import dataclasses

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from hloprobe.errors import HloParseError
from hloprobe.ir import mlir_context
from hloprobe.ir.stablehlo_site import MLIR_TO_HLO_DTYPE

__all__ = ["StableHloModule", "read_stablehlo_module"]

# The bytecode magic (mlir/Bytecode/BytecodeImplementation.h) and what a
# StableHLO portable artifact's producer string starts with after it.
_MAGIC = b"ML\xefR"
_PORTABLE = b"\x01StableHLO"


@dataclasses.dataclass(frozen=True)
class StableHloModule:
  """A StableHLO module, read and printed again.

  Attributes:
    name: the module's `sym_name` ("" when it has none).
    text: the module printed with its locations (`debug_info`), dots as
      dot_general.
    parameters: `@main`'s arguments: (dims, HLO dtype name), in order.
  """

  name: str
  text: str
  parameters: tuple[tuple[tuple[int, ...], str], ...]


def read_stablehlo_module(source: str | bytes) -> StableHloModule:
  """Reads StableHLO text, MLIR bytecode or a portable artifact.

  Args:
    source: the module's text (str) or bytecode (bytes).

  Returns:
    The module, its name and entry parameters.

  Raises:
    HloParseError: it does not parse or verify (the first diagnostic's
      line:col for text), its name is not UTF-8, has no `main` function,
      or `main` takes an argument that is not a ranked tensor of a known
      element type.
  """
  context = mlir_context.new_context()
  try:
    if isinstance(source, bytes) and source[4:].startswith(_PORTABLE):
      module = stablehlo.deserialize_portable_artifact(context, source)
    else:
      module = ir.Module.parse(source, context)
  except ir.MLIRError as e:
    raise HloParseError(
      f"StableHLO does not parse: {mlir_context.first_diagnostic(e)}"
    ) from None
  except (RuntimeError, ValueError) as e:
    raise HloParseError(f"StableHLO does not parse: {_one_line(e)}") from None
  with context, ir.Location.unknown():
    dots_as_dot_general(module)
    name_attr = module.operation.attributes
    try:
      name = (
        ir.StringAttr(name_attr["sym_name"]).value
        if "sym_name" in name_attr
        else ""
      )
    except RuntimeError:  # nanobind's str() of bytes that are not UTF-8
      raise HloParseError("the module's name is not UTF-8") from None
    parameters = _main_parameters(module)
    text = module.operation.get_asm(enable_debug_info=True)
  return StableHloModule(name, text, parameters)


def _one_line(e: BaseException) -> str:
  lines = str(e).strip().splitlines()
  return " ".join(lines[0].split()) if lines else type(e).__name__


def dots_as_dot_general(module: ir.Module) -> int:
  """Rewrites every `stablehlo.dot` of `module` as a `dot_general`.

  Args:
    module: the module, changed in place; call inside its context.

  Returns:
    How many dots were rewritten.
  """
  dots: list[ir.Operation] = []

  def visit(op):
    if op.name == "stablehlo.dot":
      dots.append(op)
    return ir.WalkResult.ADVANCE

  module.operation.walk(visit)
  for op in dots:
    lhs, rhs = op.operands
    lhs_rank = ir.RankedTensorType(lhs.type).rank
    numbers = stablehlo.DotDimensionNumbers.get(
      lhs_batching_dimensions=[],
      rhs_batching_dimensions=[],
      lhs_contracting_dimensions=[lhs_rank - 1],
      rhs_contracting_dimensions=[0],
    )
    attrs = op.attributes
    precision = (
      attrs["precision_config"] if "precision_config" in attrs else None
    )
    new = stablehlo.DotGeneralOp(
      op.results[0].type,
      lhs,
      rhs,
      numbers,
      precision_config=precision,
      loc=op.location,
      ip=ir.InsertionPoint(op),
    )
    op.results[0].replace_all_uses_with(new.result)
    op.erase()
  return len(dots)


def _main_parameters(
  module: ir.Module,
) -> tuple[tuple[tuple[int, ...], str], ...]:
  """`@main`'s arguments as (dims, HLO dtype name)."""
  for op in module.body.operations:
    if op.operation.name != "func.func":
      continue
    if ir.StringAttr(op.attributes["sym_name"]).value != "main":
      continue
    out = []
    for i, arg in enumerate(op.regions[0].blocks[0].arguments):
      try:
        t = ir.RankedTensorType(arg.type)
      except ValueError:
        raise HloParseError(
          f"@main's argument {i} has type {arg.type}, not a ranked tensor "
          "(tuples and tokens are not supported)"
        ) from None
      element = str(t.element_type)
      if element not in MLIR_TO_HLO_DTYPE:
        raise HloParseError(
          f"@main's argument {i} has element type {element} (not supported)"
        )
      out.append((tuple(t.shape), MLIR_TO_HLO_DTYPE[element]))
    return tuple(out)
  raise HloParseError("the module has no @main function")
