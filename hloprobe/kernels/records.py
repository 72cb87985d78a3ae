"""The records of the kernels stage: one `KernelRecord` per row-computing
kernel of a compiled config, and one `KernelDifference` per kernel whose
per-row arithmetic differs between two configs.

Private in intent: use the package, `hloprobe.kernels`.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import ClassVar

__all__ = [
  "KernelDifference",
  "KernelRecord",
  "Role",
  "RowCount",
  "RowCountRule",
  "RowCountWhy",
]


class Role(str, enum.Enum):
  """What a kernel computes of a row; values are the words reports use."""

  CONTRACTION = "contraction"  # a gemm (Triton, or a dot the emitters keep)
  LIBRARY = "library call"  # cuBLAS / cuBLASLt / cuDNN custom call
  REDUCTION = "reduction"  # reduce / reduce-window / their fusions
  ELEMENTWISE = "elementwise"  # a loop fusion or lone elementwise op
  COLLECTIVE = "collective"  # all-reduce / reduce-scatter across devices
  OTHER = "other"  # anything else that computes values (sort, scatter...)


class RowCount(str, enum.Enum):
  """Whether the rule that chose a kernel's per-row arithmetic takes the
  row count (the batch size) as an input; values are report words."""

  DEPENDS = "depends on the row count"
  INDEPENDENT = "independent of the row count"
  UNKNOWN = "unknown"


class RowCountRule(enum.Enum):
  """The rule that says whether a kernel's per-row arithmetic takes the
  row count (`RowCountWhy.rule`); report/invariance_causes.py words each.

  ELEMENTWISE: each element is computed alone
    (xla/backends/gpu/codegen/emitters/loop.cc; Triton: one program per
    tile): the row count changes which thread computes an element.
  CPU: XLA:CPU's runtime and fusion emitters block from the shape, and
    hloprobe reads no CPU tiling (UNKNOWN).
  CUSTOM_CALL: a custom call (`RowCountWhy.name`: its target) with no
    rule read (UNKNOWN).
  LIBRARY: a cuBLAS / cuBLASLt / cuDNN call (`name`: the library), which
    picks its kernel at run time from the whole shape
    (xla/service/gpu/transforms/gemm_rewriter.cc makes the call;
    TransformerEngine#2986).
  COLLECTIVE: NCCL adds the partial sums in an order it chooses at run
    time (xla/service/spmd/dot_handler.cc makes the partial sums).
  TRITON_GEMM: tiles from XLA's config assigner (jaxlib 0.12.0.1:
    xla/service/gpu/autotuning/config_assigner_pass.cc
    GetConfigAssignerOptions; 0.10.2: autotuner_pass.cc
    AutotunerPass::CreateDeviceless, renamed in XLA c3378654) and split-K
    from xla/backends/gpu/transforms/splitk_rewriter.cc ChooseSplitK:
    both take the row count (DEPENDS).
  XLA_DOT: a dot XLA's own emitters keep: no tiling rule read (UNKNOWN).
  NO_RULE: a kernel of opcode `name` with no rule read (UNKNOWN).
  REDUCE_WINDOW: each output element adds its window in order
    (xla/backends/gpu/codegen/emitters/loop.cc elemental emitter).
  OPERAND_NOT_READ: the reduce's operand is not in the module (UNKNOWN).
  INTERLEAVED: the reduced dimensions are not in XLA's groups (UNKNOWN).
  COLUMN, SMALL_COLUMN: ColumnReductionFusion / SmallColumnReductionFusion
    (xla/backends/gpu/codegen/emitters/reduction.cc): threads and vector
    size from the reduced and minor kept lengths (UNKNOWN: whether the
    kept dimensions hold the rows is not told).
  MULTI_ROW: MultiRowReductionFusion::TryCreate (reduction.cc) halves the
    vector size while ceil(rows / threads_kept) < the GPU's cores
    (`cores`; None where not known) (DEPENDS).
  ROW: RowReductionFusion (reduction.cc): threads, vector size and tile
    from the reduced length (`length`) and input width alone
    (INDEPENDENT).
  TRITON_TILING: a Triton block-level fusion's tile and num_warps from
    xla/service/gpu/model/gpu_indexing_performance_model.cc
    TryFindBestTilingForFusion, from the whole shape (DEPENDS).
  """

  ELEMENTWISE = "elementwise"
  CPU = "cpu"
  CUSTOM_CALL = "custom_call"
  LIBRARY = "library"
  COLLECTIVE = "collective"
  TRITON_GEMM = "triton_gemm"
  XLA_DOT = "xla_dot"
  NO_RULE = "no_rule"
  REDUCE_WINDOW = "reduce_window"
  OPERAND_NOT_READ = "operand_not_read"
  INTERLEAVED = "interleaved"
  COLUMN = "column"
  SMALL_COLUMN = "small_column"
  MULTI_ROW = "multi_row"
  ROW = "row"
  TRITON_TILING = "triton_tiling"


@dataclasses.dataclass(frozen=True, slots=True)
class RowCountWhy:
  """Why a kernel's `RowCount` is what it is: the rule (`RowCountRule`)
  and its data. Report words it (`report/invariance_causes.py`
  `row_count_why_words`), e.g. "RowReductionFusion (...): threads, vector
  size and tile from the reduced length 512 and the input width alone;
  the row count only sets rows per block".

  Attributes:
    rule: the `RowCountRule`.
    name: LIBRARY: the library ("cuBLAS", "cuBLASLt", "cuDNN");
      CUSTOM_CALL: the call's target; NO_RULE: the opcode; else "".
    cores: MULTI_ROW: the GPU's SM count the rule read; None where not
      known (and for the other rules).
    length: ROW: the reduced length (elements); else None.
    strength_reduced: the reduction is a dot XLA's AlgebraicSimplifier
      rewrote (`dot-strength-reduction`,
      xla/hlo/transforms/simplifiers/algebraic_simplifier.cc), which it
      does only for a matrix-vector dot, i.e. at this row count.
  """

  rule: RowCountRule
  name: str = ""
  cores: int | None = None
  length: int | None = None
  strength_reduced: bool = False

  # The rules, for readers of the record.
  RULE: ClassVar[type[RowCountRule]] = RowCountRule

  def as_dict(self) -> dict:
    """JSON-ready data: the rule's value and the data it has."""
    d: dict = {"rule": self.rule.value}
    if self.name:
      d["name"] = self.name
    if self.cores is not None:
      d["cores"] = self.cores
    if self.length is not None:
      d["length"] = self.length
    if self.strength_reduced:
      d["strength_reduced"] = True
    return d


