"""`read_kernels`: every row-computing kernel of one compiled config.

Walks the ENTRY computation in XLA's schedule order; each instruction that
launches arithmetic becomes a `KernelRecord` whose fields come from the
rules of `gemm_rules` (contractions, library calls) and `reduction_rules`
(reduce kernels, Triton block-level fusions), and whose `computation` and
`ptx` digests come from `normalise`. Collectives that add partial sums
(all-reduce, reduce-scatter: xla/service/spmd dot_handler.cc makes them of
a dot whose contracting dimension is sharded) are records too: their
order of partial sums is NCCL's (ring or tree, chosen at run time from
the message size), so unknown without a device.

Private in intent: use the package, `hloprobe.kernels`.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence

from hloprobe.ir import (
  HloInstruction,
  HloModule,
  parse_hlo_module,
  parse_ptx,
)
from hloprobe.kernels import (
  fp_contract,
  gemm_rules,
  normalise,
  reduction_rules,
)
from hloprobe.kernels.records import (
  KernelRecord,
  Role,
  RowCount,
  RowCountRule,
  RowCountWhy,
)
from hloprobe.sites import Fate

__all__ = ["read_kernels", "target_core_count"]

# Instructions that only move, relabel or select values: no kernel.
_MOVES = frozenset(
  {
    "parameter",
    "constant",
    "bitcast",
    "copy",
    "copy-start",
    "copy-done",
    "reshape",
    "transpose",
    "tuple",
    "get-tuple-element",
    "slice",
    "dynamic-slice",
    "dynamic-update-slice",
    "broadcast",
    "iota",
    "concatenate",
    "pad",
    "reverse",
    "after-all",
    "partition-id",
    "replica-id",
    "opt-barrier",
    "all-gather",
    "all-gather-start",
    "all-gather-done",
    "all-to-all",
    "collective-permute",
    "collective-permute-start",
    "collective-permute-done",
    "all-reduce-done",
    "reduce-scatter-done",
    "async-done",
    "async-update",
    "send",
    "send-done",
    "recv",
    "recv-done",
    "add-dependency",
    "get-dimension-size",
    "domain",
  }
)
_SUMMING = {
  "all-reduce": "all-reduce",
  "all-reduce-start": "all-reduce",
  "reduce-scatter": "reduce-scatter",
  "reduce-scatter-start": "reduce-scatter",
}
_REDUCES = ("reduce", "reduce-window")
# Control flow whose bodies are walked: the attributes naming them (a
# while's condition computes the trip count, not a row).
_CONTROL = {
  "while": ("body",),
  "call": ("to_apply",),
  "conditional": (
    "branch_computations",
    "true_computation",
    "false_computation",
  ),
}
_MAX_DEPTH = 8
_COLLECTIVE_ORDER = (
  "NCCL adds the partial sums in the order of its algorithm (ring or tree, "
  "chunked), chosen at run time from the message size: unknown without a "
  "device"
)
# Each element is computed alone (xla/backends/gpu/codegen/emitters/
# loop.cc; Triton: one program per tile).
_ELEMENTWISE_RULE = RowCountWhy(RowCountRule.ELEMENTWISE)


def target_core_count(target) -> int | None:
  """The SM count of a compile-only GPU target (`compile.Target`), from its
  config's `gpu_device_info.core_count` (e.g. 108 for hloprobe's a100), for
  `read_kernels`; None for other targets or a config without one."""
  text = getattr(target, "config_text", None) or ""
  m = re.search(r"\bcore_count\s*:\s*(\d+)", text)
  return int(m.group(1)) if m else None


def read_kernels(
  optimized_hlo: str | HloModule,
  row_count: int,
  ptx: Sequence[str] = (),
  platform: str = "cuda",
  core_count: int | None = None,
  target=None,
) -> tuple[KernelRecord, ...]:
  """The kernels of one compiled config that compute output rows.

  Walks the ENTRY computation in XLA's schedule order and makes one
  `KernelRecord` per instruction that launches arithmetic: fusions (Triton
  gemm, Triton block-level, XLA's reduction / loop emitters), gemm and
  other library custom calls, lone dots / reduces / reduce-windows /
  elementwise ops, and collectives that add partial sums (sharded
  programs). Instructions that only move or relabel values (parameter,
  constant, bitcast, copy, reshape, transpose, tuple, get-tuple-element,
  slice, broadcast, ...) make none: they do not change a row's bits.
  The bodies of a while (not its condition), call or conditional are
  walked in place; their records are named `<while>/<instruction>`.

  Args:
    optimized_hlo: the optimized HLO text (`CompiledCase.optimized_hlo`,
      `Compiled.as_text()`) or its parsed `HloModule`, backend configs
      included.
    row_count: the batch size n the config was compiled for (the number
      of rows of the batched output); > 0. Shapes' dimensions equal to n are
      written "N" in signatures (a dimension XLA dropped at n = 1 stays
      dropped: an n = 1 kernel of another rank signs differently).
    ptx: the PTX files of that compile (`CompiledCase.ptx`; empty on CPU,
      or where XLA dumped none: jaxlib 0.12 needs `xla_dump_emitter_re`).
      Without a kernel's PTX, its instruction and `ptx` fields read
      "not read: no PTX for <kernel>".
    platform: "cuda" (rules of XLA:GPU) or "cpu" (XLA:CPU: fusions are
      read from the HLO alone; no tiling is known).
    core_count: the GPU's SM count (`gpu_device_info.core_count` of the
      target config, e.g. 108 for the A100), which XLA's multi-row
      reduction emitter reads; None: taken from `target`, else such
      kernels' vector size is unknown.
    target: the target compiled for (`compile.Target`), or None: where
      `core_count` is None, a compile-only GPU target's config gives it
      (`target_core_count`; None for other targets).

  Returns:
    The records, in schedule order.

  Raises:
    ValueError: row_count < 1, or platform not "cuda" / "cpu".
    HloParseError: the text is not an HLO module.
  """
  if row_count < 1:
    raise ValueError(f"row_count must be >= 1, got {row_count}")
  if platform not in ("cuda", "cpu"):
    raise ValueError(f"platform must be 'cuda' or 'cpu', got {platform!r}")
  module = (
    parse_hlo_module(optimized_hlo)
    if isinstance(optimized_hlo, str)
    else optimized_hlo
  )
  if core_count is None and target is not None:
    core_count = target_core_count(target)
  reader = _Reader(module, row_count, ptx, platform, core_count)
  return tuple(reader.read())


class _Reader:
  """One module's walk (state shared by the per-kernel readers)."""

  def __init__(self, module, row_count, ptx, platform, core_count):
    self.module = module
    self.n = row_count
    self.platform = platform
    self.core_count = core_count
    self.ptx_text = normalise.kernel_ptx(list(ptx))
    self.ptx = {k.name: k for text in ptx for k in parse_ptx(text)}
    self.insts = {i.name: i for _, i in module.all_instructions()}
    self.entry = module.entry
    self.labels: dict[str, str] = {}
    self.users: dict[str, list[HloInstruction]] = {}
    for _, inst in module.all_instructions():
      for o in inst.operands:
        self.users.setdefault(o, []).append(inst)
    self.reach = _entry_reach(module)

  # -- labels: what an ENTRY value is, for the computations' parameters
  def label(self, name: str) -> str:
    return self.labels.get(name, name)

  def read(self) -> list[KernelRecord]:
    out: list[KernelRecord] = []
    self._walk(self.entry, "", out, depth=0)
    return out

  def _walk(self, comp, prefix: str, out: list, depth: int, reach=None) -> None:
    """Records of one computation's instructions; the bodies of loops,
    calls and conditionals are walked in place, their records named
    `<while>/<instruction>` (a loop body's kernels run once per trip) and
    reaching the result leaves that instruction reaches (`reach`)."""
    for inst in comp.instructions:
      if inst.opcode == "parameter":
        self.labels[inst.name] = f"{prefix}arg{inst.parameter_number}"
        continue
      if inst.opcode in _MOVES or (
        inst.opcode == "async-start" and not self._async_sum(inst)
      ):
        inner = ",".join(self.label(o) for o in inst.operands)
        self.labels[inst.name] = (
          inner
          if inst.opcode in ("bitcast", "copy", "reshape")
          else f"{inst.opcode}({inner})"
        )
        continue
      if inst.opcode in _CONTROL and depth < _MAX_DEPTH:
        bodies = [
          c
          for key in _CONTROL[inst.opcode]
          for c in _names(inst.attrs.get(key))
          if c in self.module.computations
        ]
        if bodies:
          for body in bodies:
            self._walk(
              self.module.computations[body],
              f"{prefix}{inst.name}/",
              out,
              depth + 1,
              self.reach.get(inst.name) if reach is None else reach,
            )
          self.labels[inst.name] = f"{prefix}{inst.name}"
          continue
      record = self.record(inst, len(out))
      outputs = self.reach.get(inst.name) if reach is None else reach
      record = dataclasses.replace(
        record,
        name=prefix + record.name,
        outputs=None if outputs is None else tuple(sorted(outputs)),
      )
      self.labels[inst.name] = f"k{len(out)}"
      out.append(record)

  # -- helpers
  def _async_sum(self, inst: HloInstruction) -> str | None:
    for called in inst.called_computations:
      comp = self.module.computations.get(called)
      if comp is not None:
        for i in comp.instructions:
          if i.opcode in _SUMMING:
            return _SUMMING[i.opcode]
    return None

  def _fused(self, inst: HloInstruction) -> list[HloInstruction]:
    """Instructions of a fusion's computation and its nested fusions."""
    out, todo, seen = [], [inst], set()
    while todo:
      cur = todo.pop()
      for called in cur.called_computations:
        if called in seen or called not in self.module.computations:
          continue
        seen.add(called)
        for i in self.module.computations[called].instructions:
          out.append(i)
          if i.opcode == "fusion":
            todo.append(i)
    return out

  def _ops_and_source(self, insts) -> tuple[tuple[str, ...], tuple[str, ...]]:
    ops, source = set(), set()
    for i in insts:
      if i.opcode in _MOVES:
        continue
      op_name = i.metadata.get("op_name")
      if op_name:
        ops.add(str(op_name).rsplit("/", 1)[-1])
      where = self.module.source_location(i)
      if where:
        source.add(where)
    return tuple(sorted(ops)), tuple(sorted(source))

  def _kernel(self, inst: HloInstruction):
    for name in inst.kernel_names:
      if name in self.ptx:
        return name, self.ptx[name]
    return None, None

  def _ptx_digest(self, kernel: str | None) -> str:
    if kernel is None or kernel not in self.ptx_text:
      return "not read: no PTX for this kernel"
    return normalise.digest(
      normalise.normalised_ptx(kernel, self.ptx_text[kernel], self.n)
    )

  def _float_ops(self, kernel: str | None) -> str:
    if kernel is None or kernel not in self.ptx_text:
      return "not read: no PTX for this kernel"
    return normalise.digest(normalise.float_operations(self.ptx_text[kernel]))

  def _computation_digest(self, inst: HloInstruction, leaf=None) -> str:
    labels = [self.label(o) for o in inst.operands]
    called = inst.attrs.get("calls", "").strip().lstrip("%")
    if called not in self.module.computations:
      return "none"
    text = normalise.canonical_computation(
      self.module,
      called,
      self.n,
      lambda i: labels[i] if i is not None and i < len(labels) else f"p{i}",
      leaf,
    )
    return normalise.digest(text)

  def _row_shape(self, inst: HloInstruction) -> str:
    s = inst.shape
    if s.is_tuple:
      return (
        "("
        + ", ".join(
          f"{e.dtype}[{normalise.row_dims(e.dims, self.n)}]" for e in s.elements
        )
        + ")"
      )
    return f"{s.dtype}[{normalise.row_dims(s.dims, self.n)}]"

  def _make(
    self,
    inst,
    kernel,
    role,
    emitter,
    arithmetic,
    config,
    row_count,
    why,
    rules=(),
    insts=None,
  ) -> KernelRecord:
    insts = insts if insts is not None else (self._fused(inst) or [inst])
    ops, source = self._ops_and_source(insts)
    arith = tuple(sorted((k, str(v)) for k, v in arithmetic.items()))
    conf = tuple(sorted((k, str(v)) for k, v in config.items()))
    signature = " | ".join(
      [role.value, emitter] + [f"{k}={v}" for k, v in arith]
    )
    return KernelRecord(
      name=inst.name,
      kernel=kernel,
      role=role,
      emitter=emitter,
      ops=ops,
      source=source,
      row_shape=self._row_shape(inst),
      arithmetic=arith,
      config=conf,
      signature=signature,
      row_count=row_count,
      row_count_why=why,
      rules=tuple(rules),
      contractible=fp_contract.multiply_adds(self.module, insts),
      ptx_fusable=fp_contract.ptx_fusable(self.ptx_text[kernel])
      if kernel in self.ptx_text
      else None,
    )

  # -- one record
  def record(self, inst: HloInstruction, index: int) -> KernelRecord:
    if self.platform == "cpu":
      return self._cpu(inst)
    if inst.opcode == "custom-call":
      return self._custom_call(inst)
    if inst.opcode in _SUMMING or inst.opcode == "async-start":
      return self._collective(inst)
    if inst.opcode == "fusion":
      kind = _fusion_kind(inst)
      if kind in gemm_rules.GEMM_KINDS:
        return self._triton_gemm(inst, kind)
      if kind == "__triton":
        return self._triton_block(inst)
      if kind and kind.startswith("__cudnn"):
        return self._library(inst, "cuDNN", kind)
      fused = self._fused(inst)
      heroes = [i for i in fused if i.opcode in _REDUCES]
      dots = [i for i in fused if i.opcode in ("dot", "convolution")]
      if heroes and inst.attrs.get("kind") in ("kInput", "kLoop", "kOutput"):
        return self._xla_reduction(inst, heroes, fused)
      if dots:
        return self._xla_dot(inst, dots[0])
      return self._elementwise(
        inst, f"XLA loop emitter ({inst.attrs.get('kind')})"
      )
    if inst.opcode in _REDUCES:
      return self._xla_reduction(inst, [inst], [inst])
    if inst.opcode in ("dot", "convolution"):
      return self._xla_dot(inst, inst)
    return self._elementwise(
      inst,
      f"XLA {inst.opcode}",
      role=Role.OTHER
      if inst.opcode
      in ("sort", "scatter", "gather", "while", "conditional", "call")
      else Role.ELEMENTWISE,
    )

  def _cpu(self, inst: HloInstruction) -> KernelRecord:
    fused = self._fused(inst) or [inst]
    has_dot = any(i.opcode in ("dot", "convolution") for i in fused)
    has_reduce = any(i.opcode in _REDUCES for i in fused)
    role = (
      Role.CONTRACTION
      if has_dot
      else Role.REDUCTION
      if has_reduce
      else Role.ELEMENTWISE
    )
    emitter = "XLA:CPU " + (
      _fusion_kind(inst) or inst.attrs.get("kind") or inst.opcode
    )
    arith = {
      "computation": self._computation_digest(inst)
      if inst.opcode == "fusion"
      else _lone(inst, self.n, self.label)
    }
    if role is Role.ELEMENTWISE:
      return self._make(
        inst,
        None,
        role,
        emitter,
        arith,
        {},
        RowCount.INDEPENDENT,
        _ELEMENTWISE_RULE,
      )
    return self._make(
      inst,
      None,
      role,
      emitter,
      arith,
      {},
      RowCount.UNKNOWN,
      RowCountWhy(RowCountRule.CPU),
    )

  def _custom_call(self, inst: HloInstruction) -> KernelRecord:
    target = inst.attrs.get("custom_call_target", "").strip('"')
    if target in gemm_rules.LIBRARY_CALLS:
      return self._library(inst, gemm_rules.LIBRARY_CALLS[target], target)
    if target.startswith("__cudnn"):
      return self._library(inst, "cuDNN", target)
    return self._make(
      inst,
      None,
      Role.OTHER,
      f"custom call {target}",
      {"library": f"custom call {target}: not read"},
      {},
      RowCount.UNKNOWN,
      RowCountWhy(RowCountRule.CUSTOM_CALL, name=target),
    )

  def _library(self, inst, library: str, target: str) -> KernelRecord:
    config = inst.backend_config
    gemm = config.get("gemm_backend_config") or {}
    conf = {}
    if "selected_algorithm" in gemm:
      conf["selected_algorithm"] = gemm["selected_algorithm"]
    fate = {"cuBLAS": Fate.CUBLAS, "cuBLASLt": Fate.CUBLASLT}.get(
      library, Fate.CUDNN
    )
    arith = {
      "fate": fate.value,
      "library": gemm_rules.LIBRARY_WORDS,
      "computation": _lone(inst, self.n, self.label),
    }
    for key in ("precision_config", "algorithm"):
      if key in gemm:
        arith[key] = gemm[key]
    return self._make(
      inst,
      None,
      Role.LIBRARY,
      f"{library} ({target})",
      arith,
      conf,
      RowCount.UNKNOWN,
      RowCountWhy(RowCountRule.LIBRARY, name=library),
      rules=("xla/service/gpu/transforms/gemm_rewriter.cc (custom call)",),
      insts=[inst],
    )

  def _collective(self, inst: HloInstruction) -> KernelRecord:
    kind = _SUMMING.get(inst.opcode) or self._async_sum(inst) or inst.opcode
    groups = inst.attrs.get("replica_groups", "")
    reducer = ""
    for called in inst.called_computations:
      comp = self.module.computations.get(called)
      if comp is not None and comp.root.opcode not in _SUMMING:
        reducer = comp.root.opcode
    arith = {
      "collective": f"{kind} over replica_groups={groups or '?'}"
      + (f", reducer {reducer}" if reducer else ""),
      "order": _COLLECTIVE_ORDER,
      "partials": f"{self.module.partition_count} partitions (SPMD): each "
      "adds its own slice of the products, then the collective adds the "
      "partial sums across devices",
    }
    return self._make(
      inst,
      None,
      Role.COLLECTIVE,
      "collective (NCCL)",
      arith,
      {},
      RowCount.UNKNOWN,
      RowCountWhy(RowCountRule.COLLECTIVE),
      rules=(
        "xla/service/spmd/dot_handler.cc (partial sums of a sharded "
        "contraction)",
      ),
      insts=[inst],
    )

  def _split_k(self, gemm: HloInstruction, dot: HloInstruction) -> int | None:
    """The size a consumer's reduce named after the dot removes."""
    op_name = dot.metadata.get("op_name")
    todo, seen = [gemm.name], set()
    while todo:
      name = todo.pop()
      for user in self.users.get(name, []):
        if user.name in seen:
          continue
        seen.add(user.name)
        if user.opcode in ("bitcast", "copy", "reshape"):
          todo.append(user.name)
          continue
        candidates = [user] if user.opcode == "reduce" else []
        if user.opcode == "fusion":
          candidates = [i for i in self._fused(user) if i.opcode == "reduce"]
        for r in candidates:
          if op_name and r.metadata.get("op_name") == op_name:
            operand = self.insts.get(r.operands[0])
            if operand is None:
              continue
            return math.prod(
              operand.shape.dims[d] for d in r.dims_attr("dimensions")
            )
    return None

  def _triton_gemm(self, inst: HloInstruction, kind: str) -> KernelRecord:
    fused = self._fused(inst)
    dots = [i for i in fused if i.opcode == "dot"]
    config = inst.backend_config.get("fusion_backend_config") or {}
    blc = config.get("block_level_fusion_config") or {}
    kernel, ptx = self._kernel(inst)
    conf: dict[str, str] = {}
    tiles = blc.get("output_tiles") or []
    if tiles:
      conf["output_tile"] = " ; ".join(
        "x".join(str(s) for s in t.get("sizes", [])) for t in tiles
      )
    for key in ("num_warps", "num_stages", "num_ctas"):
      if key in blc:
        conf[key] = blc[key]
    tgc = config.get("triton_gemm_config") or {}
    for key in ("block_m", "block_n", "num_warps", "num_stages", "num_ctas"):
      if key in tgc:
        conf[key] = tgc[key]
    if dots:
      arith, rules = self._triton_dot(inst, fused, dots[0], ptx, conf)
    else:
      arith = {
        "computation": self._computation_digest(inst),
        "block_k": "not read: no dot in the fusion",
      }
      rules = ()
    return self._make(
      inst,
      kernel,
      Role.CONTRACTION,
      f"Triton gemm ({kind})",
      arith,
      conf,
      RowCount.DEPENDS,
      RowCountWhy(RowCountRule.TRITON_GEMM),
      rules=rules,
    )

  def _triton_dot(
    self, inst: HloInstruction, fused, dot: HloInstruction, ptx, conf: dict
  ) -> tuple[dict, tuple[str, ...]]:
    """A Triton gemm fusion's per-row arithmetic around its `dot`, and the
    rules it was read by; marks swapped operands in `conf` where they do not
    change the arithmetic (fma)."""
    config = inst.backend_config.get("fusion_backend_config") or {}
    shapes = {i.name: i.shape.dims for i in fused}
    lhs = self.insts.get(dot.operands[0])
    lhs_dtype = lhs.shape.dtype if lhs is not None else dot.shape.dtype
    instruction, algorithm = gemm_rules.instruction_words(ptx, lhs_dtype)
    k = gemm_rules.contraction_length(dot, shapes)
    bk = gemm_rules.block_k(dot, config)
    split = gemm_rules.split_k_of(config, self._split_k(inst, dot))
    arith = {
      "fate": Fate.TRITON_GEMM.value,
      "k": k * split if k is not None else "unknown",
      "block_k": bk or "not stated",
      "split_k": split,
      "instruction": instruction,
      "algorithm": algorithm or dot.attrs.get("algorithm", "unknown"),
      "precision": dot.attrs.get("operand_precision", "default"),
      "operand_types": ",".join(
        self.insts[o].shape.dtype for o in dot.operands if o in self.insts
      ),
      "accumulator": dot.shape.dtype,
      "epilogue": self._computation_digest(inst, leaf=_dot_result(fused)),
    }
    if split > 1 and k is not None:
      arith["k_per_split"] = k
    if instruction.startswith(("mma", "wgmma")) and _swapped(dot, lhs):
      arith["operand_roles"] = "swapped"
    elif _swapped(dot, lhs):
      conf["operand_roles"] = "swapped (fma: products commute exactly)"
    rules = (
      "xla/backends/gpu/transforms/splitk_rewriter.cc",
      "xla/service/gpu/autotuning/config_assigner_pass.cc (jaxlib "
      "0.12.0.1; autotuner_pass.cc on 0.10.2)",
      "PTX mma/fma opcodes (hloprobe.ir.ptx)",
    )
    return arith, rules

  def _xla_dot(self, inst: HloInstruction, dot: HloInstruction) -> KernelRecord:
    kernel, ptx = self._kernel(inst)
    lhs = self.insts.get(dot.operands[0])
    instruction, algorithm = gemm_rules.instruction_words(
      ptx, lhs.shape.dtype if lhs is not None else dot.shape.dtype
    )
    arith = {
      "fate": Fate.DOT.value,
      "instruction": instruction,
      "algorithm": algorithm or "unknown",
      "computation": self._computation_digest(inst)
      if inst.opcode == "fusion"
      else _lone(inst, self.n, self.label),
      "ptx": self._ptx_digest(kernel),
    }
    return self._make(
      inst,
      kernel,
      Role.CONTRACTION,
      f"XLA {inst.attrs.get('kind') or 'dot'}",
      arith,
      {},
      RowCount.UNKNOWN,
      RowCountWhy(RowCountRule.XLA_DOT),
    )

  def _elementwise(self, inst, emitter, role=Role.ELEMENTWISE) -> KernelRecord:
    arith = {
      "computation": self._computation_digest(inst)
      if inst.opcode == "fusion"
      else _lone(inst, self.n, self.label)
    }
    known = role is Role.ELEMENTWISE
    return self._make(
      inst,
      self._kernel(inst)[0],
      role,
      emitter,
      arith,
      {},
      RowCount.INDEPENDENT if known else RowCount.UNKNOWN,
      _ELEMENTWISE_RULE
      if known
      else RowCountWhy(RowCountRule.NO_RULE, name=inst.opcode),
      insts=self._fused(inst) or [inst],
    )

  def _xla_reduction(self, inst, heroes, fused) -> KernelRecord:
    kernel, ptx = self._kernel(inst)
    hero = heroes[0]
    operand = self.insts.get(hero.operands[0])
    op_name = str(hero.metadata.get("op_name", ""))
    strength = op_name.rsplit("/", 1)[-1] in ("dot_general", "dot") and (
      operand is not None and operand.opcode == "multiply"
    )
    in_bits = [
      reduction_rules.element_bits(self.insts[o].shape.dtype)
      for o in inst.operands
      if o in self.insts and not self.insts[o].shape.is_tuple
    ] or [32]
    out = inst.shape.elements if inst.shape.is_tuple else (inst.shape,)
    out_bits = min(reduction_rules.element_bits(s.dtype) for s in out)
    arith: dict[str, str] = {}
    rules = [reduction_rules.EMITTER_RULE]
    if hero.opcode == "reduce-window":
      arith["reduction_emitter"] = "reduce-window (loop emitter)"
      arith["window"] = hero.attrs.get("window", "?")
      depends, why = False, RowCountWhy(RowCountRule.REDUCE_WINDOW)
    elif operand is None:
      depends, why = None, RowCountWhy(RowCountRule.OPERAND_NOT_READ)
    else:
      fields, depends, why = reduction_rules.reduction_emitter(
        hero,
        operand.shape.dims,
        operand.shape.layout,
        (min(in_bits), max(in_bits)),
        out_bits,
        self.core_count,
      )
      arith.update(fields)
      arith["reduce"] = (
        f"dims={{{','.join(map(str, hero.dims_attr('dimensions')))}}} of "
        f"[{normalise.row_dims(operand.shape.dims, self.n)}]"
      )
    arith["heroes"] = str(len(heroes))
    arith["computation"] = (
      self._computation_digest(inst)
      if inst.opcode == "fusion"
      else _lone(inst, self.n, self.label)
    )
    if ptx is not None:
      text = self.ptx_text.get(kernel, "")
      arith["ptx_shuffles"] = str(text.count("shfl.sync"))
      vec = "v4" if ".v4." in text else "v2" if ".v2." in text else "scalar"
      arith["ptx_loads"] = vec
      arith["ptx_float_ops"] = self._float_ops(kernel)
    else:
      arith["ptx_shuffles"] = "not read: no PTX for this kernel"
    role = Role.CONTRACTION if strength else Role.REDUCTION
    if strength:
      arith["fate"] = Fate.MULTIPLY_REDUCE.value
      arith["strength_reduction"] = "multiply+reduce (dot strength reduction)"
      depends = True
      why = dataclasses.replace(why, strength_reduced=True)
      rules.append("xla/hlo/transforms/simplifiers/algebraic_simplifier.cc")
    row_count = (
      RowCount.UNKNOWN
      if depends is None
      else RowCount.DEPENDS
      if depends
      else RowCount.INDEPENDENT
    )
    emitter = (
      f"XLA reduction emitter ({inst.attrs.get('kind') or inst.opcode}), "
      f"{arith.get('reduction_emitter', 'unknown')}"
    )
    return self._make(
      inst, kernel, role, emitter, arith, {}, row_count, why, rules=rules
    )

  def _triton_block(self, inst: HloInstruction) -> KernelRecord:
    fused = self._fused(inst)
    heroes = [i for i in fused if i.opcode in _REDUCES]
    config = inst.backend_config.get("fusion_backend_config") or {}
    blc = config.get("block_level_fusion_config") or {}
    kernel, _ = self._kernel(inst)
    tiles = blc.get("output_tiles") or []
    tile = " ; ".join(
      "x".join(str(s) for s in t.get("sizes", [])) for t in tiles
    )
    arith: dict[str, str] = {
      "num_warps": str(blc.get("num_warps", "not stated")),
      "computation": self._computation_digest(inst),
      "ptx_float_ops": self._float_ops(kernel),
    }
    conf = {k: blc[k] for k in ("num_stages", "num_ctas") if k in blc}
    conf["output_tile"] = tile or "not stated"
    if str(blc.get("num_warps", "")).isdigit():
      # Triton spreads a program's tiles over all its threads.
      conf["threads_per_program"] = str(int(blc["num_warps"]) * 32)
    conf["ptx"] = self._ptx_digest(kernel)
    if tiles and tiles[0].get("sizes"):
      sizes = [int(s) for s in tiles[0]["sizes"]]
      arith["rows_per_program"] = str(
        math.prod(sizes[:-1]) if len(sizes) > 1 else 1
      )
    reduces = []
    for h in heroes:
      operand = self.insts.get(h.operands[0])
      if operand is None:
        continue
      dims = h.dims_attr("dimensions")
      length = math.prod(operand.shape.dims[d] for d in dims)
      padded = 1 << max(0, (length - 1).bit_length())
      reduces.append(
        f"dims={{{','.join(map(str, dims))}}} of "
        f"[{normalise.row_dims(operand.shape.dims, self.n)}] "
        f"({h.metadata.get('op_name', h.opcode).rsplit('/', 1)[-1]}), "
        f"tile {padded}"
      )
    if reduces:
      arith["reduce"] = "; ".join(reduces)
    if heroes:
      arith["reduction_emitter"] = "Triton"
      return self._make(
        inst,
        kernel,
        Role.REDUCTION,
        "Triton block-level (__triton)",
        arith,
        conf,
        RowCount.DEPENDS,
        RowCountWhy(RowCountRule.TRITON_TILING),
        rules=(
          reduction_rules.TRITON_TILING_RULE,
          "xla/backends/gpu/transforms/softmax_rewriter_triton.cc",
        ),
      )
    del arith["ptx_float_ops"], arith["num_warps"]
    return self._make(
      inst,
      kernel,
      Role.ELEMENTWISE,
      "Triton block-level (__triton)",
      arith,
      conf,
      RowCount.INDEPENDENT,
      _ELEMENTWISE_RULE,
    )


