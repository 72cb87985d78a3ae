"""Predicted numerics: a case re-evaluated with each dot site at an algorithm.

`make_emulator` traces a case's function to a jaxpr (`jax.make_jaxpr`) and
re-evaluates it, jit-compiled on the CPU, with every `dot_general` site
(numbered as in StableHLO, see `jaxpr_sites`) computed by
`emulate_dot.emulated_dot_general` at the algorithm chosen for that site.
Every other primitive runs as traced, in the case's own dtypes; a dot's
result is converted to the dtype the case's dot returns. Dead dots (not
sites) and integer dots run as traced.

Higher-order primitives evaluated with their sites: jit, closed_call,
core_call, remat2 (checkpoint), custom_jvp_call, custom_vjp_call (their
primal function), cond, while and scan; any other one that holds a dot
raises `EmulationError`. Convolutions (`conv_general_dilated`) are sites
too, numbered with the dots, and computed at their algorithm by
`emulate_conv.emulated_conv_general_dilated`.
The cost is about one CPU run of the case per pass of the chosen
algorithms (1 for F32/TF32/BF16, 3 to 9 for the splits) with the "xla"
order; the other summation orders are loops, slower, meant for the noise
floor.

The evaluation itself is `evaluator.Evaluator`'s.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import jax
import numpy as np
from jax import lax

from hloprobe.errors import EmulationError, InvalidArgumentError
from hloprobe.numerics.emulate_dot import (
  EMULATED_ALGORITHMS,
  SUMMATION_ORDERS,
  SWITCHABLE,
  emulated_dot_general,
)
from hloprobe.numerics.evaluator import Evaluator, spec_parts
from hloprobe.numerics.jaxpr_sites import (
  JaxprSite,
  count_sites,
  jaxpr_sites,
  plan_sites,
  trace,
)
from hloprobe.numerics.rounding import ROUNDING_MODES

__all__ = [
  "EMULATED_ALGORITHMS",
  "SUMMATION_ORDERS",
  "Emulator",
  "SwitchedEmulation",
  "JaxprSite",
  "OrderSpread",
  "check_order",
  "count_sites",
  "emulate_case",
  "emulate_many",
  "emulate_switched",
  "switchable",
  "emulated_dot_general",
  "jaxpr_sites",
  "make_emulator",
  "mesh_parts",
  "order_spread",
  "emulate_with_scales",
  "scale_recorder",
  "scales_of",
]


class _ScaleRecorder(Evaluator):
  """An F32 evaluation that also returns max and rms of |A||B| per site.

  Sites inside loop and branch bodies (while, scan, cond) are skipped: their
  values live in the body's own trace.
  """

  def __init__(self, count: int):
    super().__init__(("F32_F32_F32",) * count, "xla", "rna")
    self.scales: dict[int, tuple] = {}

  def _dot(self, eqn, ins, site: int):
    if not self.in_body and all(
      jax.numpy.issubdtype(x.dtype, jax.numpy.inexact) for x in ins
    ):
      scale = _absolute_product(eqn, ins)
      self.scales[site] = (
        jax.numpy.max(scale, initial=0.0),
        jax.numpy.sqrt(jax.numpy.mean(jax.numpy.square(scale))),
      )
    return super()._dot(eqn, ins, site)


def _absolute_product(eqn, ins):
  """|A||B|: the site's op (dot or convolution) on |operands|, f32 HIGHEST."""
  absolute = [jax.numpy.abs(x).astype(np.float32) for x in ins]
  if eqn.primitive.name == "conv_general_dilated":
    p = eqn.params
    return lax.conv_general_dilated(
      *absolute,
      p["window_strides"],
      p["padding"],
      lhs_dilation=p["lhs_dilation"],
      rhs_dilation=p["rhs_dilation"],
      dimension_numbers=p["dimension_numbers"],
      feature_group_count=p["feature_group_count"],
      batch_group_count=p["batch_group_count"],
      precision=lax.Precision.HIGHEST,
    )
  return lax.dot_general(
    *absolute,
    eqn.params["dimension_numbers"],
    precision=lax.Precision.HIGHEST,
  )


