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

import dataclasses
import re
from collections.abc import Iterable

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from hloprobe.errors import HloParseError
from hloprobe.ir.mlir_context import (
  cast_or_none,
  parse_mlir_attribute,
  parse_mlir_module,
)
from hloprobe.ir.stablehlo_attention import attention_site
from hloprobe.ir.stablehlo_conv import ConvWindow, conv_window

__all__ = [
  "CONVOLUTION",
  "ConvWindow",
  "DOT",
  "StableHloDot",
  "TensorType",
  "parse_precision_config",
  "parse_stablehlo_dots",
]

# MLIR element types -> HLO spellings.
_MLIR_TO_HLO_DTYPE = {
  "i1": "pred",
  "i8": "s8",
  "i16": "s16",
  "i32": "s32",
  "i64": "s64",
  "ui8": "u8",
  "ui16": "u16",
  "ui32": "u32",
  "ui64": "u64",
  "f16": "f16",
  "bf16": "bf16",
  "f32": "f32",
  "f64": "f64",
  "f8E4M3FN": "f8e4m3fn",
  "f8E5M2": "f8e5m2",
  "complex<f32>": "c64",
  "complex<f64>": "c128",
}
# Call paths deeper than this are taken for recursion (MLIR allows it, XLA
# cannot inline it).
_MAX_CALL_DEPTH = 32
_NONE: frozenset[int] = frozenset()
# The file name MLIR's parser gives the text it parses, as `ir.Module.parse`
# does it (jaxlib 0.10.2): an op printed without `loc(...)` reads back as
# loc("-":line:col), a position in the text, not a source line.
_PARSER_BUFFER = "-"
# `StableHloDot.op`: the two kinds of contraction site.
DOT = "dot_general"
CONVOLUTION = "convolution"


@dataclasses.dataclass(frozen=True, slots=True)
class TensorType:
  """A ranked tensor type in HLO spelling: `f32[48,2]`."""

  dtype: str
  dims: tuple[int, ...]

  def __str__(self) -> str:
    return f"{self.dtype}[{','.join(map(str, self.dims))}]"


@dataclasses.dataclass(frozen=True, slots=True)
class StableHloDot:
  """One contraction site: a `stablehlo.dot_general` or a
  `stablehlo.convolution`, on one call path.

  A convolution is a site like a dot (XLA gives it an algorithm: cuDNN's
  math type, a gemm's for a 1x1 convolution): lhs is its input, rhs its
  kernel; it has no batch dims here, its contracting dims are the input's
  feature dim and the kernel's input feature dim (the window's spatial
  dims are in `window`), and its K (`contracting_size`) counts every
  product one output sums: kernel input features times window elements.

  Attributes:
    index: position in program order, from 0 (dots and convolutions
      numbered together).
    function: the MLIR function holding the op.
    location: `file:line` of the innermost source frame, or None.
    lhs, rhs, result: operand and result types.
    lhs_batch, rhs_batch, lhs_contracting, rhs_contracting: dimension numbers.
    precision: the two operand precisions, e.g. ("HIGH", "HIGH").
    algorithm: the `algorithm = <...>` fields as a dict of str, or None.
    lhs_ancestry, rhs_ancestry: indices of the entry function's arguments
      each operand depends on.
    frames: the source stack, innermost frame first, each `file:line:column`
      (the `loc(callsite(...))` chain); () without debug info.
    op: `DOT`, `CONVOLUTION` or an attention call's target (`__cudnn$fmha`).
    window: a convolution's `ConvWindow`; None for a dot.
  """

  index: int
  function: str
  location: str | None
  lhs: TensorType
  rhs: TensorType
  result: TensorType
  lhs_batch: tuple[int, ...]
  rhs_batch: tuple[int, ...]
  lhs_contracting: tuple[int, ...]
  rhs_contracting: tuple[int, ...]
  precision: tuple[str, str]
  algorithm: dict[str, str] | None
  lhs_ancestry: frozenset[int]
  rhs_ancestry: frozenset[int]
  frames: tuple[str, ...] = ()
  op: str = DOT
  window: ConvWindow | None = None

  @property
  def is_convolution(self) -> bool:
    return self.op == CONVOLUTION

  @property
  def contracting_size(self) -> int:
    """K: the products one output element sums.

    A dot: the product of the contracting dimension sizes. A convolution:
    the kernel's input features times its window elements (padding and
    dilation may make some of them zeros).
    """
    if self.window is not None:
      w = self.window
      k = self.rhs.dims[w.kernel_input_feature]
      for d in w.kernel_spatial:
        k *= self.rhs.dims[d]
      return k
    k = 1
    for d in self.lhs_contracting:
      k *= self.lhs.dims[d]
    return k


def _tensor_type(t: ir.Type, what: str) -> TensorType:
  """`t` (a static-shaped ranked tensor type) in HLO spelling."""
  ranked = cast_or_none(ir.RankedTensorType, t)
  if ranked is None or not ranked.has_static_shape:
    raise HloParseError(
      f"[hloprobe] {what} of a dot_general has type {t}; expected a "
      "static-shaped tensor, e.g. 'tensor<48x2xf32>'"
    )
  elem = str(ranked.element_type)
  if elem not in _MLIR_TO_HLO_DTYPE:
    raise HloParseError(f"[hloprobe] unknown element type {elem!r} in {t}")
  return TensorType(_MLIR_TO_HLO_DTYPE[elem], tuple(ranked.shape))


def _frames(loc: ir.Location, depth: int = 0) -> tuple[str, ...]:
  """The source stack of `loc`, innermost frame first, each `file:line:col`.

  jax (0.10.2, `debug_info=True`) prints an op's location as a NameLoc
  (`"jit(f)/dot_general"(...)`) around a CallSiteLoc chain whose callee is
  the innermost frame; a FusedLoc is read in order. An op printed without a
  location gets the parser's own, in the buffer MLIR names "-": that is no
  source line. () without debug info.
  """
  if depth > 64:
    return ()
  if not hasattr(ir, "FileLineColLoc"):  # older jaxlib bindings (0.4.38)
    return _frames_from_text(str(loc))
  if f := cast_or_none(ir.FileLineColLoc, loc):
    if f.filename == _PARSER_BUFFER:
      return ()
    return (f"{f.filename}:{f.start_line}:{f.start_col}",)
  if n := cast_or_none(ir.NameLoc, loc):
    return _frames(n.child_loc, depth + 1)
  if c := cast_or_none(ir.CallSiteLoc, loc):
    return _frames(c.callee, depth + 1) + _frames(c.caller, depth + 1)
  if fused := cast_or_none(ir.FusedLoc, loc):
    return tuple(
      f for part in fused.locations for f in _frames(part, depth + 1)
    )
  return ()


# `"file":line:col` in a printed location; `callsite(A at B)` prints the
# callee A first, so textual order is innermost first.
_FRAME_RE = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


def _frames_from_text(text: str) -> tuple[str, ...]:
  """`_frames` from a location's printed form, for bindings (jaxlib before
  0.5) that expose no location classes to Python."""
  return tuple(
    f"{m[1]}:{m[2]}:{m[3]}"
    for m in _FRAME_RE.finditer(text)
    if m[1] != _PARSER_BUFFER
  )


def _file_line(frames: tuple[str, ...]) -> str | None:
  """`file:line` of the innermost frame, or None."""
  return frames[0].rsplit(":", 1)[0] if frames else None


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