def _names(raw: str | None) -> list[str]:
  """Computation names of an attribute such as `body=%b` or
  `branch_computations={%a, %b}`."""
  if not raw:
    return []
  return [
    n.strip().lstrip("%") for n in raw.strip("{}").split(",") if n.strip()
  ]


def _fusion_kind(inst: HloInstruction) -> str | None:
  if inst.opcode != "fusion":
    return None
  config = inst.backend_config
  fbc = config.get("fusion_backend_config") or config.get("fusion_config") or {}
  return fbc.get("kind")


def _dot_result(fused):
  """A leaf callback: the gemm's dot, and moves of its result (XLA's
  operand swap puts a bitcast after a dot of the other output order), print
  as one leaf "dot" with the shape the epilogue sees."""
  results = {i.name for i in fused if i.opcode == "dot"}
  for i in fused:  # fused computations print operands before users
    if i.opcode in ("bitcast", "copy", "transpose", "reshape") and (
      i.operands and i.operands[0] in results
    ):
      results.add(i.name)

  def leaf(inst):
    return "dot" if inst.name in results else None

  return leaf


def _swapped(dot: HloInstruction, lhs: HloInstruction | None) -> bool:
  """Whether XLA put the dot's output dimensions in the other order (the
  row operand second): its output layout is not the default minor-to-major,
  e.g. f32[512,2]{0,1}."""
  layout = dot.shape.layout or ""
  rank = len(dot.shape.dims)
  default = "{" + ",".join(str(d) for d in reversed(range(rank))) + "}"
  return bool(layout) and rank >= 2 and layout != default


