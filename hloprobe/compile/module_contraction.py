"""A module's contraction (HLO `dot`, `convolution`) as its `jax.lax` call,
for `module_jax`: `precision=None`, so the sweep's matmul precision
applies (`jax._src.lax.lax.canonicalize_precision`), and
`preferred_element_type` the HLO result type, as jax's own lowering writes
it (`jax._src.lax.lax._dot_general_lower`, `_conv_general_dilated_lower`;
jaxlib 0.10.2 and 0.12.0.1). A convolution's `dim_labels` and `window`
are read as XLA prints them (xla/hlo/ir/hlo_instruction.cc
`ConvolutionDimensionNumbersToString`, xla/window_util.cc `ToString`).

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

from jax import lax

from hloprobe.compile import module_indexing
from hloprobe.execute import numpy_dtype
from hloprobe.ir import HloInstruction

__all__ = ["CONTRACTIONS", "contraction_call"]

# The opcodes whose instructions are sites (a precision applies to them).
CONTRACTIONS = ("dot", "convolution")


def contraction_call(inst: HloInstruction, ops: list):
  """A dot or convolution at `precision=None` (module docstring), as
  (the `jax.lax` function, its positional and keyword arguments)."""
  out = numpy_dtype(inst.shape.dtype)
  if inst.opcode == "dot":
    dims = (
      (
        inst.dims_attr("lhs_contracting_dims"),
        inst.dims_attr("rhs_contracting_dims"),
      ),
      (inst.dims_attr("lhs_batch_dims"), inst.dims_attr("rhs_batch_dims")),
    )
    return (
      lax.dot_general,
      (ops[0], ops[1], dims),
      {"precision": None, "preferred_element_type": out},
    )
  lhs, rhs, outs = _conv_labels(inst)
  window = module_indexing.window(inst.attrs.get("window", ""), len(lhs) - 2)
  return (
    lax.conv_general_dilated,
    (ops[0], ops[1]),
    {
      "window_strides": window["stride"],
      "padding": window["pad"],
      "lhs_dilation": window["lhs_dilate"],
      "rhs_dilation": window["rhs_dilate"],
      "dimension_numbers": lax.ConvDimensionNumbers(lhs, rhs, outs),
      "feature_group_count": int(inst.attrs.get("feature_group_count", 1)),
      "batch_group_count": int(inst.attrs.get("batch_group_count", 1)),
      "precision": None,
      "preferred_element_type": out,
    },
  )


def _conv_labels(inst: HloInstruction):
  """`dim_labels=b01f_01io->b01f` as `ConvDimensionNumbers`' three specs:
  (batch, feature, spatial...) of input and output, (out feature, in
  feature, spatial...) of the kernel."""
  text = inst.attrs.get("dim_labels", "")
  ins, _, outs = text.partition("->")
  lhs, _, rhs = ins.partition("_")

  def spec(labels: str, first: str, second: str) -> tuple[int, ...]:
    spatial = sorted((c, i) for i, c in enumerate(labels) if c.isdigit())
    return (labels.index(first), labels.index(second), *(i for _, i in spatial))

  return spec(lhs, "b", "f"), spec(rhs, "o", "i"), spec(outs, "b", "f")