@dataclasses.dataclass(frozen=True, slots=True)
class KernelRecord:
  """One kernel of a compiled config that computes (part of) an output row.

  Attributes:
    name: the ENTRY instruction that launches it, e.g.
      "gemm_fusion_dot_general.2", "triton_softmax.4", "input_reduce_fusion.3",
      "custom-call.1", "all-reduce-start".
    kernel: its PTX `.entry` name (`HloInstruction.kernel_names`: the
      fusion's, or the fusion it was deduplicated with's), e.g. "triton_softmax_4"; None where
      no PTX kernel was found for it (library calls, collectives, CPU).
    role: what it computes (`Role`).
    emitter: who generates its code, in words, e.g. "Triton gemm
      (__triton_nested_gemm_fusion)", "Triton block-level (__triton)",
      "XLA reduction emitter, row reduction", "XLA loop emitter",
      "cuBLASLt (__cublas$lt$matmul)", "collective".
    ops: the source ops it computes, from the HLO metadata's op_name tails,
      sorted and unique, e.g. ("dot_general", "add").
    source: the program lines of those ops (`file:line`), sorted and unique.
    row_shape: the kernel's output shape with the row count written "N",
      e.g. "f32[N,1000]"; "f32[1000]" where XLA dropped a batch of 1.
    arithmetic: the fields that decide a row's arithmetic, as sorted
      (name, value) pairs of strings; they make the `signature`. Names
      (each present only where it applies): "algorithm" (a
      DotAlgorithmPreset name, from the PTX or the precision), "instruction"
      (the multiply instruction: "mma.sync m16n8k8 .f32.tf32.tf32.f32",
      "wgmma m64n8k8 ...", "fma.rn.f32", "none"), "block_k" (the K tile),
      "split_k", "k" (the row's contraction length), "k_per_split" (with
      split-K), "epilogue" (a digest of the gemm fusion's other ops), "precision",
      "operand_types", "accumulator", "operand_roles" ("swapped" where XLA
      swapped a tensor-core dot's operands), "strength_reduction"
      ("multiply+reduce": XLA rewrote the dot), "reduce" (the reduced
      dimensions, their lengths and the reducer, e.g. "dims={1} of 512,
      add"), "reduction_emitter" ("row", "column", "Triton"),
      "tile" (Triton: the output tile a program computes, rows x columns),
      "rows_per_program", "num_warps", "vector_size", "threads_per_row",
      "rows_per_warp", "elements_per_thread", "reduced_length",
      "computation" (a digest of the fused computation, normalised for the
      row count), "ptx_float_ops" (a digest of the PTX's floating-point
      dataflow: `normalise.float_operations`), "ptx_shuffles" and
      "ptx_loads" (the warp shuffles and widest global load the PTX has),
      "ptx" (a digest of the whole PTX normalised for the row count;
      "not read: <why>" where none),
      "library" (for library calls: "chosen by the library's per-shape
      heuristic at run time: unknown without a device"), "collective"
      (the collective and the order of its partial sums).
    config: what XLA wrote about the kernel that does not change a row's
      arithmetic (dropped from the signature), as sorted (name, value)
      pairs, e.g. ("num_stages", "3"), ("output_tile", "8x16").
    signature: the per-row arithmetic normalised for the row count: the
      role, the emitter and every `arithmetic` pair on one line. Two configs
      whose every row-computing kernel has an equal signature (matched in
      order, `compare_kernels`) compute the same bits for a row.
    row_count: whether the rule that chose this arithmetic takes the row
      count as an input (`RowCount`).
    row_count_why: the reason (`RowCountWhy`: the rule, with its data);
      for UNKNOWN what is not known (e.g. LIBRARY: cuBLAS picks its
      algorithm at run time from the whole shape). Report words it.
    rules: the XLA sources of the rules used to read this record, e.g.
      ("xla/backends/gpu/codegen/emitters/reduction.cc ReductionInfo",).
    outputs: the indices of the ENTRY result's leaves (the program's
      output leaves, in `jax.tree_util.tree_leaves` order) that this
      kernel's values reach through the ENTRY computation's data flow; a
      kernel inside a while, call or conditional reaches what that
      instruction reaches. None: not traced. A kernel whose outputs are
      all unbatched leaves (a loss's mean over the batch) computes no row.
      Not part of `as_dict` (the results schema).
    contractible: the float multiplies whose value reaches an add or a
      subtract in this kernel, which the GPU compiler may contract into
      one fused multiply-add, as "multiply <name> -> <opcode> <name>"
      (`fp_contract.multiply_adds`); () where none does; None where not
      read. Not part of `as_dict`.
    ptx_fusable: the float opcodes of its PTX that are, or may become, a
      fused multiply-add (`fp_contract.ptx_fusable`: any `fma`, an
      `add`/`sub`/`mul` without a rounding modifier); () where none;
      None where no PTX was read for it. Not part of `as_dict`.
  """

  name: str
  kernel: str | None
  role: Role
  emitter: str
  ops: tuple[str, ...]
  source: tuple[str, ...]
  row_shape: str
  arithmetic: tuple[tuple[str, str], ...]
  config: tuple[tuple[str, str], ...]
  signature: str
  row_count: RowCount
  row_count_why: RowCountWhy
  rules: tuple[str, ...] = ()
  outputs: tuple[int, ...] | None = None
  contractible: tuple[str, ...] | None = None
  ptx_fusable: tuple[str, ...] | None = None

  def as_dict(self) -> dict:
    """The record as JSON-ready data (results files, notebooks): every
    attribute, `arithmetic`/`config` as objects, enums as their words."""
    return {
      "name": self.name,
      "kernel": self.kernel,
      "role": self.role.value,
      "emitter": self.emitter,
      "ops": list(self.ops),
      "source": list(self.source),
      "row_shape": self.row_shape,
      "arithmetic": dict(self.arithmetic),
      "config": dict(self.config),
      "signature": self.signature,
      "row_count": self.row_count.value,
      "row_count_why": self.row_count_why.as_dict(),
      "rules": list(self.rules),
    }

  def field(self, name: str) -> str | None:
    """The `arithmetic` (else `config`) value called `name`, or None."""
    for key, value in self.arithmetic + self.config:
      if key == name:
        return value
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class KernelDifference:
  """A kernel whose per-row arithmetic differs between two configs.

  Attributes:
    a: the kernel of the first config (None: it has no counterpart there).
    b: the kernel of the second config (None: no counterpart there).
    fields: the `arithmetic` fields that differ, as (name, value in a,
      value in b) triples ("-" for a field one side lacks); () where one
      side has no counterpart.
    config: the same for the kernels' `config` values (the "ptx" digest
      left out: `fields` holds it); ().

  Report words it (`report/invariance_causes.py`), e.g.
  "gemm_fusion_dot (contraction dot_general at model.py:11): split_k 1 ->
  2, block_k 64 -> 128".
  """

  a: KernelRecord | None
  b: KernelRecord | None
  fields: tuple[tuple[str, str, str], ...]
  config: tuple[tuple[str, str, str], ...] = ()

  # Fields read from the PTX alone, not from a rule.
  PTX_FIELDS: ClassVar[frozenset[str]] = frozenset({"ptx", "ptx_float_ops"})

  @property
  def ptx_only(self) -> bool:
    """Whether only fields read from the PTX differ (`PTX_FIELDS`): every
    rule field is equal, and the PTX's float dataflow differs (e.g. a
    value loaded again instead of kept in a register), so the same bits
    are likely but not proven."""
    return bool(self.fields) and {f[0] for f in self.fields} <= self.PTX_FIELDS

  def as_dict(self) -> dict:
    """JSON-ready data: the two kernels' names (None where absent) and the
    differing fields and config values as [name, a, b] lists."""
    return {
      "a": self.a.name if self.a is not None else None,
      "b": self.b.name if self.b is not None else None,
      "fields": [list(f) for f in self.fields],
      "config": [list(c) for c in self.config],
    }
