"""The `Case` record: a JAX program and how a sweep sizes its inputs.

A case is described, not run. Two ways to size it:
  batch cases (`swept_size=None`): `make_inputs()` builds the full-size
    inputs once and each batch size n takes the first n elements of every
    batched argument along its axis (`in_axes`, as `jax.vmap`'s).
  sized cases (`swept_size="K"`, any name): `make_inputs(n)` builds the
    inputs at size n (e.g. a contraction length); nothing is cut.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax
import numpy as np

from hloprobe.errors import CaseError

__all__ = ["Case", "ReportedError"]


@dataclasses.dataclass(frozen=True, slots=True)
class ReportedError:
  """What a case's public report says it saw (the report, not hloprobe).

  Attributes:
    precisions: matmul precisions under which row 0 moved with batch size.
    device: the GPU it was seen on, e.g. "A100".
    compute_capability: that GPU's, e.g. "8.0"; the report is related to
      targets of this compute capability only.
    jaxlib: the reporter's jaxlib version.
    source: where the report is kept.
  """

  precisions: tuple[str, ...]
  device: str
  compute_capability: str
  jaxlib: str
  source: str


@dataclasses.dataclass(frozen=True)
class Case:
  """A JAX program to sweep over batch sizes (or another named size).

  Attributes:
    name: the case's name, e.g. "seed_mlp" (letters, digits, `_`, `-`).
    description: one line on what it is and where it comes from.
    fn: a pure JAX function of `*args`, not jitted; returns an array or
      any pytree of arrays (each leaf is compared with float64).
    make_inputs: batch cases: `make_inputs()` returns the full-size
      arguments, a tuple of numpy arrays or pytrees of them; sized cases:
      `make_inputs(n)` returns the arguments at size n. Deterministic
      (fixed seeds).
    in_axes: batch cases: for each argument, the axis cut to the batch
      size, or None for an argument every batch size shares (as
      `jax.vmap`'s `in_axes`; an int applies to every array of a pytree
      argument). None (the default) means `batch_axis` of argument
      `batch_arg` and None for the others.
    batch_arg, batch_axis: the shorthand used when `in_axes` is None.
    output_axis: which axis of each output leaf follows the batch: an int
      for every leaf, or a tuple with one int or None per leaf (in
      `jax.tree_util.tree_leaves` order). None: the leaf is not batched
      (a scalar loss, or a sized case's output); its "row 0" is all of it.
    rows_independent: the program maps batch elements independently (as a
      vmap does), so the float64 reference and the fixed-order emulations
      may be computed once at the largest batch size and sliced. A sweep
      checks it (the reference at the smallest size against the slice of
      the largest) and fails the case's configs if it does not hold.
      False (the default): everything is computed at each batch size.
    swept_size: None for a batch case; else the name of the size
      `make_inputs(n)` takes (e.g. "K" for a contraction length).
    round_reference: compare each output leaf with the float64 reference
      rounded to the leaf's own dtype (for reports that compare against a
      correctly rounded result); False: against the float64 value.
    url: the public report the case comes from, if any.
    reported: what that report saw, where hloprobe should relate to it.
    mesh_shape: a sharded program's device mesh, as the size of each mesh
      axis, e.g. (8,); None (the default): one device, no shardings. A
      `jax.sharding.Mesh` is not kept here (a Case goes to worker
      processes, pickled): `lowering.compile_case` builds it against the
      target's own devices (`device_count` of them).
    mesh_axes: the mesh axes' names, one per `mesh_shape` entry, e.g.
      ("k",); required with `mesh_shape`.
    in_specs: one `jax.sharding.PartitionSpec` per argument (applied to
      every array of a pytree argument), naming `mesh_axes`; None with a
      mesh: every argument replicated.
    out_specs: the output's `PartitionSpec` (every leaf), or a pytree of
      them shaped as the output or a prefix of it (as `jax.jit`'s
      `out_shardings`, e.g. `(P(), P("k"))` for a pair); None with a
      mesh: replicated (`P()`), so a contraction over a sharded dimension
      ends in an all-reduce of the partial sums.
    fixed_size: the one batch size (or size) the case runs at, whatever
      the sweep's sizes (a module file's case: its shapes are fixed); None
      (the default): the sweep's batch sizes.
    notes: sentences a report shows about the case, e.g. where its inputs
      came from (a module file's case); () for none.
  """

  name: str
  description: str
  fn: Callable
  make_inputs: Callable[..., tuple]
  in_axes: tuple[int | None, ...] | None = None
  batch_arg: int = 0
  batch_axis: int = 0
  output_axis: int | None | tuple[int | None, ...] = 0
  rows_independent: bool = False
  swept_size: str | None = None
  round_reference: bool = False
  url: str | None = None
  reported: ReportedError | None = None
  mesh_shape: tuple[int, ...] | None = None
  mesh_axes: tuple[str, ...] | None = None
  in_specs: tuple | None = None
  out_specs: object | None = None
  fixed_size: int | None = None
  notes: tuple[str, ...] = ()

  def __post_init__(self):
    """Checks the mesh fields agree (see the attributes).

    Raises:
      CaseError: `mesh_axes` missing or of another length than
        `mesh_shape`, a mesh axis of size < 1, or shardings without a mesh.
    """
    if self.mesh_shape is None:
      if self.mesh_axes or self.in_specs or self.out_specs is not None:
        raise CaseError(
          f"case {self.name!r}: mesh_axes, in_specs or out_specs given "
          "without mesh_shape; e.g. mesh_shape=(8,), mesh_axes=('k',)"
        )
      return
    shape, axes = tuple(self.mesh_shape), tuple(self.mesh_axes or ())
    if len(axes) != len(shape) or any(int(n) < 1 for n in shape):
      raise CaseError(
        f"case {self.name!r}: mesh_shape {shape} needs one name per axis "
        f"and sizes >= 1 (mesh_axes {axes}); e.g. mesh_shape=(8,), "
        "mesh_axes=('k',)"
      )

  @property
  def device_count(self) -> int:
    """How many devices the program runs on: the mesh's size, or 1."""
    return math.prod(self.mesh_shape) if self.mesh_shape else 1

  @property
  def host_device_flag(self) -> str:
    """The XLA_FLAGS word that gives a worker's CPU the program's
    `device_count` host devices.

    E.g. 8 -> "--xla_force_host_platform_device_count=8"; "" for 1 (XLA's
    default). XLA reads it once, when the CPU client starts
    (xla/debug_options_flags.cc; jax's `xla_bridge` makes the CPU client
    with that many devices), so it must be in XLA_FLAGS before jax starts:
    a sharded case's configs go to workers of their own, with it among
    their flags (`engine`), never to a worker already started without it.
    """
    if self.device_count <= 1:
      return ""
    return f"--xla_force_host_platform_device_count={self.device_count}"

  def full_inputs(self) -> tuple | None:
    """`make_inputs()` for a batch case (checked), None for a sized case.

    Raises:
      CaseError: an axis is out of range, batched arguments disagree on
        the batch size, or an argument is a jax.Array placed on several
        devices (hloprobe compiles from the values, so that placement
        would be dropped: the program or the Case must say it).
    """
    if self.swept_size is not None:
      return None
    full = tuple(self.make_inputs())
    self._check_placement(full)
    self.full_size(full)
    return full

  def _check_placement(self, full: tuple) -> None:
    """Refuses arguments placed on several devices (a `NamedSharding`
    from `make_inputs`): the lowering takes their values, not their
    placement, so the program would silently run unsharded."""
    for i, arg in enumerate(full):
      for leaf in jax.tree_util.tree_leaves(arg):
        devices = getattr(getattr(leaf, "sharding", None), "device_set", ())
        if len(devices) > 1:
          raise CaseError(
            f"case {self.name!r}: make_inputs() returned argument {i} placed "
            f"on {len(devices)} devices ({type(leaf.sharding).__name__}); "
            "hloprobe takes the values, not the placement: return host "
            "arrays and say the sharding in the program (jax.jit "
            "in_shardings, with_sharding_constraint) or with Case "
            "mesh_shape, mesh_axes and in_specs"
          )

  def arg_axes(self, count: int) -> tuple[int | None, ...]:
    """The batch axis of each of `count` arguments (None: shared).

    Raises:
      CaseError: `in_axes` has another length, or `batch_arg` is out of range.
    """
    if self.in_axes is not None:
      if len(self.in_axes) != count:
        raise CaseError(
          f"case {self.name!r}: in_axes has {len(self.in_axes)} entries for "
          f"{count} arguments"
        )
      return tuple(self.in_axes)
    if not 0 <= self.batch_arg < count:
      raise CaseError(
        f"case {self.name!r}: batch_arg {self.batch_arg} out of range for "
        f"{count} arguments"
      )
    return tuple(
      self.batch_axis if i == self.batch_arg else None for i in range(count)
    )

  def _batched_leaves(self, full: tuple):
    """(argument index, axis, leaf) of every batched array."""
    for i, (arg, axis) in enumerate(zip(full, self.arg_axes(len(full)))):
      if axis is None:
        continue
      for leaf in jax.tree_util.tree_leaves(arg):
        ndim = np.ndim(leaf)
        if not -ndim <= axis < ndim:
          raise CaseError(
            f"case {self.name!r}: batch axis {axis} out of range for "
            f"argument {i} of shape {np.shape(leaf)}"
          )
        yield i, axis, leaf

  def full_size(self, full: tuple) -> int:
    """The batch size of `full` (a `make_inputs()` result).

    Raises:
      CaseError: no argument is batched, an axis is out of range, or the
        batched arguments disagree on the size.
    """
    sizes = {
      (i, axis): np.shape(leaf)[axis]
      for i, axis, leaf in self._batched_leaves(full)
    }
    if not sizes:
      raise CaseError(f"case {self.name!r}: no argument is batched")
    if len(set(sizes.values())) > 1:
      found = ", ".join(
        f"argument {i} axis {a}: {n}" for (i, a), n in sizes.items()
      )
      raise CaseError(
        f"case {self.name!r}: arguments disagree on the batch size ({found})"
      )
    return next(iter(sizes.values()))

  def inputs_for(self, full: tuple | None, n: int) -> tuple:
    """The arguments at size n.

    Batch cases: every batched argument cut to its first n elements along
    its axis (no tiling), a read-only view of `full`'s, not a copy (issue
    37: decode's 268 MB KV cache was copied at every config's compile, run
    and execution; a write into it raises rather than changes `full`).
    Sized cases: `make_inputs(n)` (`full` unused).

    Raises:
      CaseError: n exceeds the full batch size.
    """
    if self.swept_size is not None:
      return tuple(self.make_inputs(n))
    size = self.full_size(full)
    if n > size:
      raise CaseError(
        f"batch size {n} exceeds the {size} rows (batch elements) of case "
        f"{self.name!r}; no tiling: "
        f"sweep batch sizes up to {size}"
      )
    out = []
    for arg, axis in zip(full, self.arg_axes(len(full))):
      if axis is not None:
        arg = jax.tree_util.tree_map(lambda a, ax=axis: _prefix(a, n, ax), arg)
      out.append(arg)
    return tuple(out)

  def output_axes(self, shapes) -> tuple[int | None, ...]:
    """The batch axis of each output leaf, from the leaves' shapes.

    Raises:
      CaseError: `output_axis` has another length or an axis is out of
        range for its leaf.
    """
    axes = (
      tuple(self.output_axis)
      if isinstance(self.output_axis, tuple)
      else (self.output_axis,) * len(shapes)
    )
    if self.swept_size is not None:
      axes = (None,) * len(shapes)
    if len(axes) != len(shapes):
      raise CaseError(
        f"case {self.name!r}: output_axis has {len(axes)} entries for "
        f"{len(shapes)} output leaves"
      )
    for axis, shape in zip(axes, shapes):
      if axis is not None and not -len(shape) <= axis < len(shape):
        raise CaseError(
          f"case {self.name!r}: output axis {axis} out of range for an "
          f"output of shape {tuple(shape)}; use None for an unbatched output"
        )
    return axes

  def unoptimized_hlo(self, args: tuple) -> str:
    """The program's HLO on `args` before any XLA pass, as text (lowered,
    not compiled).

    `jax.jit(self.fn, keep_unused=True).lower(*args).as_text(dialect="hlo")`
    on this process's default backend (the CPU in the sweep's main
    process): one entry parameter per flattened argument leaf, in
    `jax.tree_util.tree_leaves` order (`keep_unused`: jit otherwise drops
    the parameters of unused arguments), and the output leaves as the root
    (a tuple for several). Large constants are printed whole. Costs a trace
    and a lowering, no compile; for `hloprobe.execute` (the numpy
    executor).

    Raises:
      Exception: whatever JAX raises while tracing or lowering (e.g. a
        primitive without a CPU lowering: `rejections.missing_lowering`).
    """
    lowered = jax.jit(self.fn, keep_unused=True).lower(*args)
    return lowered.as_text(dialect="hlo")


def _prefix(a, n: int, axis: int) -> np.ndarray:
  """The first n elements of `a` along `axis`: a read-only view."""
  a = np.asarray(a)
  view = a[(slice(None),) * (axis % max(a.ndim, 1)) + (slice(0, n),)]
  view.flags.writeable = False
  return view
