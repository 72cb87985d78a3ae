"""An SPMD-partitioned module executed per device: each device's shard of
the arguments, its own run of the module, collectives across the runs,
and the devices' output shards joined into the program's outputs.

XLA's SPMD partitioner (xla/service/spmd/spmd_partitioner.cc) turns a
sharded program into one program per device (header `num_partitions=N`):
its parameters are that device's shards, `partition-id` is the device's
index in the executable's device assignment, and collectives exchange
values between the devices. `execute_partitioned` runs the N programs in
N threads of one `Interpreter` each; a collective is a rendezvous of the
devices of its replica group (`threading.Barrier`), computed in numpy:

  all-reduce      the group's operands folded left to right in the
                  group's device order, by the op of `to_apply` (add,
                  multiply, maximum, minimum, and, or): what the program
                  asks; XLA:CPU's own order of the partial sums is not
                  modelled (in f32 a different order of N partial sums
                  differs by at most gamma_{N-1} times their absolute sum,
                  Higham eq. 3.5);
  all-gather      the operands concatenated along `dimensions`;
  reduce-scatter  all-reduce, then the device's block along `dimensions`;
  collective-permute  each target gets its source's operand (zeros where
                  none sends);
  all-to-all      split along `split_dimension` / `dimensions`, block j
                  to device j, concatenated along `concat_dimension`.

Replica groups (`replica_groups=`, with `use_global_device_ids` or
channel ids, as partition numbers): `{}` (all devices), explicit lists
`{{0,1},{2,3}}`, XLA's iota form `[G,S]<=[dims]T(perm)`, and the mesh form
`mesh['a'=2,'b'=4] {'b'}` (the devices of the mesh in iota order, grouped
along the axes named). Checked on jaxlib 0.12.0.1's CPU SPMD modules.

Which shard each device holds is the caller's (the shardings jax compiled
the program with, as index tuples per device: `in_indices`,
`out_indices`); this stage imports no JAX. An output shard that several
devices hold (replicated) must agree bit for bit, else it is named.

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

import numpy as np

from hloprobe.execute.interpreter import Interpreter
from hloprobe.execute.records import Execution, NotExecuted
from hloprobe.execute.values import Unsupported
from hloprobe.ir import HloModule

__all__ = [
  "Rendezvous",
  "execute_partitioned",
  "partition_count",
  "replica_groups",
]

# A device waiting longer than this at a collective gives up (a device that
# could not compute the collective's operand never arrives).
_WAIT_S = 120.0


def partition_count(module: HloModule) -> int:
  """`num_partitions=N` of the module's header; 1 where absent."""
  found = re.search(r"\bnum_partitions=([0-9]+)", module.header_attrs)
  return int(found.group(1)) if found else 1


def replica_groups(text: str | None, n: int) -> list[list[int]]:
  """The device groups of a collective's `replica_groups=` value.

  Args:
    text: the attribute's text (None or "{}": one group of all devices).
    n: the number of devices.

  Raises:
    Unsupported: a form not listed in the module docstring.
  """
  text = (text or "").strip()
  if text in ("", "{}"):
    return [list(range(n))]
  if text.startswith("{"):
    groups = re.findall(r"\{([0-9,\s]*)\}", text[1:-1])
    return [[int(v) for v in g.split(",") if v.strip()] for g in groups]
  m = re.fullmatch(r"\[([0-9,]+)\]<=\[([0-9,]+)\](?:T\(([0-9,]+)\))?", text)
  if m:
    shape = [int(v) for v in m.group(1).split(",")]
    dims = [int(v) for v in m.group(2).split(",")]
    ids = np.arange(int(np.prod(dims))).reshape(dims)
    if m.group(3):
      ids = ids.transpose([int(v) for v in m.group(3).split(",")])
    return ids.reshape(shape).tolist()
  m = re.fullmatch(r"mesh\[(.*?)\]\s*\{(.*?)\}", text)
  if m:
    axes = re.findall(r"'([^']+)'=([0-9]+)", m.group(1))
    names = [a for a, _ in axes]
    ids = np.arange(n).reshape([int(s) for _, s in axes])
    grouped = re.findall(r"'([^']+)'", m.group(2))
    if any(g not in names for g in grouped):
      raise Unsupported(f"replica_groups {text}: unknown axis")
    rest = [i for i, a in enumerate(names) if a not in grouped]
    order = rest + [names.index(g) for g in grouped]
    size = int(np.prod([ids.shape[names.index(g)] for g in grouped] or [1]))
    return ids.transpose(order).reshape(-1, size).tolist()
  raise Unsupported(f"replica_groups {text}: form not modelled")


class Rendezvous:
  """Where the N devices' runs meet at each collective."""

  def __init__(self, n: int):
    self.n = n
    self._barrier = threading.Barrier(n, timeout=_WAIT_S)
    self._values: list = [None] * n

  def exchange(self, device: int, value) -> list:
    """Every device's `value` at this collective, in device order.

    Raises:
      Unsupported: another device did not arrive (it could not compute
        its operand, or failed).
    """
    self._values[device] = value
    try:
      self._barrier.wait()
      values = list(self._values)
      self._barrier.wait()  # nobody writes the next one before all read
    except threading.BrokenBarrierError:
      raise Unsupported(
        "another device did not reach this collective"
      ) from None
    return values

  def abort(self) -> None:
    self._barrier.abort()


_FOLDS = {
  "add": np.add,
  "multiply": np.multiply,
  "maximum": np.maximum,
  "minimum": np.minimum,
  "and": np.logical_and,
  "or": np.logical_or,
}


