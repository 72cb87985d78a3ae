"""A case's emulated outputs for the predictor, made in few jit compiles.

In a sweep the main process emulates while a worker compiles the next
configs, and on a small machine both want the same cores. The predictor's
cost is XLA's CPU compile of its emulators (`emulate`), which is mostly a
cost per op plus one per module, and inside one module XLA's CSE pass
merges the ops that several assignments at one size share. So
`EmulationCache.fetch` makes everything one config needs in one jit
compile (one per x64 mode): its assignments in XLA's own ("xla") summation
order, the fixed-order ones of its noise floor, the per-site scales the
first time, and, where told the sweep's sizes, a guess: the same
"xla"-order assignments at the sizes the sweep visits after this one, which
the next configs of the same target and precision usually ask for (their
algorithms rarely change with the batch size). An assignment is guessed
once it was asked for at the size before too: the smallest size's is often
its own (XLA's dot strength reduction turns a vmapped matrix-vector dot
into multiply+reduce, F32, at n = 1 alone; issue 37: decode's a100
bfloat16 assignment at n = 1 was guessed at all six larger sizes, and
none asked for it).

Why it is exact: each emulator is its own ops on its own size's arguments,
and several emulators in one module is what `emulate.emulate_many` and
`emulate.order_spread` already do (bit for bit the outputs of one
emulation alone, emulate_many_test and emulation_cache_test); the summation
orders, the compile options and the arguments are those of one emulation
alone. A guess only decides when an output is made, never what it is.

Wasted work is bounded: at most `SPECULATION_LIMIT` guessed emulations
that nobody has asked for yet are held at a time, so a case whose
algorithms change with the batch size wastes at most that many over a
sweep; a guess that fails to emulate (e.g. a size the case cannot trace)
turns guessing off and makes only what was asked for.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Hashable, Iterable, Sequence

import jax
import numpy as np

from hloprobe.compile import Case
from hloprobe.errors import EmulationError, InvalidArgumentError
from hloprobe.numerics import (
  attention_band,
  emulate,
  emulate_attention,
  emulate_outlined,
  rows,
)
from hloprobe.numerics.jaxpr_sites import multiply_adds, plan_sites, trace
from hloprobe.numerics.kept import KEPT_BYTES, Kept
from hloprobe.numerics.note_records import AttentionBias

__all__ = [
  "SPECULATION_LIMIT",
  "SWITCH_FROM",
  "EmulationCache",
  "emulate_together",
  "row_multiply_adds",
]

# Most guessed emulations (one size and site assignment each, "xla" order)
# held unasked at once: about eight sizes of a four-site config's eight
# assignments (F32, chosen and the per-site shares).
SPECULATION_LIMIT = 64

# Keys of one size and order from which `emulate_together` compiles one
# switched emulation (`emulate.emulate_switched`) for them, not one
# emulator each: F32 and the chosen assignment alone (two) are cheaper
# inline with the rest.
SWITCH_FROM = 3

# Emulations of a size whose outputs the cache holds at least, whatever
# `budget` says: a config's F32 and chosen assignments in XLA's order and
# in the three fixed ones, so that a case with large outputs (a real-size
# model) makes none of them twice in one config (issue 37).
HELD_EMULATIONS = 8

# Dot sites one inline compile (`_emulate_inline`) holds at most, over
# all its emulators together: a compile of k emulators holds k copies of
# the program and of their temporaries at once (XLA:CPU schedules every
# copy's weight-side operands from the start), so for a real-size model
# (GPT-2-small: 6 sites a layer) one config's prefetch of about ten
# emulations made memory grow with depth times that count (gpt2_4's case
# worker: +1.9 GB in one compile; issue 37). Above it, the emulators are
# compiled in parts of at most this many sites (one emulator a part for a
# program of this many sites or more); below it (the built-in cases) one
# compile, as before. Each output is the same bits either way.
INLINE_SITES = 24
# The noise floor's own assignment, every site's.
_F32 = "F32_F32_F32"
# The fixed orders whose one-row emulations are one switched compile
# (`EmulationCache._fixed_orders`; gpt2_1: 1.65 CPU-s against 3.1 for one
# each, jaxlib 0.12.0.1). Sequential and blocked sum in loops, whose
# bodies XLA fuses alike inside a `lax.switch` branch or not. Pairwise
# keeps its own: a small K's tree is summed outside any loop, where
# XLA:CPU fuses f32 products into its first sums as FMAs or not by the
# ops around them (`emulate_dot._pairwise`); in a branch, conv_net's
# pairwise F32 differed from its own compile in the last bit of 7 of 10
# outputs (jaxlib 0.12.0.1, 2026-12-07).
_COMPILED_TOGETHER = (("sequential", "blocked"), ("pairwise",))

# (batch size, site algorithms, summation order) of one emulation; the
# "size" may instead be the rows of the full batch to gather, ascending
# (`EmulationCache.args`: a rows_independent case's judged rows).
Key = tuple[int | tuple[int, ...], tuple[str, ...], str]


def _needs_x64(algorithms: Sequence[str]) -> bool:
  """F64_F64_F64 sites need 64-bit types enabled while emulating."""
  return "F64_F64_F64" in algorithms


def row_multiply_adds(case: Case, full: tuple | None) -> int:
  """`EmulationCache.row_multiply_adds` without a cache: the case traced
  here at sizes 1 and 2 (issue 37: a compile worker's `made.MadeChecker`
  asks it once per case, so that it knows, as the predictor does, where a
  size's judged rows are found after the first pass).

  Raises:
    InvalidArgumentError: a sized case.
    Exception: what tracing the case raises.
  """
  fn = emulate.with_mesh_splits(case)
  return _per_row(
    *(
      multiply_adds(emulate.jaxpr_sites(fn, case.inputs_for(full, n)))
      for n in _row_sizes(case, full)
    )
  )


def large_rows_whole(case: Case, full: tuple | None) -> int | None:
  """Up to how many rows a large program is judged whole
  (`rows.rows_whole` of `row_multiply_adds`, below
  `rows.ALL_ROWS_UP_TO`: gpt2_1 and deeper, not decode nor any built-in
  case), for a case that declares `rows_independent`; None for any other
  case, a sized one, or where the count fails (a size 1 or 2 it cannot
  trace: judged as small, as the predictor's `_measure_rows` judges it).
  Issue 37: what a large program's made runs (`made.MadeChecker`) and
  invariance anchors (`CaseNumerics.large_program`) do less of."""
  if full is None or case.swept_size is not None or not case.rows_independent:
    return None
  try:
    whole = rows.rows_whole(row_multiply_adds(case, full))
  except Exception:  # as the predictor's: every row
    return None
  return whole if whole < rows.ALL_ROWS_UP_TO else None


def _row_sizes(case: Case, full: tuple | None) -> tuple[int, ...]:
  """The sizes a row's multiply-adds are counted at: 1 and 2, or 1 where
  the full batch has one row.

  Raises:
    InvalidArgumentError: a sized case (no full batch to cut rows of).
  """
  if full is None or case.swept_size is not None:
    raise InvalidArgumentError(f"case {case.name!r} is sized: no rows to count")
  return (1, 2) if case.full_size(full) >= 2 else (1,)


def _per_row(one: int, *two: int) -> int:
  """A row's multiply-adds from the counts at 1 and 2 rows (what does not
  grow with the batch, e.g. a dot of weights alone, is no row's), or at 1
  alone."""
  return max(two[0] - one, 0) if two else one


def emulate_together(
  fn: Callable,
  keys: Sequence[Key],
  args_at: Callable[[int], tuple],
  scales_at: int | None = None,
  sites: int = 0,
) -> tuple[list[tuple[np.ndarray, ...]], tuple | None]:
  """Every emulation in `keys`, and the site scales, in few jit compiles.

  The keys of one size and order that are `SWITCH_FROM` or more (a
  config's per-site attribution, its candidates) are one compile of
  `emulate.emulate_switched`, run once per key, so their cost grows with
  the program, not with the program times its sites. The rest and the
  scales are one compile: each size's arguments are passed once and shared
  by the emulators of that size (so XLA's CSE merges what their
  assignments share), as in `emulate.emulate_many`; the scales are
  `emulate.emulate_with_scales`'s. A program of `sites` dot sites is
  inlined at most `INLINE_SITES // sites` times (at least once) a compile:
  more emulators are compiled in parts of that many, so that memory does
  not grow with the program's depth times the emulators (the outputs are
  the same bits). On jaxlib 0.12.0.1 each output is the bits of that
  emulation alone (`emulate.emulate_case`); jaxlib 0.10.2's XLA:CPU fuses
  emulators sharing a compile otherwise, which moves a split attribution's
  row-0 error by about 3e-6 on seed_mlp (emulation_cache_test, 2026-12-06).
  F64_F64_F64 keys need the call inside `_x64_if(True)`.

  Args:
    fn: the case's function.
    keys: (size, one algorithm per site, order) of each emulation.
    args_at: the case's arguments at a size.
    scales_at: the size to measure the site scales at, or None.
    sites: the program's dot sites (0: unknown, one compile).

  Returns:
    (per key, its output leaves as numpy arrays; the scales, one (max, rms)
    pair or None per site, or None without `scales_at`).

  Raises:
    EmulationError, InvalidArgumentError: as `emulate.make_emulator`.
  """
  groups: dict[tuple[int, str], list[int]] = {}
  for i, (n, _, o) in enumerate(keys):
    groups.setdefault((n, o), []).append(i)
  found: dict[int, tuple[np.ndarray, ...]] = {}
  for group in groups.values():
    assignments = [keys[i][1] for i in group]
    if len(group) < SWITCH_FROM or not emulate.switchable(assignments):
      continue
    n, _, o = keys[group[0]]
    try:
      outs = emulate.emulate_switched(fn, args_at(n), assignments, order=o)
    except EmulationError:  # e.g. an attention site: one emulator each
      continue
    found.update(zip(group, outs))
  rest = [k for i, k in enumerate(keys) if i not in found]
  inline, scales = [], None
  for part, part_scales in _parts(rest, scales_at, sites):
    made, measured = _emulate_inline(fn, part, args_at, part_scales)
    inline += made
    scales = measured if part_scales is not None else scales
  inline = iter(inline)
  return [
    found[i] if i in found else next(inline) for i in range(len(keys))
  ], scales


def _parts(keys: list, scales_at: int | None, sites: int) -> list:
  """(keys, scales_at or None) of each inline compile: all in one where
  they hold at most `INLINE_SITES` dot sites together (or `sites` is 0),
  else parts of at most `INLINE_SITES // sites` programs (at least one),
  the scales' program counted as one, made with the last part."""
  programs = len(keys) + (scales_at is not None)
  per = max(1, INLINE_SITES // sites) if sites else programs
  if programs <= per:
    return [(keys, scales_at)]
  parts = [(keys[i : i + per], None) for i in range(0, len(keys), per)]
  if scales_at is not None:
    last, _ = parts[-1] if parts else ([], None)
    if parts and len(last) < per:
      parts[-1] = (last, scales_at)
    else:
      parts.append(([], scales_at))
  return parts


def _emulate_inline(fn, keys, args_at, scales_at):
  """`emulate_together` of `keys` as one module of one emulator each."""
  extra = [] if scales_at is None else [scales_at]
  if not keys and not extra:
    return [], None
  sizes = list(dict.fromkeys([k[0] for k in keys] + extra))
  where = {n: i for i, n in enumerate(sizes)}
  sets = [args_at(n) for n in sizes]
  emulators = [
    (emulate.make_emulator(fn, sets[where[n]], a, order=o), where[n])
    for n, a, o in keys
  ]
  record, consts, count = None, None, 0
  if scales_at is not None:
    record, consts, count = emulate.scale_recorder(fn, sets[where[scales_at]])

  def every(arg_sets, scale_consts):
    outs = [
      tuple(jax.tree_util.tree_leaves(e(*arg_sets[i]))) for e, i in emulators
    ]
    if record is None:
      return outs, None
    leaves = jax.tree_util.tree_leaves(arg_sets[where[scales_at]])
    return outs, record(scale_consts, leaves)[1]

  outs, found = jax.jit(every)(sets, consts)
  leaves = [tuple(np.asarray(x) for x in xs) for xs in outs]
  return leaves, None if record is None else emulate.scales_of(found, count)


# Leaf types a jit call makes another type of where 64-bit types are off.
_WIDE64 = frozenset(
  np.dtype(t) for t in (np.float64, np.int64, np.uint64, np.complex128)
)


def _on_device(leaf):
  """A numpy array leaf as a jax array on the default device (a copy of
  its values: what a jit call would make of it), uncommitted, as a numpy
  argument is; a leaf of a `_WIDE64` type, or one not a numpy array, as
  it is."""
  if isinstance(leaf, np.ndarray) and leaf.dtype not in _WIDE64:
    return jax.device_put(leaf)
  return leaf


def _x64_if(x64: bool):
  """A context with 64-bit types enabled where `x64`: `jax.enable_x64(True)`
  (jax 0.10.2, 0.12.0.1), or `jax.experimental.enable_x64()` where jax has
  no `jax.enable_x64` (jax 0.4.38); else, or where neither exists, none."""
  if x64 and hasattr(jax, "enable_x64"):
    return jax.enable_x64(True)
  if x64:
    from jax import experimental

    if hasattr(experimental, "enable_x64"):
      return experimental.enable_x64()
  return contextlib.nullcontext()


class EmulationCache:
  """A case's emulated output leaves by (size, site algorithms, order).

  Made per sweep by the predictor, not kept globally.

  Args:
    case: the case.
    full: its `full_inputs()` (None for a sized case).
    sizes: the sweep's batch sizes in the order it visits them; () for no
      guessing.
    limit: most guessed emulations held unasked (`SPECULATION_LIMIT`).
    budget: bytes of outputs held besides the newest emulation
      (`kept.Kept`), raised to `HELD_EMULATIONS` outputs of the sizes
      asked for; a fetch whose missing outputs exceed it makes none ahead
      (each is made when asked for, so no more than it are held).
  """

  def __init__(
    self,
    case: Case,
    full: tuple | None,
    sizes: Sequence[int] = (),
    limit: int = SPECULATION_LIMIT,
    budget: int = KEPT_BYTES,
  ):
    self._case, self._full, self._limit = case, full, limit
    # A mesh case's dots split as its PartitionSpecs ask (`emulate.
    # with_mesh_splits`).
    self._fn = emulate.with_mesh_splits(case)
    self._sizes = tuple(dict.fromkeys(sizes))
    self._budget = budget
    self._outputs = Kept(budget)
    self._kept = Kept(budget)  # `kept_of`'s kept values by name
    self._counts: dict[int, int] = {}
    self._multiply_adds: dict[int, int] = {}  # size -> its sites' (`count`)
    self._bytes: dict[int, int] = {}  # size -> bytes of one emulation
    self._scales: tuple | None = None
    self._guessed: set[Key] = set()  # made on a guess, not yet asked for
    # (size, assignment) of each "xla"-order key asked for (`_guesses`).
    self._asked: set[tuple] = set()
    self._guessing = bool(self._sizes)
    self._attention: dict[int, dict] = {}  # size -> attention operands
    self._attention_bands: dict[tuple, object] = {}
    # argument index -> an unbatched argument's leaves on the device
    # (`args`), put there once.
    self._shared: dict[int, object] = {}
    # `by_rows`: the output leaves' batch axes, and per fixed order its
    # one-row emulation, switched or outlined (None where the program
    # cannot switch), and the trace they share.
    self._row_axes: tuple | None = None
    self._row_runs: dict[str, object] = {}
    self._row_closed = None
    # The fixed orders' switched compiles, by group (`_fixed_orders`).
    self._fixed: dict[tuple[str, ...], emulate.SwitchedEmulation] = {}

  def args(self, n: int | tuple[int, ...]) -> tuple:
    """The case's arguments at size n, or, for a tuple of rows, those rows
    of its full inputs gathered along each batched argument's axis (a
    batch of len(n); `rows.judged_rows`).

    A batch case's array leaves are jax arrays on the default device
    (`_on_device`; a 64-bit leaf stays numpy: what a jit call makes of
    it depends on the x64 mode): each unbatched one (weights) put there
    once and shared by every size and call, each batched one cut on the
    host as a view and put there once per call. A jit call given numpy
    arrays copies every one of them to the device each call (jaxlib
    0.12.0.1 and 0.10.2: 0.39 s a call for 256 MiB of f32 on the CPU,
    against 40 us for a device array; checked 2026-12-06): decode's 0.2 GB of weights and 0.27 GB of KV cache at n =
    64 were copied per emulation, and once per size in a compile of
    several sizes (issue 37). The values, and so the outputs, are the
    same.

    Raises:
      CaseError: n exceeds the full batch size.
      InvalidArgumentError: rows of a sized case (it has no full batch),
        or rows beyond the full batch.
    """
    if not isinstance(n, tuple):
      if self._full is None or self._case.swept_size is not None:
        return self._case.inputs_for(self._full, n)
      if n > self._case.full_size(self._full):
        return self._case.inputs_for(self._full, n)  # its CaseError
      cut = lambda a, ax: np.asarray(a)[
        (slice(None),) * (ax % np.ndim(a)) + (slice(0, n),)
      ]
      return self._batch_args(cut)
    if self._full is None or self._case.swept_size is not None:
      raise InvalidArgumentError(
        f"case {self._case.name!r} is sized: no rows to gather"
      )
    rows = np.asarray(n, np.int64)
    if rows.size == 0 or rows.max() >= self._case.full_size(self._full):
      raise InvalidArgumentError(
        f"rows {n[:3]}... do not fit case {self._case.name!r}'s "
        f"{self._case.full_size(self._full)} rows"
      )
    return self._batch_args(lambda a, ax: np.take(np.asarray(a), rows, ax))

  def _batch_args(self, cut: Callable) -> tuple:
    """The full inputs with each batched leaf `cut(leaf, axis)` and put on
    the device, each unbatched one the device copy held (`args`)."""
    out = []
    axes = self._case.arg_axes(len(self._full))
    for i, (arg, axis) in enumerate(zip(self._full, axes)):
      if axis is None:
        if i not in self._shared:
          self._shared[i] = jax.tree_util.tree_map(_on_device, arg)
        out.append(self._shared[i])
      else:
        out.append(
          jax.tree_util.tree_map(lambda a, ax=axis: _on_device(cut(a, ax)), arg)
        )
    return tuple(out)

  def by_rows(self, axes: Sequence[int | None], sites: int) -> bool:
    """From now on, a fixed order's emulation of gathered rows (a key whose
    size is a tuple of rows and whose order is not "xla") of single-pass
    algorithms (`emulate_dot.SWITCHABLE` at every site) is made a row at a
    time (issue 37: a large program, `rows.rows_whole`): a batch of one
    row whose every site chooses one of the single-pass algorithms at run
    time (`emulate.SwitchedEmulation`), one compile for the sequential and
    blocked orders (a site's order chosen at run time too) and one for
    pairwise (`_COMPILED_TOGETHER`), run once per row, order and
    assignment, each row's outputs held apart; or, where
    the program's sites repeat their shapes, that row walked eagerly with
    each distinct site compiled once (`emulate_outlined`: gpt2_12's three
    orders took 31 CPU-s of whole-program compiles). So F32's and the
    chosen assignment's fixed orders, at any rows of any size, share that
    one compile, and a row is emulated once, whatever the sizes that judge
    it.

    Each row's outputs are those of `emulate.emulate_case` of that
    assignment on that row alone (`SwitchedEmulation`; outlined, an f32
    evaluation in the same order whose elementwise ops XLA:CPU has not
    fused with the sites: `emulate_outlined`'s docstring); rows emulated in
    one batch may differ from them in the last bits where XLA:CPU fuses
    f32 products by shape (`emulate_dot._pairwise`). A program whose sites
    cannot switch (an attention primitive's) is emulated by the batch as
    before.

    Args:
      axes: each output leaf's batch axis (`References.axes`); a leaf
        without one (None) leaves the emulation by the batch.
      sites: the program's dot sites.

    Returns:
      Whether the fixed orders are now made a row at a time: False for an
      output leaf without a batch axis, or a program whose sites cannot
      switch (tried here: the first fixed order's compile, or its outlined
      walk of row 0 at F32, which the rows need anyway).
    """
    if None in axes:
      return False
    self._row_axes = tuple(axes)
    first = next(o for o in emulate.SUMMATION_ORDERS if o != "xla")
    if self._row_runs_of(first, sites) is None:
      self._row_axes = None
    return self._row_axes is not None

  def _by_rows(self, key: Key) -> bool:
    """Whether `key` is made a row at a time (`by_rows`)."""
    rows, algorithms, order = key
    return (
      self._row_axes is not None
      and isinstance(rows, tuple)
      and order != "xla"
      and set(algorithms) <= set(emulate.SWITCHABLE)
      and self._row_runs_of(order, len(algorithms)) is not None
    )

  def _row_runs_of(self, order: str, sites: int):
    """The one-row emulation of `order` (made once), or None where the
    program's sites cannot switch: outlined where its sites repeat their
    shapes (`emulate_outlined.repeats`, a deep program: each distinct site
    compiled alone, so the compiles do not grow with its depth), else one
    switched compile of the whole program."""
    if order not in self._row_runs:
      choices = (emulate.SWITCHABLE,) * sites
      args = self.args((0,))
      try:
        closed = self._row_trace(args)
        self._row_runs[order] = self._tried_outlined(
          args, choices, order, closed
        ) or functools.partial(
          self._fixed_orders(args, choices, closed, order), order=order
        )
      except (EmulationError, InvalidArgumentError):  # e.g. an attention
        self._row_runs[order] = None  # site: by the batch
    return self._row_runs[order]

  def _fixed_orders(
    self, args, choices, closed, order: str
  ) -> emulate.SwitchedEmulation:
    """The one-row switched emulation of `order`'s group of fixed orders
    (`_COMPILED_TOGETHER`), made once: one compile whose call names its
    order (the floor asks for every fixed order at each row it judges)."""
    group = next((g for g in _COMPILED_TOGETHER if order in g), (order,))
    if group not in self._fixed:
      self._fixed[group] = emulate.SwitchedEmulation(
        self._fn,
        args,
        choices,
        order=group if len(group) > 1 else order,
        closed=closed,
      )
    return self._fixed[group]

  def _tried_outlined(self, args, choices, order: str, closed):
    """`emulate_outlined.OutlinedEmulation` of a program whose sites repeat
    their shapes and that it outlines, tried on row 0 at F32 (kept: the
    noise floor's own assignment), as a switched emulation is tried by its
    compile; None where any of that fails (then compiled whole)."""
    if not emulate_outlined.repeats(plan_sites(closed.jaxpr)[1]):
      return None
    names = (_F32,) * len(choices)
    try:
      runs = emulate_outlined.OutlinedEmulation(
        self._fn, args, choices, order=order, closed=closed
      )
      out = runs(names, jax.tree_util.tree_leaves(args))
    except Exception:  # any failure: the whole-program compile instead
      return None
    self._outputs.put(((0,), names, order), out)
    return runs

  def _row_trace(self, args):
    """The case's function traced on one row (once: every order's)."""
    if self._row_closed is None:
      self._row_closed = trace(self._fn, args)[0]
    return self._row_closed

  def _row(self, r: int, algorithms: tuple[str, ...], order: str) -> tuple:
    """Row r's output leaves of a `_by_rows` assignment and order: held,
    or made alone (its order's one-row emulation, `_row_runs_of`) and
    held."""

    def make():
      runs = self._row_runs_of(order, len(algorithms))
      return runs(algorithms, jax.tree_util.tree_leaves(self.args((r,))))

    return self._outputs.get(((r,), algorithms, order), make)

  def _rows(self, key: Key) -> tuple:
    """The output leaves of a `_by_rows` key: each row's (`_row`) joined
    along the leaves' batch axes."""
    rows, algorithms, order = key
    found = [self._row(r, algorithms, order) for r in rows]
    return tuple(
      np.concatenate(leaves, axis=axis)
      for leaves, axis in zip(zip(*found), self._row_axes)
    )

  def count(self, n: int) -> int:
    """The emulator's dot sites at size n (one trace per size)."""
    if n not in self._counts:
      sites = emulate.jaxpr_sites(self._fn, self.args(n))
      self._counts[n] = len(sites)
      self._multiply_adds[n] = multiply_adds(sites)
    return self._counts[n]

  def row_multiply_adds(self) -> int:
    """The multiply-adds of the program's dot sites a batch row
    (`jaxpr_sites.multiply_adds`, an estimate): at 2 rows less at 1 (what
    does not grow with the batch, e.g. a dot of weights alone, is not a
    row's), or at 1 where the full batch has 1 row. One value per case,
    whatever the sizes asked for and their order (traced at sizes 1 and 2,
    each once, as `count`).

    Raises:
      InvalidArgumentError: a sized case (no full batch to cut rows of).
      Exception: what tracing the case raises.
    """
    sizes = _row_sizes(self._case, self._full)
    for n in sizes:
      self.count(n)
    return _per_row(*(self._multiply_adds[n] for n in sizes))

  def get(self, n: int, algorithms: tuple[str, ...], order="xla") -> tuple:
    """Every output leaf at size n (numpy); one not yet made is made
    alone, by `emulate.emulate_case`."""
    key = (n, algorithms, order)
    self._guessed.discard(key)
    if self._by_rows(key):
      return self._rows(key)
    self._hold(n)

    def make():
      with _x64_if(_needs_x64(algorithms)):
        out = emulate.emulate_case(
          self._fn, self.args(n), algorithms, order=order
        )
      return tuple(np.asarray(x) for x in jax.tree_util.tree_leaves(out))

    return self._outputs.get(key, make)

  def kept_of(
    self,
    n: int,
    assignments: Sequence[tuple[str, ...]],
    keep: Callable,
    name: Hashable = None,
  ) -> list:
    """`keep(output leaves)` of each assignment at size n ("xla" order):
    from the held outputs where held, else the missing ones together in
    one switched compile (`emulate.emulate_switched`), whose whole outputs
    are not held (a config's attribution needs only row 0 of each); those
    it cannot switch (a split's), a few emulators per compile
    (`_kept_inline`), their whole outputs not held either.

    With a `name` for what `keep` keeps (e.g. ("row 0", leaf)), the kept
    values are held too (`Kept`, within the budget), so that a later
    config asking for the same ones (a fix try of the baseline's
    algorithms, e.g. --xla_gpu_enable_triton_gemm=false where the sites
    stay TF32) compiles nothing.

    Each kept value is what `keep` makes of the very outputs `get` gives
    (a mesh case's dots split as its mesh asks in both: `with_mesh_splits`;
    the switched compile was given the case's own function, unsplit, until
    2026-12-07).
    """
    if name is not None:
      key = lambda a: (n, a, name)
      found = {
        a: self._kept.get(key(a), lambda: None)
        for a in assignments
        if key(a) in self._kept
      }
      wanted = list(dict.fromkeys(a for a in assignments if a not in found))
      for a, value in zip(wanted, self.kept_of(n, wanted, keep)):
        self._kept.put(key(a), value)
        found[a] = value
      return [found[a] for a in assignments]
    missing = list(
      dict.fromkeys(
        a for a in assignments if (n, a, "xla") not in self._outputs
      )
    )
    found: dict[tuple[str, ...], object] = {}
    if (
      len(missing) >= SWITCH_FROM
      and emulate.switchable(missing)
      and not any(_needs_x64(a) for a in missing)
    ):
      try:
        made = emulate.emulate_switched(
          self._fn, self.args(n), missing, keep=keep
        )
        found = dict(zip(missing, made))
      except EmulationError:  # e.g. an attention site: one at a time
        found = {}
    rest = [a for a in missing if a not in found]
    if len(rest) > 1:  # a split's (no switch): a few per compile
      found.update(self._kept_inline(n, rest, keep))
    return [
      found[a] if a in found else keep(self.get(n, a)) for a in assignments
    ]

  def _kept_inline(self, n: int, assignments: list, keep: Callable) -> dict:
    """{assignment: `keep(its output leaves)`} at size n ("xla" order),
    emulated `INLINE_SITES // sites` assignments a compile
    (`emulate_together`, one per x64 mode), so that no more than one
    part's whole outputs are held at once: a GPT-2 layer's twelve split
    share assignments at n = 8 are three compiles, where one
    `emulate_case` each (their outputs beyond the budget, `get`) was
    twelve (issue 37)."""
    sites = self._sites([(n, assignments[0], "xla")], None)
    per = max(1, INLINE_SITES // sites) if sites else len(assignments)
    found = {}
    for x64 in (False, True):
      group = [a for a in assignments if _needs_x64(a) == x64]
      for i in range(0, len(group), per):
        part = group[i : i + per]
        with _x64_if(x64):
          outs, _ = emulate_together(
            self._fn, [(n, a, "xla") for a in part], self.args, None, sites
          )
        found.update((a, keep(out)) for a, out in zip(part, outs))
        del outs
    return found

  def output_bytes(self, n: int) -> int:
    """The bytes of one emulation's outputs at size n (traced once)."""
    if n not in self._bytes:
      shapes = jax.eval_shape(self._fn, *self.args(n))
      self._bytes[n] = sum(
        int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize
        for a in jax.tree_util.tree_leaves(shapes)
      )
    return self._bytes[n]

  def _hold(self, n: int) -> int:
    """The budget in bytes, raised to `HELD_EMULATIONS` outputs at size n."""
    try:
      self._outputs.grow_budget(HELD_EMULATIONS * self.output_bytes(n))
      self._budget = max(self._budget, HELD_EMULATIONS * self.output_bytes(n))
    except Exception:  # the emulation names what fails, when asked
      pass
    return self._budget

  def fits(self, keys: Iterable[Key]) -> bool:
    """Whether `keys`' outputs fit the budget together (a `_by_rows` key's
    rows are made and held one at a time: not counted)."""
    keys = [k for k in keys if not self._by_rows(k)]
    try:
      for n in {k[0] for k in keys}:
        self._hold(n)
      return sum(self.output_bytes(k[0]) for k in keys) <= self._budget
    except Exception:  # the emulation names what fails, when asked
      return True

  def scales(self, n: int) -> tuple:
    """Each site's (max, rms) of |A||B| at size n, measured once (the first
    size asked for; the predictor always asks for its largest)."""
    if self._scales is None:
      self.fetch((), scales_at=n)
    return self._scales

  def attention_band(self, n: int, site: int, algorithm: str, k: int):
    """An attention site's `SiteBand` at `algorithm` from its operands at
    size n (`attention_band.attention_site_band`; None where not
    measured); operands read once per size, bands made once."""
    key = (n, site, algorithm, k)
    if key not in self._attention_bands:
      if n not in self._attention:
        try:
          self._attention[n] = attention_band.attention_operands(
            self._fn, self.args(n)
          )
        except EmulationError:  # the prediction names what (the backward)
          self._attention[n] = {}
      found = self._attention[n].get(site)
      self._attention_bands[key] = attention_band.attention_site_band(
        site, algorithm, k, found
      )
    return self._attention_bands[key]

  def attention_notes(self, n: int) -> AttentionBias | None:
    """The attention sites whose bias dtype is not q's (`AttentionBias`),
    from the operands `attention_band` read at size n; None where there is
    none."""
    found = tuple(
      (site, *dtypes)
      for site, (eqn, _) in sorted(self._attention.get(n, {}).items())
      if (dtypes := emulate_attention.bias_mismatch(eqn)) is not None
    )
    return AttentionBias(found) if found else None

  def visits(self, sizes: Sequence[int]) -> None:
    """The sizes the current sweep visits, in order, for the guesses from
    now on (explain's fix tries visit some of the sizes of the sweep that
    made the cache: a guess at a size no try visits would be made for
    nothing). A guess decides only when an output is made."""
    self._sizes = tuple(dict.fromkeys(sizes))

  @property
  def guessed(self) -> int:
    """How many guessed emulations nobody has asked for (yet)."""
    return len(self._guessed)

  def fetch(
    self,
    keys: Iterable[Key],
    scales_at: int | None = None,
    ahead_of: int | None = None,
  ) -> None:
    """Makes the missing `keys` (and the scales, once) in one compile.

    With `ahead_of=n`, the "xla"-order keys at size n are also guessed at
    the sweep's sizes after n (see the module docstring); a guess is made
    only along with something asked for, never alone.
    """
    keys = list(dict.fromkeys(keys))
    self._guessed.difference_update(keys)
    self._asked.update((n, a) for n, a, order in keys if order == "xla")
    for key in [k for k in keys if self._by_rows(k)]:
      rows, algorithms, order = key
      for r in rows:  # a row at a time, each row held
        self._row(r, algorithms, order)
      keys.remove(key)
    missing = [k for k in keys if k not in self._outputs]
    scales_at = scales_at if self._scales is None else None
    if not missing and scales_at is None:
      return
    guesses = [] if ahead_of is None else self._guesses(ahead_of, keys)
    if not self.fits(missing + guesses):
      guesses = []  # they would push out what was asked for
      if not self.fits(missing):
        missing = []  # made one at a time when asked for (`get`)
      if not missing and scales_at is None:
        return
    try:
      self._make(missing + guesses, scales_at)
    except Exception:
      if not guesses:
        raise
      self._guessing = False  # a guess failed: make what was asked for
      self._make(missing, scales_at)
      return
    self._guessed.update(guesses)

  def _guesses(self, n: int, keys: list[Key]) -> list[Key]:
    """The "xla"-order assignments of `keys` at size n that were asked for
    at the sweep's size before n too, at the sweep's sizes after n with as
    many sites, while the limit allows whole sizes."""
    if not self._guessing or n not in self._sizes:
      return []
    at = self._sizes.index(n)
    before = self._sizes[at - 1] if at else None
    wanted = [
      a
      for size, a, order in keys
      if size == n and order == "xla" and (before, a) in self._asked
    ]
    room = self._limit - len(self._guessed)
    found: list[Key] = []
    for m in self._sizes[at + 1 :]:
      new = [
        (m, a, "xla") for a in wanted if (m, a, "xla") not in self._outputs
      ]
      if len(found) + len(new) > room or not self._same_count(m, n):
        break
      found += new
    return found

  def _sites(self, keys: list[Key], scales_at: int | None) -> int:
    """The program's dot sites (`count` at a size counted already, else
    at a size of `keys` or the scales'), for `emulate_together`'s parts; 0
    when it cannot trace."""
    if self._counts:  # one program: the count does not change with size
      return max(self._counts.values())
    size = keys[0][0] if keys else scales_at
    try:
      return self.count(size)
    except Exception:  # the emulation names what fails, when asked
      return 0

  def _same_count(self, m: int, n: int) -> bool:
    try:
      return self.count(m) == self.count(n)
    except Exception:  # a size the case cannot trace: no guess there
      return False

  def _make(self, keys: list[Key], scales_at: int | None) -> None:
    """Emulates `keys` and the scales: one compile per x64 mode."""
    for x64 in (False, True):
      group = [k for k in keys if _needs_x64(k[1]) == x64]
      scales = None if x64 else scales_at
      if not group and scales is None:
        continue
      with _x64_if(x64):
        outs, found = emulate_together(
          self._fn, group, self.args, scales, self._sites(group, scales)
        )
      for key, out in zip(group, outs):
        self._outputs.put(key, out)
      if found is not None:
        self._scales = found