def _lone(inst: HloInstruction, row_count: int, label) -> str:
  """The digest of one non-fused instruction, normalised like a fusion."""
  dims = normalise.row_dims(inst.shape.dims, row_count)
  attrs = ", ".join(
    f"{k}={v}"
    for k, v in inst.attrs.items()
    if k
    not in ("metadata", "backend_config", "sharding", "frontend_attributes")
  )
  operands = ", ".join(label(o) for o in inst.operands)
  return normalise.digest(
    f"{inst.shape.dtype}[{dims}] {inst.opcode}({operands}) {{{attrs}}}"
  )


def _leaf_count(shape) -> int:
  """How many array leaves a (tuple) shape flattens to."""
  if not shape.is_tuple:
    return 1
  return sum(_leaf_count(e) for e in shape.elements)


def _entry_reach(module: HloModule) -> dict[str, frozenset[int]]:
  """ENTRY instruction name -> the result leaves its value reaches.

  The ENTRY root's leaves are numbered in flattened order (a tuple root's
  operands, nested tuples flattened: the order of the program's
  `tree_leaves`); a value reaches what its users reach, walked from the
  root back through the printed order (a topological order of the
  computation). Where a tuple or get-tuple-element sits between, the
  whole tuple's reach passes on (over-approximate: a kernel is never
  left out wrongly).
  """
  entry = module.entry
  root = entry.root
  reach: dict[str, set[int]] = {}
  if root.opcode == "tuple":
    start = 0
    by_name = entry.by_name()
    for o in root.operands:
      operand = by_name.get(o)
      count = _leaf_count(operand.shape) if operand is not None else 1
      reach.setdefault(o, set()).update(range(start, start + count))
      start += count
    reach[root.name] = set(range(start))
  else:
    reach[root.name] = set(range(_leaf_count(root.shape)))
  for inst in reversed(entry.instructions):
    mine = reach.get(inst.name)
    if not mine or inst is root and root.opcode == "tuple":
      continue
    for o in inst.operands:
      reach.setdefault(o, set()).update(mine)
  return {k: frozenset(v) for k, v in reach.items()}
