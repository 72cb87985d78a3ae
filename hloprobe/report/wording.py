"""Small words shared by explain's renderers: runs of equal keys and
number ranges ("2-4, 9").

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

__all__ = ["numbers", "runs"]


def runs(items: Iterable, key) -> list[list]:
  """Splits items into runs of consecutive equal keys."""
  return [list(g) for _, g in itertools.groupby(items, key)]


def numbers(values: Sequence[int]) -> str:
  """(1,) -> "1"; (2, 3, 4, 9) -> "2-4, 9"; (0, 1, 2) -> "0-2"."""
  found = runs(enumerate(values), lambda iv: iv[1] - iv[0])
  return ", ".join(
    str(r[0][1]) if len(r) == 1 else f"{r[0][1]}-{r[-1][1]}" for r in found
  )
