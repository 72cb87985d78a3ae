"""Reductions: what decides a row's order of additions in a reduce kernel.

XLA's reduction emitter (kInput fusions; xla/backends/gpu/codegen/
emitters/reduction.cc, `CreateReductionFusion`, with the limits of
xla/service/gpu/reduction_utils.h; the same rules in xla/service/gpu/
fusions/reduction_mlir.cc of older XLA), for the hero reduce's
`ReductionDimensions` (reduction_utils.cc
`GetReductionKindAndContiguousComponents`: the physical dimensions
collapsed to [major reduced, kept, minor reduced] for a row reduction,
whose minor-most dimension is reduced; [major kept, reduced, minor kept]
for a column reduction):

  multi-row (`MultiRowReductionFusion::TryCreate`): a row reduction whose
    minor reduced length L is a power of 2 and fits one warp's vectors
    (L <= 32 * vector size). vector size = min(L, 64 / smallest in/out
    bits), at most 128 / largest bits; then HALVED while the number of
    blocks, ceil(kept / threads_kept), is below the GPU's core count:
    the row count decides it. threads per row = L / vector size, rows per
    warp = 32 / threads per row.
  row (`RowReductionFusion`): threads per row = min(1024
    (`MinThreadsXRowReduction`), round_up(ceil(L / 32), 32)); vector size
    (`GetVectorSizeForMlir`, reduction_base.cc): 1 when L is odd or
    threads * 2 > L, else 2 for >= 32-bit inputs, else 4 where threads * 4
    <= L and 4 divides L; each thread adds its elements (tile
    min(32 / vector, ceil(L / vector / threads)) vectors, strided by the
    threads) in order, then a warp shuffle tree (`ShuffleReduceOp`, 16, 8,
    4, 2, 1) and, with several warps per row, shared memory. None of it
    reads the kept (row) count, which only sets threads_kept (rows per
    block): the order within a row does not depend on the row count.
  column (`ColumnReductionFusion`, `SmallColumnReductionFusion` where 32 is
    a multiple of the minor kept length): 32 x 32 threads (kTileSize) or
    128, vector size from the minor kept length; each column's order
    depends on the reduced length and the minor kept length.

Triton block-level fusions (`__triton`: the softmax rewriter's
`triton_softmax.N`, xla/backends/gpu/transforms/softmax_rewriter_triton.cc,
and normalizations fused by the priority fusion with Triton): the tile
every program computes (`block_level_fusion_config.output_tiles`) and
num_warps are chosen by XLA's tiling cost model from the whole fusion
shape (xla/service/gpu/model/gpu_indexing_performance_model.cc
`GpuPerformanceModelWithIndexingAnalysis::TryFindBestTilingForFusion`),
so they depend on the row count (measured: the a100 softmax over 1000
columns has 2 warps at n = 2 and 8, 4 warps at n = 64, jaxlib 0.12.0.1
and 0.10.2). A reduce's operand tile covers the whole reduced dimension,
padded to a power of 2 (Triton block shapes); Triton distributes it over
num_warps x 32 threads, each adding its elements before a shuffle tree:
the order depends on the padded length and num_warps (and on how many
rows one program holds). The kernel's PTX, normalised for the row count,
is part of the signature, so any other difference shows too.

Checked on jaxlib 0.12.0.1 and 0.10.2 (compile-only a100, issue 38's
model, tests/testdata/kernels): the row rule's 32 threads and vector 2 for
rows of 512 and 1000 match the PTX (5 warp shuffles per reduce, `.v2`
loads); the Triton fusions' num_warps and tiles are read as XLA wrote
them. The rules were read from openxla/xla's reduction.cc (commit
07e25721) and reduction_base.cc; hloprobe does not recompute the Triton
cost model.

Private in intent: use the package, `hloprobe.kernels`.
"""

from __future__ import annotations

import math

from hloprobe.ir import HloInstruction
from hloprobe.kernels.records import RowCountRule, RowCountWhy

__all__ = [
  "EMITTER_RULE",
  "TRITON_TILING_RULE",
  "element_bits",
  "reduction_dimensions",
  "reduction_emitter",
]

EMITTER_RULE = "xla/backends/gpu/codegen/emitters/reduction.cc"
TRITON_TILING_RULE = (
  "xla/service/gpu/model/gpu_indexing_performance_model.cc "
  "TryFindBestTilingForFusion (tile and num_warps from the whole shape)"
)
_WARP = 32
_MIN_THREADS_X_ROW = 1024  # reduction_utils.h MinThreadsXRowReduction
_BITS = {
  "pred": 8,
  "s8": 8,
  "u8": 8,
  "f8e4m3fn": 8,
  "f8e5m2": 8,
  "bf16": 16,
  "f16": 16,
  "s16": 16,
  "u16": 16,
  "f32": 32,
  "s32": 32,
  "u32": 32,
  "f64": 64,
  "s64": 64,
  "u64": 64,
  "c64": 64,
  "c128": 128,
}


def _physical_order(reduce_operand_dims, layout: str | None) -> list[int]:
  """Logical dimension indices, major to minor."""
  rank = len(reduce_operand_dims)
  if layout:
    body = layout.strip("{}").split(":")[0]
    try:
      minor_to_major = [int(x) for x in body.split(",") if x.strip()]
    except ValueError:
      minor_to_major = []
    if sorted(minor_to_major) == list(range(rank)):
      return list(reversed(minor_to_major))
  return list(range(rank))