def scale_recorder(fn: Callable, args: Sequence) -> tuple:
  """The traced parts of `emulate_with_scales`, for a caller that runs
  them inside a bigger jit (the predictor's shared compile).

  Returns:
    (run, consts, count): `run(consts, leaves)` gives (first output leaf,
    {site: (max, rms)} as jax scalars) for `fn` on the leaves of arguments
    like `args`; `consts` are the traced constants to pass it; `count` is
    the number of sites. `scales_of(that dict, count)` gives the floats.
  """
  closed, _ = trace(fn, args)
  plan, sites = plan_sites(closed.jaxpr)

  def run(consts, leaves):
    recorder = _ScaleRecorder(len(sites))
    outs = recorder.run(closed.jaxpr, plan, consts, leaves)
    return outs[0], recorder.scales

  return run, tuple(closed.consts), len(sites)


def scales_of(found: dict, count: int) -> tuple:
  """`scale_recorder`'s {site: (max, rms)} as one (max, rms) pair of
  floats or None per site, in site order."""
  return tuple(
    (float(found[i][0]), float(found[i][1])) if i in found else None
    for i in range(count)
  )


def emulate_with_scales(fn: Callable, args: Sequence) -> tuple:
  """`fn(*args)` with every site at F32 ("xla" order), and each site's scale.

  One jit-compiled evaluation. The scale of a site is the max and rms of
  (|A||B|)_ij = sum_k |a_ik||b_kj| over its output (output units of the
  site); sites inside loop and branch bodies (scan, while, cond) get None.

  Returns:
    (first output leaf as numpy, one `(max, rms)` pair of floats or None per
    site, in site order).
  """
  run, consts, count = scale_recorder(fn, args)
  out, found = jax.jit(run)(consts, jax.tree_util.tree_leaves(args))
  return np.asarray(out), scales_of(found, count)


def _dtype(x):
  """An array leaf's dtype (a jax array's too: numpy's `result_type` of
  one is deprecated), else the leaf (a Python scalar)."""
  return x.dtype if hasattr(x, "dtype") else x


@dataclasses.dataclass(frozen=True)
class Emulator:
  """A case's function with each dot site computed by a chosen algorithm.

  Call it like the case's function, on arguments with the shapes and dtypes
  it was made for; it returns the same pytree, as jax arrays. It is
  jit-compiled on first call. Its output dtypes are the case's.

  Attributes:
    sites: the dot sites, in site order.
    site_algorithms: the algorithm of each site (`EMULATED_ALGORITHMS`).
    order: f32 summation order of every emulated dot (`SUMMATION_ORDERS`).
    tf32_rounding: f32 -> TF32 rounding mode ('rna' or 'rne').
  """

  sites: tuple[JaxprSite, ...]
  site_algorithms: tuple[str, ...]
  order: str
  tf32_rounding: str
  _run: Callable = dataclasses.field(repr=False)
  _consts: tuple = dataclasses.field(repr=False)
  _in_avals: tuple = dataclasses.field(repr=False)

  def __call__(self, *args):
    got = tuple(
      (np.shape(x), jax.dtypes.canonicalize_dtype(np.result_type(_dtype(x))))
      for x in jax.tree_util.tree_leaves(args)
    )
    if got != self._in_avals:
      raise InvalidArgumentError(
        f"[hloprobe] emulator made for arguments {self._in_avals}, called "
        f"with {got}; make one emulator per batch size"
      )
    return self._run(self._consts, *args)


def check_order(order: str) -> None:
  """Raises InvalidArgumentError for an order not in `SUMMATION_ORDERS`."""
  if order not in SUMMATION_ORDERS:
    raise InvalidArgumentError(
      f"unknown order {order!r}; choose from {SUMMATION_ORDERS}"
    )


