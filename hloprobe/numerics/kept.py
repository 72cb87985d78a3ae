"""A cache of whole arrays held within a byte budget (issue 27 item 18).

A sweep's numerics cache whole arrays between configs: the float64
references and the executor's F32 runs per size (`reference.References`),
the emulated outputs per (size, site algorithms, order)
(`emulation_cache.EmulationCache`) and the optimized modules' executions
(`made.MadeChecker`). For the usual case (outputs of kilobytes) they all
fit; for a case whose outputs are hundreds of MiB, keeping every size's
would hold several copies of every output a sweep made. `Kept` holds its
entries least recently used first and drops the oldest while the arrays
it holds exceed its budget (`KEPT_BYTES`); the newest entry is held even
when it alone exceeds it, so the caller's next look-up of the same key
does not redo it. A dropped entry is made again when asked for: every
entry is a deterministic function of its key, so what a sweep computes
does not change, only when.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Hashable

import numpy as np

__all__ = ["KEPT_BYTES", "Kept", "array_bytes"]

# The bytes of arrays one `Kept` holds beyond its newest entry: 16 MiB, a
# few thousand configs' worth of the built-in cases' outputs, so a sweep of
# small cases never drops an entry.
KEPT_BYTES = 16 << 20


def array_bytes(value) -> int:
  """The bytes of the numpy arrays in `value`: an array, a tuple or list
  of them (nested), or a dataclass whose fields hold them; 0 for others."""
  if isinstance(value, np.ndarray):
    return value.nbytes
  if isinstance(value, (tuple, list)):
    return sum(array_bytes(v) for v in value)
  if dataclasses.is_dataclass(value) and not isinstance(value, type):
    return sum(
      array_bytes(getattr(value, f.name)) for f in dataclasses.fields(value)
    )
  return 0


class Kept:
  """Entries by key, least recently used dropped beyond a byte budget.

  Args:
    budget: bytes of arrays held besides the newest entry.
  """

  def __init__(self, budget: int = KEPT_BYTES):
    self._budget = budget
    self._entries: collections.OrderedDict = collections.OrderedDict()
    self._bytes: dict[Hashable, int] = {}

  def __contains__(self, key: Hashable) -> bool:
    return key in self._entries

  def __len__(self) -> int:
    return len(self._entries)

  @property
  def held_bytes(self) -> int:
    """The bytes of arrays held now."""
    return sum(self._bytes.values())

  def get(self, key: Hashable, make: Callable[[], object]):
    """The entry of `key`, made by `make()` when not held (then held)."""
    if key in self._entries:
      self._entries.move_to_end(key)
      return self._entries[key]
    value = make()
    self.put(key, value)
    return value

  def put(self, key: Hashable, value) -> None:
    """Holds `value` as `key`'s newest entry, dropping the oldest ones
    while the others exceed the budget."""
    self._entries[key] = value
    self._entries.move_to_end(key)
    self._bytes[key] = array_bytes(value)
    while len(self._entries) > 1 and self.held_bytes - self._bytes[key] > (
      self._budget
    ):
      old, _ = self._entries.popitem(last=False)
      del self._bytes[old]

  def grow_budget(self, budget: int) -> None:
    """Raises the budget to `budget` bytes (never lowers it)."""
    self._budget = max(self._budget, budget)

  def discard(self, key: Hashable) -> None:
    """Drops `key`'s entry, if held."""
    self._entries.pop(key, None)
    self._bytes.pop(key, None)
