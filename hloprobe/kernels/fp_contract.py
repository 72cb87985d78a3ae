"""Where a kernel's float multiply feeds an add or a subtract: the pairs a
GPU compiler may contract into one fused multiply-add (one rounding
instead of two), read from the kernel's fused HLO computation.

The rule (what XLA:GPU's code generation allows, not what it always
does):

  - XLA:GPU's elemental emitters write each HLO multiply as an LLVM `fmul`
    and each add and subtract as `fadd`/`fsub`; the NVPTX backend's DAG
    combine (llvm/lib/Target/NVPTX/NVPTXISelLowering.cpp, `allowFMA` and
    the FADD combine; llvm/lib/CodeGen/SelectionDAG/DAGCombiner.cpp,
    `visitFADDForFMACombine` and `visitFSUBForFMACombine`) may make
    `fadd(fmul(a, b), c)`, `fsub(fmul(a, b), c)` and `fsub(c, fmul(a, b))`
    one `fma`. XLA does not forbid it: its target machine takes LLVM's
    default options (xla/service/gpu/llvm_gpu_backend/gpu_backend_lib.cc,
    `GetTargetMachine`: `InitTargetOptionsFromCodeGenFlags`), and a PTX
    `add.f32` or `sub.f32` without a rounding modifier lets ptxas fuse a
    multiply into it as well (PTX ISA, the `add` and `sub` instructions'
    notes). XLA's side read at openxla/xla 6d8ce76 (gpu_backend_lib.cc).
  - Only a multiply whose value reaches an add or a subtract can be
    contracted: `(x - b) * s` (a subtract feeding a multiply) cannot, nor a
    multiply feeding a maximum. The value is followed through ops that
    move or widen it unchanged in the loop emitter (broadcast, reshape,
    bitcast, transpose, copy, slice, concatenate, pad, reverse, convert,
    select, tuples), and from a nested fusion's operand to its parameter
    and its root to its users. A reduce or reduce-window whose reducer's
    root is an add accumulates the multiply's value by an add: listed too.

What XLA did is in the kernel's PTX (`ptx_fusable`): a contracted pair
is an `fma`; one left for ptxas is an `add`/`sub`/`mul` without a
rounding modifier. XLA:GPU's loop emitter at jaxlib 0.12.0.1 and 0.10.2
contracts neither: relu(x * s - b) on the compile-only a100 is
`mul.rn.f32` then `sub.rn.f32` (tests/testdata/kernels/<release>/
scale_shift_a100_n8.ptx.txt:
each rounds on its own, and `.rn` forbids ptxas to fuse them, PTX ISA).

Private in intent: use the package, `hloprobe.kernels` (each record's
`KernelRecord.contractible` and `.ptx_fusable`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hloprobe.ir import HloInstruction, HloModule

__all__ = ["multiply_adds", "ptx_fusable"]

# Ops a multiply's value passes through unchanged (or widened) on its way
# to an add in the loop emitter.
_THROUGH = frozenset(
  {
    "broadcast",
    "reshape",
    "bitcast",
    "transpose",
    "copy",
    "slice",
    "dynamic-slice",
    "concatenate",
    "pad",
    "reverse",
    "convert",
    "select",
    "tuple",
    "get-tuple-element",
    "parameter",  # a nested fusion's, reached from its operand
    "fusion",  # a nested fusion, reached from its root
  }
)
_ADDS = ("add", "subtract")
_ACCUMULATES = ("reduce", "reduce-window")


def _is_float(inst: HloInstruction) -> bool:
  dtype = inst.shape.dtype
  return dtype.startswith("f") or dtype.startswith("bf")


def _reducer_adds(module: HloModule, inst: HloInstruction) -> bool:
  """Whether reduce `inst`'s reducer computation's root is an add."""
  name = inst.attrs.get("to_apply", "").strip().lstrip("%")
  comp = module.computations.get(name)
  return comp is not None and comp.root.opcode == "add"


def multiply_adds(
  module: HloModule, insts: Sequence[HloInstruction]
) -> tuple[str, ...]:
  """The float multiplies among `insts` whose value reaches an add or a
  subtract (or an add-reducing reduce), each as "multiply <name> ->
  <opcode> <name>", sorted; () where none does (no fused multiply-add is
  possible in the kernel).

  Args:
    module: the parsed module `insts` belong to (for nested fusions'
      computations and reducers).
    insts: one kernel's instructions: its fused computation's and its
      nested fusions' (`kernel_reader`'s `_fused`), or the lone op.
  """
  names = {i.name for i in insts}
  users: dict[str, list[HloInstruction]] = {}
  for i in insts:
    nested = (
      module.computations.get(i.called_computations[0])
      if i.opcode == "fusion" and i.called_computations
      else None
    )
    if nested is not None:  # operand k -> parameter k; root -> i
      params = nested.parameters()
      for k, o in enumerate(i.operands):
        if k in params and params[k].name in names:
          users.setdefault(o, []).append(params[k])
      users.setdefault(nested.root.name, []).append(i)
      continue
    for o in i.operands:
      users.setdefault(o, []).append(i)
  found = set()
  for m in insts:
    if m.opcode != "multiply" or not _is_float(m):
      continue
    todo, seen = [m.name], {m.name}
    while todo:
      for u in users.get(todo.pop(), ()):
        if u.opcode in _ADDS or (
          u.opcode in _ACCUMULATES and _reducer_adds(module, u)
        ):
          found.add(f"multiply {m.name} -> {u.opcode} {u.name}")
        elif u.opcode in _THROUGH and u.name not in seen:
          seen.add(u.name)
          todo.append(u.name)
  return tuple(sorted(found))


# A PTX instruction's opcode: the first word of a line (after a label or
# a predicate guard).
_OPCODE_RE = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][\w.]*)", re.MULTILINE)
_FLOAT_TYPES = frozenset(
  {"f16", "f16x2", "bf16", "bf16x2", "f32", "f32x2", "f64"}
)
_ROUNDINGS = frozenset({"rn", "rz", "rm", "rp", "rna"})


def ptx_fusable(text: str) -> tuple[str, ...]:
  """The float opcodes of one kernel's PTX that are, or may become, a
  fused multiply-add: every `fma` (LLVM contracted or emitted one), and
  every `add`, `sub` and `mul` without a rounding modifier (ptxas may
  fuse a multiply into an add: PTX ISA, the `add` instruction's notes),
  sorted and unique; () where every float add, subtract and multiply
  rounds on its own (`.rn`, ...) and none is an fma.

  Args:
    text: one `.entry` kernel's PTX (`normalise.kernel_ptx`).
  """
  found = set()
  for op in _OPCODE_RE.findall(text):
    parts = op.split(".")
    if parts[0] not in ("fma", "add", "sub", "mul"):
      continue
    if parts[-1] not in _FLOAT_TYPES:
      continue
    if parts[0] == "fma" or not _ROUNDINGS & set(parts[1:]):
      found.add(op)
  return tuple(sorted(found))