def _checked_algorithms(site_algorithms, count: int) -> tuple[str, ...]:
  names = (
    (site_algorithms,) * count
    if isinstance(site_algorithms, str)
    else tuple(site_algorithms)
  )
  if len(names) != count:
    raise EmulationError(
      f"[hloprobe] {len(names)} site algorithms given for {count} dot sites; "
      f"give one per site, e.g. {['F32_F32_F32'] * count}"
    )
  bad = sorted({a for a in names if a not in EMULATED_ALGORITHMS})
  if bad:
    raise InvalidArgumentError(
      f"algorithms {bad} are not emulated; choose from "
      f"{', '.join(EMULATED_ALGORITHMS)}"
    )
  return names


def make_emulator(
  fn: Callable,
  args: Sequence,
  site_algorithms: str | Sequence[str],
  *,
  order: str = "xla",
  tf32_rounding: str = "rna",
) -> Emulator:
  """Builds the emulated version of `fn` for arguments like `args`.

  Args:
    fn: the case's function (not jitted).
    args: its arguments (arrays or pytrees; only shapes and dtypes matter).
    site_algorithms: one algorithm name per site, in site order, or one name
      for every site.
    order: summation order of the emulated dots (`SUMMATION_ORDERS`).
    tf32_rounding: 'rna' (XLA's Triton GEMMs; the prediction rounds
      cuBLAS TF32 sites so too, where the numpy executor's model is 'rne':
      `rounding`'s docstring names both sources), 'rne' (cuBLAS model) or
      'rz' (truncation; a truncating site is named `TF32_TRUNCATED_F32`
      instead, so that one emulation holds both kinds of sites).

  Raises:
    EmulationError: an unsupported primitive holds a dot, or the number of
      algorithms differs from the number of sites.
    InvalidArgumentError: an unknown algorithm, order or rounding mode.
  """
  check_order(order)
  if tf32_rounding not in ROUNDING_MODES:
    raise InvalidArgumentError(
      f"unknown tf32_rounding {tf32_rounding!r}; choose from {ROUNDING_MODES}"
    )
  closed, out_tree = trace(fn, args)
  plan, sites = plan_sites(closed.jaxpr)
  algorithms = _checked_algorithms(site_algorithms, len(sites))
  evaluator = Evaluator(algorithms, order, tf32_rounding)
  evaluator.parts.update(mesh_parts(fn, args, closed.jaxpr.invars))

  def run(consts, *call_args):
    outs = evaluator.run(
      closed.jaxpr, plan, consts, jax.tree_util.tree_leaves(call_args)
    )
    return jax.tree_util.tree_unflatten(out_tree, outs)

  in_avals = tuple((a.shape, a.dtype) for a in closed.in_avals)
  return Emulator(
    sites,
    algorithms,
    order,
    tf32_rounding,
    jax.jit(run),
    tuple(closed.consts),
    in_avals,
  )


def with_mesh_splits(case) -> Callable:
  """`case.fn`, marked with the case's mesh (`Case.mesh_shape`,
  `mesh_axes`, `in_specs`) so that `make_emulator` splits each dot whose
  contracting dimension an argument's PartitionSpec shards, as the SPMD
  partitioner does (`evaluator.partial_sums`); `case.fn` itself for a case
  without a mesh."""
  if case.mesh_shape is None:
    return case.fn

  def fn(*args):
    return case.fn(*args)

  fn.hloprobe_mesh = (
    dict(zip(case.mesh_axes, case.mesh_shape)),
    case.in_specs,
  )
  return fn


def mesh_parts(fn, args, invars) -> dict:
  """The jaxpr's input variables (`invars`, of `fn` traced on `args`) ->
  their per-dimension splits (device counts, one per dimension), from a
  `with_mesh_splits` function's mesh; {} for any other function, or
  where the leaves are not the variables one for one."""
  mesh = getattr(fn, "hloprobe_mesh", None)
  if mesh is None:
    return {}
  sizes, specs = mesh
  found = []
  for i, arg in enumerate(args):
    spec = specs[i] if specs else ()
    for leaf in jax.tree_util.tree_leaves(arg):
      found.append(spec_parts(spec, sizes, np.ndim(leaf)))
  if len(found) != len(invars):
    return {}
  return dict(zip(invars, found))


