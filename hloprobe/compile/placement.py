"""Where a case's arguments go: compile-only GPU topologies, device lists
and the shardings of a sharded case.

A compile-only GPU target is `jax.experimental.topologies.
get_topology_desc(name, "cuda", target_config=TEXT, topology="1x1xN")`:
one slice, one host, N devices (checked without a GPU on the CUDA plugins
of jaxlib 0.10.2 and 0.12.0.1, an A100 with N = 8: tests/testdata/
sharded; 0.12.0.1 also accepts "1xNx1" and "Nx1x1", but gives each of
their devices its own process index).
A sharded case (`Case.mesh_shape`) gets its `Mesh` built here, against
the target's first N devices, each argument a `NamedSharding` of its
`PartitionSpec`; the CPU's N devices are XLA's host devices, which exist
only when `--xla_force_host_platform_device_count=N` was in XLA_FLAGS
before jax started (`Case.host_device_flag`; a sweep's workers get it).

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import numpy as np
from jax.experimental import topologies

from hloprobe import startup
from hloprobe.compile import compat
from hloprobe.compile.case_model import Case
from hloprobe.compile.targets import Target, drop_field, parse_unknown_field_log
from hloprobe.errors import CaseError, TargetError, first_line

__all__ = [
  "LoadedTopology",
  "devices_for",
  "load_topology",
  "own_mesh_devices",
  "shardings",
]


@dataclasses.dataclass(frozen=True)
class LoadedTopology:
  """A compile-only GPU topology.

  Attributes:
    topology: the `jax.experimental.topologies` description.
    dropped_fields: config fields removed so the installed proto parses it,
      as "Message.field", in the order removed.
  """

  topology: object
  dropped_fields: tuple[str, ...]


@functools.lru_cache(maxsize=32)
def load_topology(
  name: str, config_text: str, devices: int = 1
) -> LoadedTopology:
  """Loads a GpuTargetConfigProto, dropping fields the proto does not know.

  Args:
    name: the target's name.
    config_text: its GpuTargetConfigProto text.
    devices: how many devices the topology has ("1x1x<devices>").

  Raises:
    TargetError: XLA rejects the config for another reason, or protobuf's
      log does not name the field (e.g. TF_CPP_MIN_LOG_LEVEL >= 3 hid it).
  """
  dropped: list[str] = []
  for _ in range(256):
    with startup.captured_stderr() as log:
      try:
        topo = topologies.get_topology_desc(
          name, "cuda", target_config=config_text, topology=f"1x1x{devices}"
        )
      except compat.runtime_error_type() as e:
        error = e
      except NotImplementedError as e:  # "topology not implemented for cuda"
        if compat.cuda_plugin_installed() and not compat.rules_checked():
          raise TargetError(
            f"target {name!r}: no compile-only GPU in jaxlib "
            f"{compat.installed_jaxlib()} ({e})"
          ) from None
        raise TargetError(
          f"target {name!r}: the CUDA plugin is not loaded ({e}); install "
          "jax-cuda12-plugin, and without a CUDA runtime set "
          "JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 before JAX starts"
        ) from None
      else:
        return LoadedTopology(topo, tuple(dropped))
    field = parse_unknown_field_log(log[0])
    if field is None:
      said = _last_line(log[0]) or "nothing (TF_CPP_MIN_LOG_LEVEL >= 3?)"
      why = first_line(error, with_type=False)
      raise TargetError(
        f"target {name!r}: XLA rejected its config: {why}; "
        f"protobuf said: {said}"
      )
    config_text = drop_field(config_text, field)
    dropped.append(field.qualified_name)
  raise TargetError(
    f"target {name!r}: gave up after dropping {len(dropped)} fields"
  )


def _last_line(text: str) -> str:
  lines = [line for line in text.strip().splitlines() if line.strip()]
  return lines[-1] if lines else ""


def devices_for(target: Target, count: int = 1) -> list:
  """The first `count` devices of a target (its arguments go there).

  Raises:
    TargetError: no such device, or fewer than `count`.
  """
  if target.platform == "cpu":
    found = jax.devices("cpu")
    how = (
      "set XLA_FLAGS=--xla_force_host_platform_device_count="
      f"{count} before jax starts (a sweep's workers do)"
    )
  elif target.compile_only:
    loaded = load_topology(target.name, target.config_text, count)
    found, how = loaded.topology.devices, "the topology gave fewer"
  else:
    try:
      found = jax.devices("cuda")
    except RuntimeError as e:
      raise TargetError(
        f"target {target.name!r}: no CUDA device attached ({e})"
      ) from e
    how = "attach more GPUs or sweep a compile-only target"
  if len(found) < count:
    raise TargetError(
      f"target {target.name!r}: the case needs {count} devices, this "
      f"process has {len(found)}; {how}"
    )
  return list(found[:count])


def shardings(case: Case, args: tuple, devices: list):
  """(each argument's sharding, the output's sharding or None).

  No mesh: `SingleDeviceSharding` on the first device for every argument
  and no output sharding (`compile.lower_case` leaves them uncommitted for
  a program that shards itself: `own_mesh_devices`). A mesh
  (`case.mesh_shape`): `NamedSharding`s of the case's
  PartitionSpecs on a `Mesh` of `devices`; `out_specs` one PartitionSpec
  or a pytree of them (as `jax.jit`'s `out_shardings`: a tuple for a
  tuple output), so the output's sharding is a pytree of the same
  structure.

  Args:
    case: the case (its mesh_shape, mesh_axes, in_specs, out_specs).
    args: its arguments (one sharding each; only their count is used).
    devices: the devices to place on (`devices_for`): the first alone, or
      prod(mesh_shape) of them for a mesh.

  Raises:
    CaseError: `in_specs` has another length than `args`.
  """
  if case.mesh_shape is None:
    one = jax.sharding.SingleDeviceSharding(devices[0])
    return (one,) * len(args), None
  mesh = jax.sharding.Mesh(
    np.array(devices).reshape(case.mesh_shape), case.mesh_axes
  )
  spec = jax.sharding.PartitionSpec
  named = functools.partial(jax.sharding.NamedSharding, mesh)
  ins = case.in_specs or (spec(),) * len(args)
  if len(ins) != len(args):
    raise CaseError(
      f"case {case.name!r}: in_specs has {len(ins)} entries for "
      f"{len(args)} arguments"
    )
  outs = case.out_specs if case.out_specs is not None else spec()
  is_spec = lambda p: isinstance(p, spec)
  out = jax.tree.map(named, outs, is_leaf=is_spec)
  return tuple(named(p) for p in ins), out


def _mesh_size(mesh) -> int:
  """A `Mesh`'s device count; 1 for None or another object."""
  shape = getattr(mesh, "shape", None)
  return int(np.prod(list(dict(shape).values()))) if shape else 1