def reduction_dimensions(
  operand_dims: tuple[int, ...], layout: str | None, reduced: tuple[int, ...]
) -> tuple[bool, tuple[int, int, int]] | None:
  """(is_row_reduction, the three collapsed lengths), or None where the
  reduced and kept dimensions interleave more than XLA's three groups.

  Row: (major reduced, kept, minor reduced); column: (major kept, reduced,
  minor kept). Unit dimensions are ignored, as XLA's are.
  """
  order = [
    d for d in _physical_order(operand_dims, layout) if operand_dims[d] != 1
  ]
  if not order:
    return True, (1, 1, 1)
  groups: list[tuple[bool, int]] = []
  for d in order:
    is_reduced = d in reduced
    if groups and groups[-1][0] == is_reduced:
      groups[-1] = (is_reduced, groups[-1][1] * operand_dims[d])
    else:
      groups.append((is_reduced, operand_dims[d]))
  if groups[-1][0]:  # row reduction
    lengths = [g[1] for g in groups]
    if len(groups) == 1:
      return True, (1, 1, lengths[0])
    if len(groups) == 2:
      return True, (1, lengths[0], lengths[1])
    if len(groups) == 3:
      return True, (lengths[0], lengths[1], lengths[2])
    return None
  lengths = [g[1] for g in groups]
  if len(groups) == 2 and groups[1][0] is False:
    return False, (1, lengths[0], lengths[1])
  if len(groups) == 2:
    return False, (lengths[0], lengths[1], 1)
  if len(groups) == 3:
    return False, (lengths[0], lengths[1], lengths[2])
  return None


def _vector_size_row(length: int, threads: int, smallest_in_bits: int) -> int:
  """`GetVectorSizeForMlir` for a row reduction (module docstring)."""
  if length % 2 or threads * 2 > length:
    return 1
  if smallest_in_bits >= 32:
    return 2
  if threads * 4 > length:
    return 2
  return 4 if length % 4 == 0 else 2


def reduction_emitter(
  hero: HloInstruction,
  operand_dims: tuple[int, ...],
  layout: str | None,
  in_bits: tuple[int, int],
  out_bits: int,
  core_count: int | None,
) -> tuple[dict[str, str], bool | None, RowCountWhy]:
  """XLA's reduction emitter's choices for a kInput fusion's hero reduce.

  Args:
    hero: the reduce.
    operand_dims, layout: its first operand's dimensions and layout text.
    in_bits: (smallest, largest) element width of the fusion's inputs.
    out_bits: smallest element width of its outputs.
    core_count: the GPU's SM count (the multi-row emitter's occupancy
      rule reads it); None where not known.

  Returns:
    (fields for the record: "reduction_emitter", "reduce", "vector_size",
    "threads_per_row", "rows_per_warp", "elements_per_thread"; whether they
    depend on the row count (None: unknown); the reason, a `RowCountWhy`:
    INTERLEAVED, COLUMN, SMALL_COLUMN, MULTI_ROW (with `cores`) or ROW
    (with `length`)).
  """
  reduced = hero.dims_attr("dimensions")
  dims = reduction_dimensions(operand_dims, layout, reduced)
  fields = {
    "reduce": f"dims={{{','.join(map(str, reduced))}}} of "
    f"[{','.join(map(str, operand_dims))}]"
  }
  if dims is None:
    fields["reduction_emitter"] = "unknown (dimensions not in XLA's groups)"
    return fields, None, RowCountWhy(RowCountRule.INTERLEAVED)
  is_row, (a, b, c) = dims
  if not is_row:
    small = _WARP % c == 0 if c else False
    fields["reduction_emitter"] = "small column" if small else "column"
    fields["reduced_length"] = str(b)
    fields["minor_kept_length"] = str(c)
    rule = RowCountRule.SMALL_COLUMN if small else RowCountRule.COLUMN
    return fields, None, RowCountWhy(rule)
  length, kept = c, b
  smallest = min(in_bits[0], out_bits)
  largest = max(in_bits[0], out_bits)
  fields["reduced_length"] = str(length)
  if length & (length - 1) == 0:
    vector = min(length, max(1, 64 // smallest))
    if largest >= 32:
      vector = min(128 // largest, vector)
    if length <= _WARP * vector:
      if core_count is None:
        fields["reduction_emitter"] = "multi-row"
        fields["vector_size"] = "unknown (needs the GPU's core count)"
        return fields, True, RowCountWhy(RowCountRule.MULTI_ROW)
      while (
        vector > 1
        and math.ceil(kept / _threads_kept(kept, length // vector)) < core_count
      ):
        vector //= 2
      if length <= _WARP * vector:
        threads = length // vector
        fields["reduction_emitter"] = "multi-row"
        fields["vector_size"] = str(vector)
        fields["threads_per_row"] = str(threads)
        fields["rows_per_warp"] = str(max(1, _WARP // threads))
        fields["elements_per_thread"] = str(vector)
        why = RowCountWhy(RowCountRule.MULTI_ROW, cores=core_count)
        return fields, True, why
  threads = min(_MIN_THREADS_X_ROW, -(-math.ceil(length / 32) // _WARP) * _WARP)
  vector = _vector_size_row(length, threads, in_bits[0])
  tile = min(32 // vector, math.ceil(length // vector / threads))
  fields["reduction_emitter"] = "row"
  fields["vector_size"] = str(vector)
  fields["threads_per_row"] = str(threads)
  fields["rows_per_warp"] = "1"
  fields["elements_per_thread"] = str(tile * vector)
  return fields, False, RowCountWhy(RowCountRule.ROW, length=length)


def _threads_kept(kept: int, threads_reduced: int) -> int:
  """`MultiRowReductionFusion::GetNumThreads`' kept threads."""
  if kept * threads_reduced <= 256:
    return max(1, kept)
  return max(1, 256 // threads_reduced)


def element_bits(dtype: str) -> int:
  """An HLO element type's width in bits (32 where unknown)."""
  return _BITS.get(dtype, 32)
