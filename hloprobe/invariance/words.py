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
from hloprobe.invariance.pin import NOT_TRIED
from hloprobe.invariance.rows import ANCHOR, ANCHOR_OFFSETS, ROW0, RowClasses

__all__ = [
  "answer_lines",
  "first_lines",
  "invariance_json",
  "kernel_lines",
  "pin_lines",
]

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
  ok = c.invariant if a.basis == RUN else a.invariant is True
  if ok:
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
      why = f": {a.why}" if a.why else ""
      out.append(
        f"  (row 0 only {_where(a, many)}: the anchor row was not run{why})"
      )
  return out


def kernel_lines(answers: Sequence[Invariance]) -> list[str]:
  """Per compile-only group, each row kernel other than a contraction
  site's, per batch size: its per-row arithmetic (emitter, tiling) as the
  kernel reader gives it, so a reduction's tiling per n is seen. Kernels
  are matched across n by their place among the group's non-contraction
  kernels of the same kind (XLA renumbers fusions from n to n)."""
  out = []
  for a in answers:
    if not a.kernels:
      continue
    per_slot: dict[tuple[str, int], list[str]] = {}
    for n in sorted(a.kernels):
      seen: dict[str, int] = {}
      for k in a.kernels[n]:
        if k.sites:
          continue
        i = seen.get(k.kind, 0)
        seen[k.kind] = i + 1
        per_slot.setdefault((k.kind, i), []).append(
          f"n = {n}: {k.name}: {k.words}"
        )
    for (kind, i), per_n in per_slot.items():
      out.append(
        f"  {a.case} on {a.target} under {a.precision}, {kind} {i + 1}: "
        + "; ".join(per_n)
      )
  return out


def pin_lines(pins: Sequence) -> list[str]:
  """The bitwise question's "Do:": per group searched, the first pin that
  passed (its flags, JAX change, cost and `verify` command), else that
  none did, then each candidate tried in one line."""
  out = []
  groups: dict[tuple, list] = {}
  for p in pins:
    groups.setdefault((p.case, p.target, p.precision), []).append(p)
  for (case, target, precision), ps in groups.items():
    passed = [p for p in ps if p.passed]
    where = f"{case} on {target} under {precision}"
    if passed:
      p = passed[0]
      c = p.candidate
      if c.precision is not None:
        how = f"precision {c.precision}"
      else:
        how = f"XLA_FLAGS='{' '.join(c.flags)}'"
      if c.jax_code():
        how += f" (in JAX: {c.jax_code()})"
      out.append(
        f"Do: pin {where} with {how} ({c.words}; cost: {p.cost}): {p.command}"
      )
    elif all(p.passed is None and p.reason == NOT_TRIED for p in ps):
      out.append(
        f"Do: to pin {where}, try (explain --invariance=pin tries them):"
      )
      out += [f"  {p.candidate.name}: {p.command}" for p in ps]
      continue
    else:
      out.append(f"Do: no setting tried pins {where} ({len(ps)} tried, below)")
    out += [
      f"  {'passes' if p.passed else 'fails' if p.passed is False else 'unknown'}"
      f": {p.candidate.name}: {p.reason}"
      for p in ps
      if not (passed and p is passed[0])
    ]
  return out


def first_lines(
  answers: Sequence[Invariance], pins: Sequence = (), kernels: bool = True
) -> list[str]:
  """What `explain` prints first: the bitwise answer of every group,
  the reductions per n (compile-only) and the pins, before explain's
  "Answer:" (no blank line between: one block, as report.html opens
  with it); [] when the question was not asked (no answers). `kernels`:
  False leaves the reductions per n out (explain's one screen when a
  finding leads: they come with --verbose)."""
  if not answers:
    return []
  listed = kernel_lines(answers) if kernels else []
  return answer_lines(answers) + listed + pin_lines(pins)


def invariance_json(answers: Sequence[Invariance], pins: Sequence = ()) -> dict:
  """The answer as JSON (results.json's and `explain --format=json`'s
  "invariance"): {"groups": [{case, target, precision, experiment,
  basis, invariant (true/false/null), why, sizes, rows: [{row, classes,
  ulps, moves}], boundaries: [{n, against, causes, unexplained}],
  kernels: {n: [{name, kind, sites, signature, words, why_unknown}]}}],
  "pins": [{case, target, precision, candidate, fix, xla_flags,
  jax_change, passed, reason, cost, command}]}."""
  groups = []
  for a in answers:
    groups.append(
      {
        "case": a.case,
        "target": a.target,
        "precision": a.precision,
        "experiment": a.experiment,
        "basis": a.basis,
        "invariant": a.invariant,
        "why": a.why,
        "sizes": list(a.sizes),
        "rows": [
          {
            "row": c.row,
            "classes": [list(x) for x in c.classes],
            "ulps": list(c.ulps),
            "moves": [[n, list(o)] for n, o in c.moves],
          }
          for c in a.rows
        ],
        "boundaries": [
          {
            "n": b.n,
            "against": b.against,
            "causes": list(b.causes),
            "unexplained": b.unexplained,
          }
          for b in a.boundaries
        ],
        "kernels": {
          str(n): [
            {
              "name": k.name,
              "kind": k.kind,
              "sites": list(k.sites),
              "signature": k.signature,
              "words": k.words,
              "why_unknown": k.why_unknown,
            }
            for k in ks
          ]
          for n, ks in a.kernels.items()
        },
      }
    )
  return {
    "groups": groups,
    "pins": [
      {
        "case": p.case,
        "target": p.target,
        "precision": p.precision,
        "candidate": p.candidate.name,
        "fix": p.candidate.fix,
        "xla_flags": list(p.candidate.flags),
        "jax_change": p.candidate.jax_code(),
        "passed": p.passed,
        "reason": p.reason,
        "cost": p.cost,
        "command": p.command,
      }
      for p in pins
    ],
  }
