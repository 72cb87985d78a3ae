"""The rows whose bits are compared across batch sizes, and their classes.

A config's rows (`ConfigRows`): row 0 of the sweep's own inputs (every
batch size cuts the case's full inputs to their first n rows, so row 0
is the same input at every n) and, where asked, an anchor row: the case's
last full-size input row placed at the first, a middle (n // 2) and the
last offset of a batch of n whose other rows are drawn from the rest
(as vLLM's batch-invariance tests place one prompt among random others:
tests/v1/generation/test_batch_invariance.py; a large program's anchor at
all three in one batch, `runs.anchor_rows_of`). Bits are compared exactly:
each batched output leaf's row viewed as raw bytes (a float's sign, NaN
payload and -0 count).

`classes_of` splits the batch sizes into classes of identical bits.

Private in intent: use the package, `hloprobe.invariance`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from hloprobe.numerics import ulp_distance
from hloprobe.records import Failure

__all__ = [
  "ANCHOR_OFFSETS",
  "ROW0",
  "ANCHOR",
  "ConfigRows",
  "RowClasses",
  "anchor_offsets",
  "bits",
  "classes_of",
  "row_of",
  "ulps",
]

ROW0, ANCHOR = "row 0", "anchor row"
# The anchor's offsets, in words, as `anchor_offsets` places them.
ANCHOR_OFFSETS = ("first", "middle", "last")


def anchor_offsets(n: int) -> tuple[int, ...]:
  """The anchor's offsets in a batch of n: first, middle, last (0,
  n // 2, n - 1; one offset for n = 1, repeated so that every n has
  three).

  Raises:
    ValueError: n < 1.
  """
  if n < 1:
    raise ValueError(f"batch size {n} < 1")
  return (0, n // 2, n - 1)


def row_of(
  leaves: Sequence[np.ndarray], axes: Sequence[int | None], offset: int
) -> tuple[np.ndarray, ...]:
  """Row `offset` of every batched leaf (leaves of axis None are skipped),
  each flattened, in its own dtype (a copy: the outputs may be freed).

  Raises:
    IndexError: `offset` is beyond a leaf's batch axis.
  """
  return tuple(
    np.ravel(np.take(np.asarray(leaf), offset, axis=axis)).copy()
    for leaf, axis in zip(leaves, axes)
    if axis is not None
  )


@dataclasses.dataclass(frozen=True)
class ConfigRows:
  """One config's compared rows (what a run, or the sweep's records, give).

  Attributes:
    n: the batch size.
    row0: row 0 of every batched output leaf (flattened, output dtype),
      or None where not known.
    anchor: per anchor offset (`anchor_offsets(n)` order), the anchor
      row of every batched leaf; () where no anchor was run.
    leaves: the batched leaves' names, in the order of the rows' arrays.
  """

  n: int
  row0: tuple[np.ndarray, ...] | None
  anchor: tuple[tuple[np.ndarray, ...], ...] = ()
  leaves: tuple[str, ...] = ()

  def rows(self, name: str) -> tuple[np.ndarray, ...] | None:
    """Row `name` (ROW0, or ANCHOR at its first offset), or None."""
    if name == ROW0:
      return self.row0
    return self.anchor[0] if self.anchor else None

  def anchor_moves(self) -> tuple[int, ...]:
    """Offsets (of `anchor_offsets(n)`) whose anchor bits differ from the
    first offset's: a row whose bits depend on where it sits."""
    if not self.anchor:
      return ()
    first = bits(self.anchor[0])
    offsets = anchor_offsets(self.n)
    return tuple(
      sorted({o for o, a in zip(offsets, self.anchor) if bits(a) != first})
    )


def bits(row: tuple[np.ndarray, ...]) -> bytes:
  """The row's raw bytes, leaf after leaf (dtype and shape included, so
  two rows of other types never compare equal)."""
  parts = []
  for a in row:
    a = np.ascontiguousarray(a)
    parts.append(f"{a.dtype.str}{a.shape}".encode())
    parts.append(a.view(np.uint8).tobytes())
  return b"|".join(parts)