def _walk_meshes(jaxpr) -> int:
  """The largest mesh a jaxpr's equations name (sharding constraints, a
  jit's in/out shardings, a shard_map), 1 for none."""
  found = 1
  for eqn in jaxpr.eqns:
    p = eqn.params
    if "sharding" in p:
      found = max(found, _mesh_size(getattr(p["sharding"], "mesh", None)))
    if "mesh" in p:
      found = max(found, _mesh_size(p["mesh"]))
    for key in ("in_shardings", "out_shardings"):
      for s in p.get(key) or ():
        found = max(found, _mesh_size(getattr(s, "mesh", None)))
    for sub in compat.JAXPR_API.jaxprs_in_params(p):
      found = max(found, _walk_meshes(getattr(sub, "jaxpr", sub)))
  return found


def own_mesh_devices(case: Case, args: tuple) -> int:
  """How many devices a program without `Case.mesh_shape` shards itself
  over (a `Mesh` it builds: `with_sharding_constraint` inside jit, a
  jit's `in_shardings`, a `shard_map`), read from its jaxpr traced on
  this process's devices (the CPU's N host devices, as a user runs it);
  1 when it names none, or for a case with a mesh (placed by `shardings`).
  """
  if case.mesh_shape is not None or len(jax.devices("cpu")) < 2:
    return 1
  specs = jax.tree_util.tree_map(
    lambda a: jax.ShapeDtypeStruct(np.shape(a), a.dtype), tuple(args)
  )
  try:
    closed = jax.make_jaxpr(case.fn)(*specs)
  except Exception:  # the compile names what is wrong with the program
    return 1
  return _walk_meshes(closed.jaxpr)