class Collectives:
  """The collective opcodes of one device's run (`ops.Ops` calls them)."""

  def __init__(self, rendezvous: Rendezvous, device: int, module):
    self.rendezvous = rendezvous
    self.device = device
    self.module = module

  def _group(self, inst) -> list[int]:
    for group in replica_groups(
      inst.attrs.get("replica_groups"), self.rendezvous.n
    ):
      if self.device in group:
        return group
    raise Unsupported(f"device {self.device} in no replica group")

  def _fold(self, inst):
    name = inst.called_computations[0]
    root = self.module.computations[name].root.opcode
    if root not in _FOLDS:
      raise Unsupported(f"all-reduce by {root}")
    return _FOLDS[root]

  def _gathered(self, inst, operands):
    value = operands[0] if len(operands) == 1 else tuple(operands)
    every = self.rendezvous.exchange(self.device, value)
    return [every[d] for d in self._group(inst)]

  def all_reduce(self, inst, operands):
    fold, parts = self._fold(inst), self._gathered(inst, operands)
    if len(operands) > 1:
      return tuple(
        _fold_left(fold, [p[i] for p in parts]) for i in range(len(operands))
      )
    return _fold_left(fold, parts)

  def all_gather(self, inst, operands):
    dim = inst.dims_attr("dimensions")[0]
    return np.concatenate(self._gathered(inst, operands), axis=dim)

  def reduce_scatter(self, inst, operands):
    dim = inst.dims_attr("dimensions")[0]
    total = _fold_left(self._fold(inst), self._gathered(inst, operands))
    group = self._group(inst)
    block = np.array_split(total, len(group), axis=dim)
    return block[group.index(self.device)]

  def collective_permute(self, inst, operands):
    every = self.rendezvous.exchange(self.device, operands[0])
    pairs = re.findall(
      r"\{([0-9]+),([0-9]+)\}", inst.attrs.get("source_target_pairs", "")
    )
    for source, target in pairs:
      if int(target) == self.device:
        return every[int(source)]
    return np.zeros_like(operands[0])

  def all_to_all(self, inst, operands):
    if len(operands) != 1:
      raise Unsupported("tuple all-to-all")
    split = inst.attrs.get("split_dimension") or inst.attrs.get("dimensions")
    split = int(str(split).strip("{}"))
    concat = int(inst.attrs.get("concat_dimension", split))
    parts = self._gathered(inst, operands)
    group = self._group(inst)
    mine = group.index(self.device)
    return np.concatenate(
      [np.array_split(p, len(group), axis=split)[mine] for p in parts],
      axis=concat,
    )


def _fold_left(fold, parts):
  total = parts[0]
  for p in parts[1:]:
    total = fold(total, p).astype(total.dtype)
  return total


def execute_partitioned(
  module: HloModule,
  arguments: Sequence[np.ndarray],
  in_indices: Sequence[Sequence[tuple]],
  out_indices: Sequence[Sequence[tuple]],
  out_shapes: Sequence[tuple[int, ...]],
  **options,
) -> Execution:
  """Runs an SPMD-partitioned module on every device and joins the outputs.

  Args:
    module: the per-device module (header `num_partitions=N`).
    arguments: the program's whole arguments, one array per parameter.
    in_indices: per parameter, per device (partition 0..N-1), the index
      tuple (of slices) of that device's shard of the argument.
    out_indices: per output leaf, per device, the index tuple of the
      device's shard of the whole output.
    out_shapes: the whole outputs' shapes.
    **options: `execute_module`'s algorithms, default_algorithm, widen.

  Returns:
    The `Execution`: the joined outputs (None when any device could not
    compute something), what was not executed (each device's, once), the
    gemms of device 0.

  Raises:
    ExecutionError: a device's shard is not its parameter's shape.
  """
  n = partition_count(module)
  rendezvous = Rendezvous(n)
  results: list = [None] * n
  errors: list = [None] * n

  def run(device: int):
    interp = Interpreter(
      module,
      options.get("algorithms") or {},
      options.get("default_algorithm", "F32"),
      options.get("widen", False),
    )
    interp.partition = device
    interp.collectives = Collectives(rendezvous, device, module)
    try:
      shards = [a[idx[device]] for a, idx in zip(arguments, in_indices)]
      results[device] = interp.run(shards)
    except BaseException as e:  # re-raised in the caller's thread
      errors[device] = e
    if errors[device] is not None or results[device].outputs is None:
      rendezvous.abort()

  threads = [threading.Thread(target=run, args=(d,)) for d in range(n)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  for e in errors:
    if e is not None:
      raise e
  missing: list[NotExecuted] = []
  for r in results:
    for x in r.not_executed:
      if x not in missing and "another device" not in x.reason:
        missing.append(x)
  if missing or any(r.outputs is None for r in results):
    return Execution(None, tuple(missing), results[0].gemms)
  outputs = []
  for leaf, (indices, shape) in enumerate(zip(out_indices, out_shapes)):
    first = results[0].outputs[leaf]
    whole = np.zeros(shape, first.dtype)
    seen = np.zeros(shape, bool)
    for device, idx in enumerate(indices):
      shard = results[device].outputs[leaf]
      held = whole[idx]
      if seen[idx].any() and not np.array_equal(
        held[seen[idx]], shard[seen[idx]]
      ):
        missing.append(
          NotExecuted(
            f"output {leaf}",
            "replicated shard",
            f"device {device}'s copy differs from another device's",
          )
        )
      whole[idx] = shard
      seen[idx] = True
    outputs.append(whole)
  if missing:
    return Execution(None, tuple(missing), results[0].gemms)
  return Execution(tuple(outputs), (), results[0].gemms)
