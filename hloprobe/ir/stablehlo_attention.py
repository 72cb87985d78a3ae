"""The contraction site of a cuDNN fused attention `stablehlo.custom_call`.

A `@__cudnn$fmha...` call (`hloprobe.ir.fused_attention`) is one site:
lhs q, rhs k, the dims of q k^T read from its `backend_config` JSON, no
precision config (the call states none: DEFAULT), and `op` the call's
target. `stablehlo.parse_stablehlo_dots`' walk numbers it with the dots
and convolutions; read with jaxlib's MLIR bindings (jaxlib 0.10.2 and
0.12.0.1).

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

import json

from jaxlib.mlir import ir

from hloprobe.errors import HloParseError
from hloprobe.ir.fused_attention import attention_dims, is_attention_target
from hloprobe.ir.mlir_context import cast_or_none
from hloprobe.ir.stablehlo_site import (
  StableHloDot,
  file_line,
  frames,
  tensor_type,
)

__all__ = ["attention_site"]


def _call_target(op: ir.Operation) -> str | None:
  """A stablehlo.custom_call's `call_target_name`."""
  if op.name != "stablehlo.custom_call":
    return None
  return ir.StringAttr(op.attributes["call_target_name"]).value


def attention_site(index: int, fn: str, op: ir.Operation, env: dict):
  """The `StableHloDot` of `op` if it is a cuDNN fused attention call.

  Args:
    index: the site's number (the sites found before it).
    fn: the MLIR function holding the op.
    op: any op of the walk.
    env: value -> ancestry (entry arguments it depends on), the walk's.

  Returns:
    The site, or None for any other op.

  Raises:
    HloParseError: the call's backend_config is not JSON or has no
      dimension numbers.
  """
  target = _call_target(op)
  if not is_attention_target(target):
    return None
  config = cast_or_none(ir.StringAttr, op.attributes["backend_config"])
  try:
    dims = attention_dims(json.loads(config.value if config else "{}"), target)
  except ValueError as e:
    raise HloParseError(f"[hloprobe] {target}: backend_config: {e}") from e
  q, k = op.operands[0], op.operands[1]
  stack = frames(op.location)
  return StableHloDot(
    index=index,
    function=fn,
    location=file_line(stack),
    frames=stack,
    lhs=tensor_type(q.type, "lhs"),
    rhs=tensor_type(k.type, "rhs"),
    result=tensor_type(op.results[0].type, "result"),
    lhs_batch=dims[0],
    rhs_batch=dims[1],
    lhs_contracting=dims[2],
    rhs_contracting=dims[3],
    precision=("DEFAULT", "DEFAULT"),
    algorithm=None,
    lhs_ancestry=env.get(q, frozenset()),
    rhs_ancestry=env.get(k, frozenset()),
    op=target,
  )
