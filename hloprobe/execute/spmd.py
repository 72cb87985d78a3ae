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

import dataclasses
import re
import threading
from collections.abc import Sequence

import numpy as np

from hloprobe.execute import interpreter
from hloprobe.execute.interpreter import Interpreter
from hloprobe.execute.records import Execution, NotExecuted

# A collective's reducer root opcode -> numpy ufunc: reduce's own table.
from hloprobe.execute.reductions import _FAST_REDUCERS as _FOLDS
from hloprobe.execute.values import Unsupported
from hloprobe.ir import HloModule

__all__ = [
  "MeshSharding",
  "execute_module",
  "Rendezvous",
  "mesh_indices",
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


def _laid_out(sharding, shape, dims, n, what) -> list[tuple[slice, ...]]:
  """Each device's index into an array of `shape` under `sharding`,
  checked against the module's shard dimensions `dims`."""
  shape, dims = tuple(shape), tuple(dims)
  if sharding is None:
    if shape != dims:
      raise Unsupported(
        f"{what}: sharded by XLA's propagation, not by the program"
      )
    return [tuple(slice(0, s) for s in shape)] * n
  if isinstance(sharding, tuple):
    sharding = MeshSharding(*sharding)
  indices = shard_indices(sharding, shape, n)
  if len(indices) != n:
    raise Unsupported(f"{what}: a mesh of {len(indices)}, not {n} devices")
  got = tuple(s.stop - s.start for s in indices[0])
  if got != dims:
    raise Unsupported(
      f"{what}: {sharding} gives shards {list(got)}, the module's are "
      f"{list(dims)}"
    )
  return indices


def _fold_left(fold, parts):
  total = parts[0]
  for p in parts[1:]:
    total = fold(total, p).astype(total.dtype)
  return total


def execute_module(
  module: HloModule,
  arguments: Sequence[np.ndarray],
  *,
  algorithms=None,
  default_algorithm: str = "F32",
  widen: bool = False,
  shardings: tuple | None = None,
) -> Execution:
  """`interpreter.execute_module` (its docstring says all), or with
  `shardings` an SPMD-partitioned module run per device and joined
  (`execute_partitioned`).

  Args:
    module, arguments, algorithms, default_algorithm, widen: as
      `interpreter.execute_module`'s; `arguments` are then the program's
      whole arguments.
    shardings: None for a one-device module; for a partitioned one
      (in_shardings, out_shardings, out_shapes) or (..., kept), as
      `execute_partitioned` takes them.

  Raises:
    ExecutionError: as `interpreter.execute_module`.
    Unsupported: a partitioned module without `shardings`, or shardings
      that do not lay it out (named).
  """
  options = dict(
    algorithms=algorithms, default_algorithm=default_algorithm, widen=widen
  )
  if shardings is None:
    if partition_count(module) > 1:
      raise Unsupported(
        f"an SPMD-partitioned module ({partition_count(module)} devices) "
        "needs its shardings"
      )
    return interpreter.execute_module(module, arguments, **options)
  ins, outs, shapes, *kept = shardings
  return execute_partitioned(
    module,
    arguments,
    ins,
    outs,
    shapes,
    kept=kept[0] if kept else None,
    **options,
  )


def execute_partitioned(
  module: HloModule,
  arguments: Sequence[np.ndarray],
  in_shardings,
  out_shardings,
  out_shapes: Sequence[tuple[int, ...]],
  *,
  kept: Sequence[int] | None = None,
  **options,
) -> Execution:
  """Runs an SPMD-partitioned module on every device and joins the outputs.

  Args:
    module: the per-device module (header `num_partitions=N`).
    arguments: the program's whole arguments, one array per parameter.
    in_shardings: per parameter, its argument's sharding: an HloSharding
      text ("{devices=[1,8]<=[8]}"), a `MeshSharding` or its fields
      (axes, sizes, names), or None (replicated; the shard must then be
      the whole argument). Or the program's unoptimized module (an
      `HloModule`): its own shardings (`program_shardings`), parameter
      `kept[i]` of it for the module's parameter i, and its outputs'
      (`out_shardings` is then not read).
    out_shardings: per output leaf, its sharding, as `in_shardings`.
    out_shapes: the whole outputs' shapes.
    kept: with a program module, which of its parameters the module
      keeps (jit drops unused ones); None: all.
    **options: `execute_module`'s algorithms, default_algorithm, widen.

  Returns:
    The `Execution`: the joined outputs (None when any device could not
    compute something), what was not executed (each device's, once), the
    gemms of device 0.

  Raises:
    ExecutionError: a device's shard is not its parameter's shape.
    Unsupported: a sharding not modelled, or one that does not give the
      module's shapes (named: "parameter 0: ...").
  """
  n = partition_count(module)
  if isinstance(in_shardings, HloModule):
    ins, out_shardings = program_shardings(in_shardings)
    in_shardings = [ins[k] for k in (range(len(ins)) if kept is None else kept)]
  params = module.entry.parameters()
  if len(in_shardings) != len(params) or len(arguments) != len(params):
    raise Unsupported(
      f"parameters: the module has {len(params)}, given "
      f"{len(arguments)} arguments and {len(in_shardings)} shardings"
    )
  root = module.entry.root.shape
  leaves = root.elements if root.is_tuple else (root,)
  if len(leaves) != len(out_shapes) or len(out_shardings) != len(out_shapes):
    raise Unsupported(
      f"outputs: the module has {len(leaves)}, the program {len(out_shapes)}"
    )
  in_indices = [
    _laid_out(sh, np.shape(a), params[i].shape.dims, n, f"parameter {i}")
    for i, (sh, a) in enumerate(zip(in_shardings, arguments))
  ]
  out_indices = [
    _laid_out(sh, shape, leaf.dims, n, f"output {j}")
    for j, (sh, shape, leaf) in enumerate(
      zip(out_shardings, out_shapes, leaves)
    )
  ]
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


@dataclasses.dataclass(frozen=True)
class MeshSharding:
  """A sharding over a named mesh of iota devices (jax's NamedSharding,
  Shardy's `#sdy.sharding`): per array dimension, the mesh axes it is
  split over (major first).

  Attributes:
    axes: per dimension, a tuple of axis names (() for not split).
    sizes: the mesh's axis sizes.
    names: the mesh's axis names.
  """

  axes: tuple[tuple[str, ...], ...]
  sizes: tuple[int, ...]
  names: tuple[str, ...]


def mesh_indices(
  sharding: MeshSharding, shape: Sequence[int]
) -> list[tuple[slice, ...]]:
  """Each partition's index under a `MeshSharding`: partition p is the
  mesh's p-th device in row-major order (jit's device assignment is
  `mesh.devices.flat`; a mesh of iota devices), its coordinates
  `unravel_index(p, sizes)`; a dimension split over axes (a, b) is cut
  into size(a)*size(b) blocks, block coord(a)*size(b) + coord(b)
  (jax/_src/named_sharding.py; Shardy's dimension shardings likewise).

  Raises:
    Unsupported: an unknown axis, more dimensions than the array's, or a
      dimension the blocks do not divide (padded shards: not modelled).
  """
  sizes, names = sharding.sizes, sharding.names
  if len(sharding.axes) > len(shape):
    raise Unsupported(f"sharding of {len(sharding.axes)} dimensions")
  axes = tuple(sharding.axes) + ((),) * (len(shape) - len(sharding.axes))
  found = []
  for p in range(int(np.prod(sizes))):
    coords = dict(zip(names, np.unravel_index(p, sizes)))
    index = []
    for dim_axes, s in zip(axes, shape):
      count, block = 1, 0
      for a in dim_axes:
        if a not in coords:
          raise Unsupported(f"sharding over unknown mesh axis {a!r}")
        size = sizes[names.index(a)]
        block, count = block * size + int(coords[a]), count * size
      if s % count:
        raise Unsupported(f"{s} rows in {count} shards (padded)")
      index.append(slice(block * s // count, (block + 1) * s // count))
    found.append(tuple(index))
  return found


_SDY_MESH = re.compile(r"(\w+)\s*=\s*#sdy\.mesh<\[([^\]]*)\]([^>]*)>")
_SDY_VALUE = re.compile(r"<@(\w+),\s*\[(.*?)\]>")


def _sdy_meshes(module: HloModule) -> dict:
  """Shardy's meshes of the module header: name -> (sizes, names)."""
  found = {}
  for name, axes, rest in _SDY_MESH.findall(module.header_attrs):
    if "device_ids" in rest:
      continue  # devices not in iota order: not modelled
    pairs = re.findall(r'\\?"(\w+)\\?"=([0-9]+)', axes)
    found[name] = (tuple(int(s) for _, s in pairs), tuple(a for a, _ in pairs))
  return found


def _sdy_shardings(text: str, meshes: dict) -> list:
  """The `MeshSharding`s of a `#sdy.sharding_per_value<[...]>` text
  (None for a value whose mesh or dimension form is not modelled)."""
  found = []
  for mesh, dims in _SDY_VALUE.findall(text):
    parts = re.findall(r"\{([^}]*)\}", dims)
    if mesh not in meshes or ":(" in dims or "?" in dims:
      found.append(None)
      continue
    sizes, names = meshes[mesh]
    axes = tuple(tuple(re.findall(r'\\?"(\w+)\\?"', d)) for d in parts)
    found.append(MeshSharding(axes, sizes, names))
  return found


_TILED = re.compile(
  r"\{devices=\[([0-9,]+)\]"
  r"(?:<=\[([0-9,]+)\](?:T\(([0-9,]+)\))?|([0-9,]+))"
  r"(\s+last_tile_dim_replicate)?\}"
)


def shard_indices(
  sharding, shape: Sequence[int], n: int
) -> list[tuple[slice, ...]]:
  """Each device's index into an array of `shape` under an HloSharding.

  The tile assignment (xla/hlo/ir/tile_assignment.h: the iota form
  `[tiles]<=[dims]T(perm)` or an explicit device list) maps tile
  coordinates to devices (partition numbers); with
  `last_tile_dim_replicate` its last dimension lists the devices holding
  the same tile. Device d's index is its tile's block: rows
  t*s/T .. (t+1)*s/T of a dimension of size s cut in T tiles.

  Args:
    sharding: e.g. "{devices=[1,8]<=[8]}", "{replicated}", or a
      `MeshSharding` (`mesh_indices`).
    shape: the whole array's dimensions.
    n: the number of devices.

  Raises:
    Unsupported: another form (maximal, manual, subgroups), a device not
      listed, or a dimension the tiles do not divide (XLA pads such
      shards; not modelled).
  """
  if isinstance(sharding, MeshSharding):
    return mesh_indices(sharding, shape)
  text = sharding.strip()
  whole = tuple(slice(0, s) for s in shape)
  if text == "{replicated}":
    return [whole] * n
  m = _TILED.fullmatch(text)
  if not m:
    raise Unsupported(f"sharding {text}: form not modelled")
  tiles = [int(v) for v in m.group(1).split(",")]
  if m.group(2):
    dims = [int(v) for v in m.group(2).split(",")]
    ids = np.arange(int(np.prod(dims))).reshape(dims)
    if m.group(3):
      ids = ids.transpose([int(v) for v in m.group(3).split(",")])
    ids = ids.reshape(tiles)
  else:
    ids = np.array([int(v) for v in m.group(4).split(",")]).reshape(tiles)
  if m.group(5):
    tiles = tiles[:-1]
  else:
    ids = ids[..., None]
  if len(tiles) != len(shape):
    raise Unsupported(f"sharding {text}: {len(shape)} dimensions")
  found: dict[int, tuple[slice, ...]] = {}
  for coords in np.ndindex(*tiles):
    index = []
    for c, t, s in zip(coords, tiles, shape):
      if s % t:
        raise Unsupported(f"sharding {text}: {s} rows in {t} tiles (padded)")
      index.append(slice(c * s // t, (c + 1) * s // t))
    for device in ids[coords].ravel():
      found[int(device)] = tuple(index)
  if sorted(found) != list(range(n)):
    raise Unsupported(f"sharding {text}: not every one of {n} devices")
  return [found[d] for d in range(n)]


def program_shardings(module: HloModule):
  """The shardings a program's unoptimized module asks for: per entry
  parameter and per output leaf, the `sharding=` of the `Sharding` custom
  call that takes it (a parameter's first such user, through one `call`
  of a nested jit; an output: the root, through a tuple or a `call`), or
  the Shardy sharding (`MeshSharding`) of a shard_map's
  `xla.sdy.GlobalToLocalShape` / `LocalToGlobalShape` call on a mesh of
  the header's `xla.sdy.meshes`; None where the program names none (XLA's
  propagation chooses it) or in a form not modelled.

  Returns:
    (parameter shardings in parameter order, output leaf shardings).
  """
  comps = module.computations
  meshes = _sdy_meshes(module)

  def sdy(inst, key):
    text = (inst.attrs.get("frontend_attributes") or "").replace('\\"', '"')
    m = re.search(key + r'="(#sdy\.sharding_per_value<\[.*?\]>)"', text)
    return _sdy_shardings(m.group(1), meshes) if m else []

  def users(comp, name):
    return [i for i in comp.instructions if name in i.operands]

  def of_param(comp, name, depth=0):
    for user in users(comp, name):
      target = user.attrs.get("custom_call_target", "").strip('"')
      if user.opcode == "custom-call" and target == "Sharding":
        return user.attrs.get("sharding")
      if target == "xla.sdy.GlobalToLocalShape":  # a shard_map's operand
        found = sdy(user, "xla.sdy.in_shardings")
        at = user.operands.index(name)
        return found[at] if at < len(found) else None
      if user.opcode == "call" and depth < 2:
        callee = comps[user.called_computations[0]]
        param = callee.parameters()[user.operands.index(name)]
        found = of_param(callee, param.name, depth + 1)
        if found is not None:
          return found
    return None

  def of_value(comp, inst, depth=0):
    target = inst.attrs.get("custom_call_target", "").strip('"')
    if inst.opcode == "custom-call" and target == "Sharding":
      return [inst.attrs.get("sharding")]
    if target == "xla.sdy.LocalToGlobalShape":  # a shard_map's result
      count = len(inst.shape.elements) if inst.shape.is_tuple else 1
      found = sdy(inst, "xla.sdy.out_shardings")
      return found if len(found) == count else [None] * count
    if inst.opcode == "tuple":
      by = comp.by_name()
      return [s for o in inst.operands for s in of_value(comp, by[o], depth)]
    if inst.opcode == "call" and depth < 2:
      callee = comps[inst.called_computations[0]]
      return of_value(callee, callee.root, depth + 1)
    count = len(inst.shape.elements) if inst.shape.is_tuple else 1
    return [None] * count

  entry = module.entry
  params = entry.parameters()
  ins = [of_param(entry, params[i].name) for i in sorted(params)]
  return ins, of_value(entry, entry.root)