def emulate_case(
  fn, args, site_algorithms, *, order="xla", tf32_rounding="rna"
):
  """Runs `fn(*args)` emulated; returns its output pytree as numpy arrays.

  See `make_emulator` for the arguments. F64_F64_F64 sites need the call
  inside `with jax.enable_x64(True):`.
  """
  emulator = make_emulator(
    fn, args, site_algorithms, order=order, tf32_rounding=tf32_rounding
  )
  return jax.tree_util.tree_map(np.asarray, emulator(*args))


def emulate_many(
  fn, args, assignments, *, order="xla", tf32_rounding="rna"
) -> list[tuple[np.ndarray, ...]]:
  """Every output leaf of `fn(*args)` under each site assignment.

  One jit compile for all of them (the emulators' bodies inline into one
  module, as in `order_spread`): XLA's CPU compile costs about as much per
  module as per dot, so k assignments compile several times faster
  together than one by one. Each assignment's ops are its own, so each
  output is the one `emulate_case` gives (checked bit for bit in
  emulate_test on the seed case).

  Args:
    fn, args, order, tf32_rounding: as `make_emulator`.
    assignments: a sequence of site assignments (each one algorithm name
      per site, or one name for every site).

  Returns:
    Per assignment, in order, its output leaves as numpy arrays.
  """
  emulators = [
    make_emulator(fn, args, a, order=order, tf32_rounding=tf32_rounding)
    for a in assignments
  ]
  every = jax.jit(
    lambda *a: [tuple(jax.tree_util.tree_leaves(e(*a))) for e in emulators]
  )
  return [tuple(np.asarray(x) for x in leaves) for leaves in every(*args)]


def switchable(assignments: Sequence) -> bool:
  """Whether `emulate_switched` can take `assignments` (lists of one name
  per site): where they differ at a site, each name is single-pass
  (`emulate_dot.SWITCHABLE`). Attention sites cannot switch either; that
  shows only when traced (an `EmulationError`)."""
  names = [a for a in assignments if not isinstance(a, str)]
  if len(names) != len(assignments) or not names:
    return all(isinstance(a, str) and a in SWITCHABLE for a in assignments)
  return all(
    len(set(column)) == 1 or set(column) <= set(SWITCHABLE)
    for column in zip(*names)
  )


def emulate_switched(
  fn, args, assignments, *, order="xla", tf32_rounding="rna", keep=None
) -> list:
  """Every output leaf of `fn(*args)` under each site assignment, from ONE
  compiled emulation run once per assignment.

  Each site where the assignments differ holds every algorithm they give
  it as a branch of a `lax.switch` whose index is a run-time argument; a
  site where they agree is computed as in `make_emulator`. So the compile
  grows with the program (about the number of distinct algorithms per
  site times it), not with the number of assignments times it as in
  `emulate_many`: per-site attribution of an L-layer program costs one
  compile of about twice the program, not 2L + 2 copies of it (issue 37).
  Each branch is the ops `make_emulator` gives that site at that
  algorithm, so each output is the one `emulate_case` gives (bit for bit:
  emulate_many_test).

  Args:
    fn, args, order, tf32_rounding: as `make_emulator`.
    assignments: a sequence of site assignments (each one algorithm name
      per site, or one name for every site).
    keep: if given, what to keep of each assignment's output leaves (a
      function of the tuple of numpy leaves, e.g. row 0 of one), so that
      only one assignment's whole outputs are held at a time.

  Returns:
    Per assignment, in order, its output leaves as numpy arrays (or what
    `keep` made of them).

  Raises:
    EmulationError, InvalidArgumentError: as `make_emulator`, also for an
      assignment whose unrolled scan copies differ in algorithms, or a
      site where they differ that is not single-pass (`switchable`).
  """
  check_order(order)
  if not assignments:
    return []
  closed, _ = trace(fn, args)
  count = len(plan_sites(closed.jaxpr)[1])
  checked = [_checked_algorithms(a, count) for a in assignments]
  if not switchable(checked):
    raise EmulationError(
      "[hloprobe] only single-pass algorithms can be chosen at run time "
      f"({', '.join(SWITCHABLE)}); emulate these assignments one by one"
    )
  choices = tuple(tuple(dict.fromkeys(column)) for column in zip(*checked))
  runs = SwitchedEmulation(
    fn, args, choices, order=order, tf32_rounding=tf32_rounding, closed=closed
  )
  # The arguments on the device once, not at every run: a jit call copies
  # each numpy argument each call (jaxlib 0.12.0.1 and 0.10.2).
  # `EmulationCache.args` gives device arrays already (then this is no
  # copy); a caller's numpy arguments are put here (issue 37: gpt2_12's
  # 144 share runs, 0.34 GB of weights). The same values.
  leaves = jax.device_put(jax.tree_util.tree_leaves(args))
  found = []
  for names in checked:
    outs = runs(names, leaves)
    found.append(outs if keep is None else keep(outs))
    del outs
  return found


