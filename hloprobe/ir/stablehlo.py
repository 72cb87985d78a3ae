"""Contraction sites of a StableHLO module, read from its MLIR text.

Takes the text of `Lowered.as_text(debug_info=True)` (jax 0.10.2 and 0.12.0.1)
and lists every `stablehlo.dot_general`, `stablehlo.convolution` (any
dimension numbers, feature and batch groups, strides, padding, dilations) and
cuDNN fused attention call (`stablehlo_attention`), the contractions XLA may
give an algorithm, as `StableHloDot`s in program order, numbered together,
once per call path (a private function called twice gives two sites, as XLA
inlines calls before optimizing). Each site carries the entry-function
arguments each operand depends on (its *ancestry*), which survives XLA's
rewrites and so lets `dot_sites` find the site again in the optimized HLO.

The text is read by MLIR's own parser and verifier, through the Python
bindings jaxlib ships (`mlir_context`), so every printing form MLIR accepts is
read, attributes come from the stablehlo dialect's accessors
(`DotDimensionNumbers`, `ConvDimensionNumbers`, `PrecisionAttr`,
`DotAlgorithm`), and malformed text is one `HloParseError`. Imports the MLIR
bindings, not the JAX runtime.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

from collections.abc import Iterable

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from hloprobe.errors import HloParseError
from hloprobe.ir.mlir_context import (
  parse_mlir_attribute,
  parse_mlir_module,
)
from hloprobe.ir.stablehlo_attention import attention_site
from hloprobe.ir.stablehlo_conv import ConvWindow, conv_window
from hloprobe.ir.stablehlo_site import (
  CONVOLUTION,
  DOT,
  StableHloDot,
  TensorType,
)
from hloprobe.ir.stablehlo_site import file_line as _file_line
from hloprobe.ir.stablehlo_site import frames as _frames
from hloprobe.ir.stablehlo_site import tensor_type as _tensor_type

__all__ = [
  "CONVOLUTION",
  "ConvWindow",
  "DOT",
  "StableHloDot",
  "TensorType",
  "parse_precision_config",
  "parse_stablehlo_dots",
]

# Call paths deeper than this are taken for recursion (MLIR allows it, XLA
# cannot inline it).
_MAX_CALL_DEPTH = 32
_NONE: frozenset[int] = frozenset()


def _algorithm_fields(attr: ir.Attribute) -> dict[str, str]:
  """The `algorithm = <...>` fields, as StableHLO prints them."""
  a = stablehlo.DotAlgorithm(attr)
  return {
    "lhs_precision_type": str(a.lhs_precision_type),
    "rhs_precision_type": str(a.rhs_precision_type),
    "accumulation_type": str(a.accumulation_type),
    "lhs_component_count": str(a.lhs_component_count),
    "rhs_component_count": str(a.rhs_component_count),
    "num_primitive_operations": str(a.num_primitive_operations),
    "allow_imprecise_accumulation": str(a.allow_imprecise_accumulation).lower(),
  }


def _precision(op: ir.Operation) -> tuple[str, str]:
  """The two operand precisions; absent means DEFAULT for both."""
  if "precision_config" not in op.attributes:
    return ("DEFAULT", "DEFAULT")
  return _precision_values(op.attributes["precision_config"])


def _precision_values(config: ir.Attribute) -> tuple[str, str]:
  """A `precision_config` array's two values; other lengths are DEFAULT."""
  values = [stablehlo.PrecisionAttr(a).value for a in ir.ArrayAttr(config)]
  return (values[0], values[1]) if len(values) == 2 else ("DEFAULT", "DEFAULT")


def parse_precision_config(text: str | None) -> tuple[str, str]:
  """A dot_general's `precision_config` from its printed attribute.

  For tools that show an op's attributes as text (Model Explorer's MLIR
  adapter). Read with the same accessor as `parse_stablehlo_dots`.

  Args:
    text: e.g. "[#stablehlo<precision HIGH>, #stablehlo<precision
      HIGHEST>]"; None or "" when the op has none.

  Returns:
    The two operand precisions, e.g. ("HIGH", "HIGHEST"); ("DEFAULT",
    "DEFAULT") when absent, as for `StableHloDot.precision`.

  Raises:
    HloParseError: the text is not an array of stablehlo precisions.
  """
  if not text:
    return ("DEFAULT", "DEFAULT")
  try:
    return _precision_values(parse_mlir_attribute(text))
  except ValueError as e:  # not an array, or not precision attributes
    raise HloParseError(
      f"[hloprobe] {text!r} is no precision_config: {e}"
    ) from None


def _union(ancestries: Iterable[frozenset[int]]) -> frozenset[int]:
  return frozenset().union(*ancestries)


def _symbol(op: ir.Operation, key: str) -> str:
  attr = op.attributes[key]
  return attr.value


