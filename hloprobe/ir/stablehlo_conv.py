"""A `stablehlo.convolution`'s dimension numbers, window and groups.

Read with the stablehlo dialect's accessors (`ConvDimensionNumbers`) and
MLIR's attribute classes, through jaxlib's bindings (jaxlib 0.10.2 and
0.12.0.1); `stablehlo.parse_stablehlo_dots` puts the `ConvWindow` on a
convolution site.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

import dataclasses

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from hloprobe.ir.mlir_context import cast_or_none

__all__ = ["ConvWindow", "conv_window"]


@dataclasses.dataclass(frozen=True, slots=True)
class ConvWindow:
  """A `stablehlo.convolution`'s dimension numbers, window and groups.

  Attributes:
    input_batch, input_feature: the lhs (input) batch and feature dims.
    input_spatial: the lhs spatial dims, in window order.
    kernel_input_feature, kernel_output_feature: the rhs (kernel) feature
      dims (the input feature dim has C / feature_group_count elements).
    kernel_spatial: the rhs spatial dims, in window order.
    output_batch, output_feature: the result's batch and feature dims.
    output_spatial: the result's spatial dims.
    strides, lhs_dilation, rhs_dilation: per spatial dim (1 when absent).
    padding: per spatial dim, (low, high) (0 when absent).
    feature_group_count, batch_group_count: as in StableHLO (1: none).
  """

  input_batch: int
  input_feature: int
  input_spatial: tuple[int, ...]
  kernel_input_feature: int
  kernel_output_feature: int
  kernel_spatial: tuple[int, ...]
  output_batch: int
  output_feature: int
  output_spatial: tuple[int, ...]
  strides: tuple[int, ...]
  padding: tuple[tuple[int, int], ...]
  lhs_dilation: tuple[int, ...]
  rhs_dilation: tuple[int, ...]
  feature_group_count: int
  batch_group_count: int


def _ints(op: ir.Operation, key: str, n: int, default: int) -> tuple:
  """A dense i64 array attribute (`window_strides`, ...), or n defaults."""
  if key not in op.attributes:
    return (default,) * n
  attr = op.attributes[key]
  if dense := cast_or_none(ir.DenseI64ArrayAttr, attr):
    return tuple(dense)
  return tuple(int(v) for v in ir.DenseIntElementsAttr(attr))


def conv_window(op: ir.Operation) -> ConvWindow:
  """A `stablehlo.convolution`'s `ConvWindow`, from its attributes."""
  d = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
  spatial = len(d.input_spatial_dimensions)
  pads = _ints(op, "padding", 2 * spatial, 0)
  return ConvWindow(
    input_batch=d.input_batch_dimension,
    input_feature=d.input_feature_dimension,
    input_spatial=tuple(d.input_spatial_dimensions),
    kernel_input_feature=d.kernel_input_feature_dimension,
    kernel_output_feature=d.kernel_output_feature_dimension,
    kernel_spatial=tuple(d.kernel_spatial_dimensions),
    output_batch=d.output_batch_dimension,
    output_feature=d.output_feature_dimension,
    output_spatial=tuple(d.output_spatial_dimensions),
    strides=_ints(op, "window_strides", spatial, 1),
    padding=tuple(zip(pads[0::2], pads[1::2])),
    lhs_dilation=_ints(op, "lhs_dilation", spatial, 1),
    rhs_dilation=_ints(op, "rhs_dilation", spatial, 1),
    feature_group_count=int(
      ir.IntegerAttr(op.attributes["feature_group_count"]).value
    ),
    batch_group_count=int(
      ir.IntegerAttr(op.attributes["batch_group_count"]).value
    ),
  )
