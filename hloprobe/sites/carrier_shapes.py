"""A carrier's shape against a dot site's: outputs, K, split or padded.

`identify` matches sites to carriers by data flow first; these say
whether a carrier computes as many outputs over the same K as a site
(`shape_fits`), or one device's share of them in an SPMD-partitioned
module (`fits_on_device`).

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

import math

from hloprobe.ir import HloInstruction, StableHloDot, is_attention_target
from hloprobe.sites.operand_ancestry import (
  CONV_CUSTOM_CALLS,
  Carrier,
  custom_call_target,
)

__all__ = [
  "carrier_k",
  "fits_on_device",
  "is_convolution",
  "result_elements",
  "result_shape",
  "shape_fits",
]


def is_convolution(inst: HloInstruction) -> bool:
  """An HLO convolution or a cuDNN convolution custom call."""
  return inst.opcode == "convolution" or (
    inst.opcode == "custom-call"
    and custom_call_target(inst) in CONV_CUSTOM_CALLS
  )


def carrier_k(carrier: Carrier) -> int | None:
  """The contraction size a dot or gemm custom call computes, if known."""
  inst = carrier.instruction
  if inst.opcode == "dot":
    dims = inst.dims_attr("lhs_contracting_dims")
  elif is_convolution(inst):
    return None
  elif inst.opcode == "custom-call":
    config = inst.backend_config.get("gemm_backend_config") or {}
    numbers = config.get("dot_dimension_numbers") or {}
    dims = tuple(int(d) for d in numbers.get("lhs_contracting_dimensions", ()))
  else:
    return None
  lhs = carrier.operand_shapes[0] if carrier.operand_shapes else None
  if lhs is None or lhs.is_tuple or any(d >= len(lhs.dims) for d in dims):
    return None
  return math.prod(lhs.dims[d] for d in dims)


def result_shape(carrier: Carrier):
  """The `ir.Shape` of a carrier's result: its instruction's shape, or the
  first element of a tuple one (a cuBLAS custom call returns (result,
  workspace): xla/service/gpu/transforms/gemm_rewriter.cc makes the
  workspace its second element); an empty tuple stays as it is."""
  shape = carrier.instruction.shape
  if shape.is_tuple:  # cuBLAS custom calls return (result, workspace)
    shape = shape.elements[0] if shape.elements else shape
  return shape


def result_elements(carrier: Carrier) -> int:
  """How many elements the carrier's result holds (`result_shape`'s dims
  multiplied; 1 for a scalar or an empty tuple)."""
  return math.prod(result_shape(carrier).dims)


def _device_shares(partitions: int) -> list[tuple[int, int]]:
  """(outputs divisor, K divisor) pairs one device of N may hold: each a
  divisor of N, their product too (a mesh axis shards one dimension)."""
  divisors = [d for d in range(1, partitions + 1) if partitions % d == 0]
  return [
    (a, b) for a in divisors for b in divisors if partitions % (a * b) == 0
  ]


def fits_on_device(
  site: StableHloDot, carrier: Carrier, partitions: int = 1
) -> bool:
  """`shape_fits`, or, in an SPMD-partitioned module of `partitions`
  devices (header `num_partitions=N`, `HloModule.partition_count`), one
  device's share of it: the site's outputs and K each divided by a
  divisor of N (xla/service/spmd/spmd_partitioner.cc gives every device
  the same shard shape; seen on jaxlib 0.12.0.1, the CPU and a100: a
  data-parallel train step's per-device dots hold 1/2 of the batch)."""
  if shape_fits(site, carrier):
    return True
  out, k = math.prod(site.result.dims), site.contracting_size
  return any(
    out % a == 0 and k % b == 0 and shape_fits(site, carrier, out // a, k // b)
    for a, b in _device_shares(partitions)[1:]
  )


def shape_fits(
  site: StableHloDot,
  carrier: Carrier,
  out: int | None = None,
  k: int | None = None,
) -> bool:
  """Whether the carrier computes as many outputs, over the same K, as the site.

  Shapes are compared by element count: XLA flattens a dot's free dimensions
  into one (f32[16,32,1000] x f32[1000,64] becomes a gemm of f32[512,64]),
  so the gemm's shape need not be the site's. A gemm: the site's outputs
  over K, or s times them (split-K into s parts) over K / s each; K may be
  padded with zeros (xla/service/gpu/split_k_gemm_rewriter.cc,
  `MakeSplitKOperand`, pads K to a multiple of split_k, and the gemm fusion
  may pad it to a tile multiple: 1000 becomes 4 x 252 on an A100 and
  8 x 128 on an H100, jaxlib 0.10.2), so s parts cover K with less than K
  of padding. A multiply: K products per output (dot strength reduction), or
  the outputs themselves when K = 1. A convolution site: a convolution (or
  cuDNN convolution call) with as many outputs, or a dot or gemm as above
  (XLA turns a 1x1 convolution into one). `out` and `k`, given, replace
  the site's output count and K (one device's share: `fits_on_device`).
  """
  if out is None:
    out = math.prod(site.result.dims)
  if k is None:
    k = site.contracting_size
  got = result_elements(carrier)
  if site.is_convolution and is_convolution(carrier.instruction):
    return got == out
  if is_attention_target(site.op):  # `_matches` took its own target's calls
    return got == out
  if carrier.instruction.opcode == "multiply":
    return got in (out * k, out) if k > 1 else got == out
  own_k = carrier_k(carrier)
  if own_k is None or own_k == 0:
    return carrier.instruction.opcode == "convolution"
  if out == 0 or got % out:
    return False
  parts = got // out
  return k <= parts * own_k < 2 * k or parts * own_k == k
