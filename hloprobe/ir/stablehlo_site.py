"""A StableHLO contraction site's record (`StableHloDot`) and what reads
one op's types and source frames into it, shared by the walk
(`stablehlo`) and the cuDNN attention call's site (`stablehlo_attention`),
so neither imports the other. Imports the MLIR bindings jaxlib ships
(0.10.2 and 0.12.0.1), not the JAX runtime.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

import dataclasses
import re

from jaxlib.mlir import ir

from hloprobe.errors import HloParseError
from hloprobe.ir.mlir_context import cast_or_none
from hloprobe.ir.stablehlo_conv import ConvWindow

__all__ = [
  "CONVOLUTION",
  "DOT",
  "MLIR_TO_HLO_DTYPE",
  "StableHloDot",
  "TensorType",
  "file_line",
  "frames",
  "tensor_type",
]

# MLIR element types -> HLO spellings.
MLIR_TO_HLO_DTYPE = {
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
  def algorithm_preset(self) -> str | None:
    """`algorithm` named as a DotAlgorithmPreset, e.g. "TF32_TF32_F32"
    (`precisions.algorithm_from_fields`: the fields as text where no
    preset matches); None where the op states no algorithm."""
    if not self.algorithm:
      return None
    from hloprobe.ir.precisions import algorithm_from_fields

    return algorithm_from_fields(self.algorithm)

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


def tensor_type(t: ir.Type, what: str) -> TensorType:
  """`t` (a static-shaped ranked tensor type) in HLO spelling, e.g.
  tensor<48x2xf32> -> TensorType("f32", (48, 2)).

  Args:
    t: an MLIR type.
    what: which operand or result it is, for the error ("lhs").

  Raises:
    HloParseError: `t` is not a static-shaped ranked tensor, or its
      element type has no HLO name (`MLIR_TO_HLO_DTYPE`).
  """
  ranked = cast_or_none(ir.RankedTensorType, t)
  if ranked is None or not ranked.has_static_shape:
    raise HloParseError(
      f"[hloprobe] {what} of a dot_general has type {t}; expected a "
      "static-shaped tensor, e.g. 'tensor<48x2xf32>'"
    )
  elem = str(ranked.element_type)
  if elem not in MLIR_TO_HLO_DTYPE:
    raise HloParseError(f"[hloprobe] unknown element type {elem!r} in {t}")
  return TensorType(MLIR_TO_HLO_DTYPE[elem], tuple(ranked.shape))


def frames(loc: ir.Location, depth: int = 0) -> tuple[str, ...]:
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
    return frames(n.child_loc, depth + 1)
  if c := cast_or_none(ir.CallSiteLoc, loc):
    return frames(c.callee, depth + 1) + frames(c.caller, depth + 1)
  if fused := cast_or_none(ir.FusedLoc, loc):
    return tuple(f for part in fused.locations for f in frames(part, depth + 1))
  return ()


# `"file":line:col` in a printed location; `callsite(A at B)` prints the
# callee A first, so textual order is innermost first.
_FRAME_RE = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


def _frames_from_text(text: str) -> tuple[str, ...]:
  """`frames` from a location's printed form, for bindings (jaxlib before
  0.5) that expose no location classes to Python."""
  return tuple(
    f"{m[1]}:{m[2]}:{m[3]}"
    for m in _FRAME_RE.finditer(text)
    if m[1] != _PARSER_BUFFER
  )


def file_line(frames: tuple[str, ...]) -> str | None:
  """`file:line` of the innermost frame, or None."""
  return frames[0].rsplit(":", 1)[0] if frames else None
