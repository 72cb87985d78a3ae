"""The batch-invariance answer in words: one line per group, the bitwise
question first, then each class boundary and what explains it.

E.g. "row 0 is not batch-invariant on cpu under float32 (bits compared):
identical for n = 2-8; n = 1 differs by 31 ULP (sites 0-1 multiply+reduce
after dot strength reduction)".

Private in intent: use the package, `hloprobe.invariance`.
"""

from __future__ import annotations

from collections.abc import Sequence

from hloprobe.invariance.answer import KERNELS, RUN, Invariance, _ranges
from hloprobe.invariance.rows import ANCHOR, ANCHOR_OFFSETS, ROW0, RowClasses

__all__ = ["answer_lines", "kernel_lines"]

_BASIS = {RUN: "bits compared", KERNELS: "by kernel identity"}


def _where(a: Invariance, many_cases: bool) -> str:
  text = f"on {a.target} under {a.precision}"
  if a.experiment != "baseline":
    text += f" ({a.experiment})"
  return f"{text} ({a.case})" if many_cases else text


def _ulp(u: int | None) -> str:
  if u is None:
    return ""
  return f" by {u} ULP" if u != 1 else " by 1 ULP"


def _class_words(a: Invariance, c: RowClasses) -> list[str]:
  """ "identical for n = 2-8", then each other class with its cause."""
  same = "identical" if a.basis == RUN else "same per-row arithmetic"
  parts = [f"{same} for n = {_ranges(c.classes[0], a.sizes)}"]
  causes = {b.n: b for b in a.boundaries}
  for cls, u in zip(c.classes[1:], c.ulps[1:] or [None] * len(c.classes)):
    text = f"n = {_ranges(cls, a.sizes)} differs"
    text += _ulp(u) if a.basis == RUN else ""
    b = causes.get(cls[0])
    if b is not None:
      text += f" ({'; '.join(b.causes) or b.unexplained})"
    parts.append(text)
  return parts


def _row_line(a: Invariance, c: RowClasses, many: bool) -> str:
  name = (
    ROW0
    if c.row == ROW0
    else f"the anchor row (at the {', '.join(ANCHOR_OFFSETS)} offsets)"
  )
  if a.basis == KERNELS:
    name = "row 0 (every row alike)"
  where = _where(a, many)
  basis = _BASIS.get(a.basis, a.basis)
  ok = len(c.classes) == 1 and not c.moves
  if ok and a.invariant is not False:
    return (
      f"{name} is batch-invariant {where} ({basis}): identical for n = "
      f"{_ranges(c.classes[0], a.sizes)}"
    )
  parts = _class_words(a, c)
  for n, offsets in c.moves:
    at = ", ".join(str(o) for o in offsets)
    parts.append(f"at n = {n} its bits depend on its offset ({at} differ)")
  return f"{name} is not batch-invariant {where} ({basis}): " + "; ".join(parts)


def answer_lines(answers: Sequence[Invariance]) -> list[str]:
  """The answer's lines: per group, row 0's, then the anchor's (where
  run), or "unknown" and why; each line starts with the row."""
  many = len({a.case for a in answers}) > 1
  out = []
  for a in answers:
    if a.invariant is None and not a.rows:
      out.append(
        f"whether row 0 is batch-invariant {_where(a, many)} is unknown: "
        f"{a.why}"
      )
      continue
    for c in a.rows:
      line = _row_line(a, c, many)
      if a.invariant is None:
        line = (
          f"whether row 0 is batch-invariant {_where(a, many)} is unknown "
          f"({a.why}); read so far: " + "; ".join(_class_words(a, c))
        )
      out.append(line)
    if a.basis == RUN and a.row(ANCHOR) is None and a.invariant is not None:
      out.append(
        f"  (row 0 only {_where(a, many)}: the anchor row was not run)"
      )
  return out


def kernel_lines(answers: Sequence[Invariance]) -> list[str]:
  """Per compile-only group, each row kernel other than a contraction
  site's, per batch size: its per-row arithmetic (emitter, tiling) as
  the kernel reader gives it, so a reduction's tiling per n is seen."""
  out = []
  for a in answers:
    if not a.kernels:
      continue
    names = dict.fromkeys(
      k.name for ks in a.kernels.values() for k in ks if not k.sites
    )
    for name in names:
      per_n = []
      for n in sorted(a.kernels):
        k = next((k for k in a.kernels[n] if k.name == name), None)
        if k is not None:
          per_n.append(f"n = {n}: {k.words}")
      out.append(f"  {a.target} {a.precision} {name}: " + "; ".join(per_n))
  return out