class _Walker:
  """Walks functions per call path, tracking each value's ancestry."""

  def __init__(self, functions: dict[str, ir.Operation]):
    self.functions = functions
    self.dots: list[StableHloDot] = []

  def walk(
    self, name: str, args: list[frozenset[int]], depth: int = 0
  ) -> frozenset[int]:
    """Walks @name with argument ancestries `args`; returns what it returns."""
    if depth > _MAX_CALL_DEPTH:
      raise HloParseError(
        f"[hloprobe] call depth over {_MAX_CALL_DEPTH} at @{name}"
      )
    fn = self.functions.get(name)
    if fn is None:
      raise HloParseError(f"[hloprobe] call to undefined function @{name}")
    if not fn.regions[0].blocks:
      raise HloParseError(f"[hloprobe] function @{name} has no body")
    block = fn.regions[0].blocks[0]
    env = dict(zip(block.arguments, args))
    return self._block(name, block, env, depth)

  def _block(self, fn: str, block: ir.Block, env: dict, depth: int):
    """Walks a block's ops in order; returns its terminator's ancestry."""
    returned = _NONE
    for view in block.operations:
      op = view.operation
      anc = _union(env.get(v, _NONE) for v in op.operands)
      if op.name == "func.call":
        anc = self.walk(
          _symbol(op, "callee"),
          [env.get(v, _NONE) for v in op.operands],
          depth + 1,
        )
      elif op.name == "stablehlo.dot_general":
        self._dot(fn, op, env)
      elif op.name == "stablehlo.convolution":
        self._convolution(fn, op, env)
      elif site := attention_site(len(self.dots), fn, op, env):
        self.dots.append(site)
      elif op.name in ("func.return", "stablehlo.return"):
        returned |= anc
      anc |= self._regions(fn, op, env, depth)
      for result in op.results:
        env[result] = anc
    return returned

  def _regions(self, fn: str, op: ir.Operation, env: dict, depth: int):
    """Walks the regions of `op` (while, case, ...); returns what they return.

    A region's block argument i carries operand i when the counts match
    (stablehlo.while's loop-carried values); otherwise every operand.
    """
    operands = [env.get(v, _NONE) for v in op.operands]
    returned = _NONE
    for region in op.regions:
      for block in region.blocks:
        args = list(block.arguments)
        for i, arg in enumerate(args):
          env[arg] = (
            operands[i] if len(args) == len(operands) else _union(operands)
          )
        returned |= self._block(fn, block, env, depth)
    return returned

  def _site(self, fn: str, operation: ir.Operation, env: dict, **fields):
    """Appends the site of a contraction (lhs, rhs: operands 0, 1)."""
    lhs, rhs = operation.operands[0], operation.operands[1]
    self.dots.append(
      StableHloDot(
        index=len(self.dots),
        function=fn,
        location=_file_line(frames := _frames(operation.location)),
        frames=frames,
        lhs=_tensor_type(lhs.type, "lhs"),
        rhs=_tensor_type(rhs.type, "rhs"),
        result=_tensor_type(operation.results[0].type, "result"),
        precision=_precision(operation),
        lhs_ancestry=env.get(lhs, _NONE),
        rhs_ancestry=env.get(rhs, _NONE),
        **fields,
      )
    )

  def _dot(self, fn: str, op: ir.Operation, env: dict) -> None:
    dims = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    algorithm = (
      op.attributes["algorithm"] if "algorithm" in op.attributes else None
    )
    self._site(
      fn,
      op,
      env,
      lhs_batch=tuple(dims.lhs_batching_dimensions),
      rhs_batch=tuple(dims.rhs_batching_dimensions),
      lhs_contracting=tuple(dims.lhs_contracting_dimensions),
      rhs_contracting=tuple(dims.rhs_contracting_dimensions),
      algorithm=_algorithm_fields(algorithm) if algorithm else None,
    )

  def _convolution(self, fn: str, op: ir.Operation, env: dict) -> None:
    window = conv_window(op)
    self._site(
      fn,
      op,
      env,
      lhs_batch=(),
      rhs_batch=(),
      lhs_contracting=(window.input_feature,),
      rhs_contracting=(window.kernel_input_feature,),
      algorithm=None,
      op=CONVOLUTION,
      window=window,
    )


def _functions(module: ir.Module) -> dict[str, ir.Operation]:
  """The module's func.func ops by symbol name."""
  return {
    _symbol(view.operation, "sym_name"): view.operation
    for view in module.body.operations
    if view.operation.name == "func.func"
  }


def parse_stablehlo_dots(text: str) -> list[StableHloDot]:
  """Lists the contraction sites of a StableHLO module in program order.

  Every dot_general and every convolution is a site, numbered together in
  program order (so a program without convolutions is numbered as before).

  Sites inside regions (stablehlo.while bodies, stablehlo.case branches) and
  in called functions (func.call) come where the walk from `@main` reaches
  them, once per call path.

  Args:
    text: MLIR text of the module, ideally with `debug_info=True` so that
      sites carry source locations.

  Returns:
    One `StableHloDot` per dot_general or convolution per call path from
    `@main`.

  Raises:
    HloParseError: the text does not parse or verify as MLIR, has no
      `@main`, calls deeper than 32 functions, or a dot_general has an
      operand that is not a static-shaped tensor of a known element type.
  """
  module = parse_mlir_module(text)
  functions = _functions(module)
  if "main" not in functions:
    raise HloParseError("[hloprobe] StableHLO text has no @main function")
  walker = _Walker(functions)
  main = functions["main"].regions[0].blocks
  n_args = len(main[0].arguments) if main else 0
  walker.walk("main", [frozenset({i}) for i in range(n_args)])
  return walker.dots