def ulps(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> int | None:
  """The largest ULP distance between two rows' float leaves (0 when
  identical); None when no leaf is a float or the shapes differ."""
  found = []
  for x, y in zip(a, b):
    if x.shape != y.shape:
      return None
    try:
      found.append(ulp_distance(x, y, x.dtype))
    except KeyError:  # an integer leaf: no ULPs
      continue
  return max(found) if found else None


@dataclasses.dataclass(frozen=True)
class RowClasses:
  """One row's batch sizes, split by identical bits.

  Attributes:
    row: ROW0 or ANCHOR.
    classes: the batch sizes of each class, ascending; the reference
      class first (the largest, the earliest of equals), then the others
      in the order of their smallest n.
    ulps: per class, the largest ULP distance of its row from the
      reference class's (0 for it; None where no leaf is a float).
    moves: (n, offsets) for each n where the anchor's bits depend on its
      offset in the batch (ANCHOR only).
    missing: batch sizes whose row is not known (a failed config, a
      target that does not run), each with its config's `Failure` (None:
      the config did not fail, its row was not run).
  """

  row: str
  classes: tuple[tuple[int, ...], ...]
  ulps: tuple[int | None, ...] = ()
  moves: tuple[tuple[int, tuple[int, ...]], ...] = ()
  missing: tuple[tuple[int, Failure | None], ...] = ()

  @property
  def invariant(self) -> bool:
    """One class (at least two sizes known) and no offset moves."""
    known = sum(len(c) for c in self.classes)
    return len(self.classes) == 1 and known >= 2 and not self.moves

  def class_of(self, n: int) -> int | None:
    """The index of n's class, or None when n is not known."""
    return next((i for i, c in enumerate(self.classes) if n in c), None)


def classes_of(
  configs: Sequence[ConfigRows],
  row: str = ROW0,
  missing: Sequence[tuple[int, Failure | None]] = (),
  prefer: Callable[[tuple[int, ...]], bool] | None = None,
) -> RowClasses | None:
  """Splits the configs' batch sizes into classes of identical bits of
  `row`; None when no config has that row. The reference (first) class
  is the largest; of equals, the first that `prefer` holds for (e.g.
  one whose sizes share their sites' fates), else the earliest.

  Args:
    configs: one `ConfigRows` per batch size (any order).
    row: ROW0 or ANCHOR (compared at its first offset across n; its other
      offsets are checked within each n, `ConfigRows.anchor_moves`).
    missing: (n, failure) of batch sizes not known, kept on the record.
    prefer: breaks a tie of the largest classes (their sizes, ascending);
      None: the earliest.
  """
  known = sorted(
    (c for c in configs if c.rows(row) is not None), key=lambda c: c.n
  )
  if not known:
    return None
  groups: dict[bytes, list[ConfigRows]] = {}
  for c in known:
    groups.setdefault(bits(c.rows(row)), []).append(c)
  ordered = sorted(groups.values(), key=lambda g: g[0].n)
  biggest = max(ordered, key=len)  # the reference: the largest class
  if prefer is not None:
    tied = [g for g in ordered if len(g) == len(biggest)]
    biggest = next((g for g in tied if prefer(tuple(c.n for c in g))), biggest)
  ordered = [biggest, *(g for g in ordered if g is not biggest)]
  first = ordered[0][0].rows(row)
  distances = tuple(
    0 if i == 0 else _max_ulps(first, g, row) for i, g in enumerate(ordered)
  )
  moves = ()
  if row == ANCHOR:
    moves = tuple((c.n, m) for c in known if (m := c.anchor_moves()))
  return RowClasses(
    row,
    tuple(tuple(c.n for c in g) for g in ordered),
    distances,
    moves,
    tuple(missing),
  )


def _max_ulps(first, group: list[ConfigRows], row: str) -> int | None:
  found = [ulps(first, g.rows(row)) for g in group[:1]]
  return found[0]
