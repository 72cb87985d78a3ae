"""Collectives that change a site's order of summation (sharded programs).

A program sharded over N devices is compiled per device: XLA's SPMD
partitioner (xla/service/spmd/spmd_partitioner.cc, `SpmdPartitioner`;
the dot rules in xla/service/spmd/dot_handler.cc) rewrites a dot whose
contracting dimension is sharded into a per-device dot over K / N of
the products, followed by a collective that adds the N partial sums: an
`all-reduce` when the result is replicated, a `reduce-scatter` when the
result is sharded. Either changes the order of the additions (N partial
sums of K / N products, added across devices), which no single-device
dot of length K has. The optimized module says so in its header
(`num_partitions=N`) and in the collective's `replica_groups`, printed
by XLA (xla/hlo/ir/hlo_instruction.cc, `ReplicaGroupsToString` and
`CollectiveDeviceList::ToString`) as a list (`{{0,1,...,7}}`, jaxlib
0.10.2), an iota list (`[1,8]<=[8]`) or, on jaxlib 0.12.0.1, a mesh and
its reduced axes (`mesh['axis_0'=8] {'axis_0'}`), all checked on the CPU
and a compile-only A100 with 8 devices.

`collective_after` finds the collective that consumes a site's result:
from the site's outermost carrier (its kernel), through the instructions
that only move or convert values (bitcast, copy, reshape, transpose,
convert, get-tuple-element, a loop fusion), at most `_MAX_HOPS` of them.

Private in intent: use the package, `hloprobe.sites`.
"""

from __future__ import annotations

import math
import re

from hloprobe.ir import HloInstruction, HloModule
from hloprobe.sites.site_fate import Collective

__all__ = ["collective_after"]

# Collectives that add partial results across devices (their async forms
# as XLA:GPU prints them: `all-reduce-start`, `reduce-scatter-start`
# (jaxlib 0.10.2), or an `async-start` whose
# called computation holds the collective).
_SUMMING = {
  "all-reduce": "all-reduce",
  "all-reduce-start": "all-reduce",
  "reduce-scatter": "reduce-scatter",
  "reduce-scatter-start": "reduce-scatter",
}
# Instructions a result may pass through on its way to the collective.
_PASS_THROUGH = frozenset(
  {
    "bitcast",
    "copy",
    "reshape",
    "transpose",
    "convert",
    "get-tuple-element",
    "fusion",
  }
)
_MAX_HOPS = 4
_MESH_RE = re.compile(r"mesh\[([^\]]*)\]\s*\{([^}]*)\}")
_MESH_AXIS_RE = re.compile(r"'([^']+)'\s*=\s*(\d+)")
_IOTA_RE = re.compile(r"\[(\d+),(\d+)\]<=")
_LIST_RE = re.compile(r"\{\{([^}]*)\}")


def group_size(replica_groups: str | None, partitions: int) -> int:
  """How many devices one group of a collective's `replica_groups` has.

  Args:
    replica_groups: the attribute's text, in any of the three forms of
      the module docstring; None or "{}" (one group of every device).
    partitions: the module's `HloModule.partition_count`, for the empty form.

  Returns:
    The devices each group adds over, e.g. 8.
  """
  text = (replica_groups or "").strip()
  if m := _MESH_RE.search(text):
    sizes = {a: int(n) for a, n in _MESH_AXIS_RE.findall(m.group(1))}
    reduced = re.findall(r"'([^']+)'", m.group(2))
    return math.prod(sizes.get(a, 1) for a in reduced)
  if m := _IOTA_RE.search(text):
    return int(m.group(2))
  if m := _LIST_RE.search(text):
    return len([d for d in m.group(1).split(",") if d.strip()])
  return partitions


def _summing_op(module: HloModule, inst: HloInstruction):
  """(the kind, the collective instruction) when `inst` is one, else None."""
  if inst.opcode in _SUMMING:
    return _SUMMING[inst.opcode], inst
  if inst.opcode == "async-start":
    for name in inst.called_computations:
      comp = module.computations.get(name.lstrip("%"))
      for inner in comp.instructions if comp else ():
        if inner.opcode in _SUMMING:
          return _SUMMING[inner.opcode], inner
  return None


def _reduction(module: HloModule, inst: HloInstruction) -> str:
  """The opcode of the collective's `to_apply` root, e.g. "add"."""
  name = (inst.attrs.get("to_apply") or "").lstrip("%")
  comp = module.computations.get(name)
  return comp.root.opcode if comp else "unknown"


def collective_after(
  module: HloModule, outermost: HloInstruction
) -> Collective | None:
  """The collective that adds a site's partial results (a `Collective`).

  Args:
    module: the optimized module.
    outermost: the site's outermost carrier (its fusion or custom call,
      or the instruction itself).

  Returns:
    Its kind, reduction, devices per group and name, e.g. ("all-reduce",
    "add", 8, "all-reduce.3") (report words it "all-reduce over 8 devices
    (all-reduce.3)"); None when no such collective consumes the result
    within `_MAX_HOPS` instructions (an unsharded program has none).
  """
  for comp in module.computations.values():
    if any(i is outermost for i in comp.instructions):
      break
  else:
    return None
  users: dict[str, list[HloInstruction]] = {}
  for inst in comp.instructions:
    for operand in inst.operands:
      users.setdefault(operand.lstrip("%"), []).append(inst)
  frontier = [outermost]
  for _ in range(_MAX_HOPS):
    nxt = []
    for inst in frontier:
      for user in users.get(inst.name, ()):
        found = _summing_op(module, user)
        if found is not None:
          kind, op = found
          how = _reduction(module, op)
          size = group_size(
            op.attrs.get("replica_groups"), module.partition_count
          )
          return Collective(kind, how, size, op.name)
        if user.opcode in _PASS_THROUGH:
          nxt.append(user)
    frontier = nxt
  return None