class SwitchedEmulation:
  """One compiled emulation of `fn` at the shapes of `args` whose sites
  choose their algorithm at run time, called once per assignment and per
  argument set of those shapes (issue 37: a large program's fixed orders
  emulated a row at a time, every row and assignment one compile).

  Each site holds the algorithms `choices` gives it (one name: computed as
  in `make_emulator`; several: a `lax.switch` over their operand roundings,
  `emulate_dot.Switched`, whose index is a run-time argument), so each
  call's outputs are the ones `emulate_case` gives that assignment on those
  arguments (bit for bit: emulate_many_test, rows_large_test, on jaxlib
  0.12.0.1 and 0.10.2).

  Several summation orders (`order` a tuple) are one compile too: each
  site a `lax.switch` over its dot in each order (`evaluator.Evaluator`),
  each call naming its order. The outputs are the ones that order's own
  compile gives where XLA fuses the order's ops alike inside a branch and
  out: the sequential and blocked orders, which sum in loops (bit for
  bit: emulate_many_test, jaxlib 0.12.0.1 and 0.10.2). Not pairwise: its
  f32 products may become FMAs with its first sums by the ops around
  them (`emulate_dot._pairwise`; conv_net's last bits differed).

  Args:
    fn, args, tf32_rounding: as `make_emulator`.
    order: as `make_emulator`'s, or a tuple of several.
    choices: per site, the names it may take (a tuple of one or more
      `EMULATED_ALGORITHMS`; several only of `SWITCHABLE`).
    closed: `fn` traced on `args` already (`jaxpr_sites.trace`), or None.

  Raises:
    EmulationError: a site whose choices are several where it cannot
      switch (an attention site: raised here, as it is traced), or as
      `make_emulator`.
  """

  def __init__(
    self, fn, args, choices, *, order="xla", tf32_rounding="rna", closed=None
  ):
    self.orders = (order,) if isinstance(order, str) else tuple(order)
    for one in self.orders:
      check_order(one)
    closed = closed if closed is not None else trace(fn, args)[0]
    plan, sites = plan_sites(closed.jaxpr)
    self.choices = tuple(tuple(c) for c in choices)
    if len(self.choices) != len(sites):
      raise EmulationError(
        f"[hloprobe] {len(self.choices)} sites' choices given for "
        f"{len(sites)} dot sites; give one per site"
      )
    evaluator = Evaluator(
      tuple(c[0] if len(c) == 1 else c for c in self.choices),
      order if isinstance(order, str) else self.orders,
      tf32_rounding,
    )
    # A `with_mesh_splits` function's dots split as its mesh asks, as
    # `make_emulator`'s do ({} for any other function).
    evaluator.parts.update(mesh_parts(fn, args, closed.jaxpr.invars))

    def run(consts, selector, leaves, order_index=None):
      evaluator.selector, evaluator.order_index = selector, order_index
      return evaluator.run(closed.jaxpr, plan, consts, leaves)

    self._scan_copies = evaluator.scan_copies
    consts, leaves = tuple(closed.consts), jax.tree_util.tree_leaves(args)
    first = self._selector(self._first())
    self._several = not isinstance(order, str)
    several = (np.int32(0),) if self._several else ()
    lowered = jax.jit(run).lower(consts, first, leaves, *several)
    self._compiled = lowered.compile()
    # The trace's constants on the device once (each call would copy them).
    self._consts = jax.device_put(consts)

  def _first(self) -> tuple[str, ...]:
    return tuple(c[0] for c in self.choices)

  def _selector(self, names) -> np.ndarray:
    return np.array([c.index(a) for c, a in zip(self.choices, names)], np.int32)

  def __call__(
    self, names, leaves, order: str | None = None
  ) -> tuple[np.ndarray, ...]:
    """The output leaves (numpy) of the assignment `names` (one per site,
    each among that site's choices) on `leaves` (the arguments' leaves,
    of the shapes compiled for), in `order` (one of `orders`; None: the
    only one).

    Raises:
      EmulationError: a scan's unrolled copies differ in algorithms.
      ValueError: not one name a site, or a name not among its site's
        choices, or an order not compiled for (None where there are
        several).
    """
    if order is None and self._several:
      raise ValueError(f"name one of the orders {self.orders}")
    if order is not None and order not in self.orders:
      raise ValueError(f"order {order!r} is not among {self.orders}")
    if len(names) != len(self.choices):
      raise ValueError(
        f"{len(names)} algorithms for {len(self.choices)} dot sites"
      )
    for copies in self._scan_copies:
      if len({tuple(names[lo:hi]) for lo, hi in copies}) > 1:
        raise EmulationError(
          "[hloprobe] a scan has unrolled copies of its body in StableHLO "
          "with different algorithms for their sites; emulating that is not "
          "supported"
        )
    selector = self._selector(names)
    at = (np.int32(self.orders.index(order or self.orders[0])),)
    outs = self._compiled(
      self._consts, selector, leaves, *(at if self._several else ())
    )
    return tuple(np.asarray(x) for x in outs)


@dataclasses.dataclass(frozen=True)
class OrderSpread:
  """A case's first output under several f32 summation orders.

  Measures how much the output moves when only the order of the f32 sums
  changes (the same products, the same algorithms); `accuracy` turns it
  into a noise floor.

  Attributes:
    outputs: order name -> first output leaf, numpy, the case's dtype.
    spread_abs: per element, max minus min over the orders; f64 numpy array
      of the output's shape, in output units.
    max_spread_abs: the largest element of `spread_abs`, output units.
    leaves: order name -> every output leaf (numpy, tree_leaves order).
  """

  outputs: dict[str, np.ndarray]
  spread_abs: np.ndarray
  max_spread_abs: float
  leaves: dict[str, tuple[np.ndarray, ...]] = dataclasses.field(
    default_factory=dict
  )


def order_spread(
  fn, args, site_algorithms, *, orders=SUMMATION_ORDERS, tf32_rounding="rna"
) -> OrderSpread:
  """Emulates `fn(*args)` once per order in `orders` and measures the spread.

  Raises:
    InvalidArgumentError: fewer than two orders, or as `make_emulator`.
  """
  if len(orders) < 2:
    raise InvalidArgumentError(
      f"need at least two summation orders, got {orders}"
    )
  emulators = [
    make_emulator(
      fn, args, site_algorithms, order=o, tf32_rounding=tf32_rounding
    )
    for o in orders
  ]
  # One compile for all orders: the emulators' jitted bodies inline here.
  every = jax.jit(
    lambda *a: [jax.tree_util.tree_leaves(e(*a)) for e in emulators]
  )
  leaves = {
    o: tuple(np.asarray(x) for x in xs) for o, xs in zip(orders, every(*args))
  }
  outputs = {o: xs[0] for o, xs in leaves.items()}
  stacked = np.stack([x.astype(np.float64) for x in outputs.values()])
  spread = stacked.max(axis=0) - stacked.min(axis=0)
  return OrderSpread(outputs, spread, float(spread.max(initial=0.0)), leaves)
