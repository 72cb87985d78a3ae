"""The batch-invariance answer in words: one line per group, the bitwise
question first, then each class boundary and what explains it.

E.g. "row 0 is not batch-invariant on cpu under float32 (bits compared):
identical for n = 2-8; n = 1 differs by 31 ULP (sites 0-1 multiply+reduce
after dot strength reduction)".

`hloprobe.invariance` returns the records (`Invariance`, its pins); the
words are made here, at the edge (issue 36 item 2). Private in intent:
use the package, `hloprobe.report` (its explain answer, pages and
results.json carry these words).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from hloprobe.invariance import Invariance
from hloprobe.report.invariance_causes import (
  boundary_causes,
  changed_phrases,
  kernel_words,
  model_why_words,
  unexplained_words,
  unread_words,
)

__all__ = [
  "answer_lines",
  "apart_words",
  "candidate_words",
  "first_lines",
  "invariance_json",
  "kernel_lines",
  "pin_cost",
  "pin_lines",
  "pin_reason",
]

_BASIS = {
  Invariance.RUN: "bits compared",
  Invariance.MODEL: "backed by the kernel model's bits",
  Invariance.KERNELS: "by kernel identity",
}
# Bases whose classes are of bits (ULPs between them told).
_BITS = (Invariance.RUN, Invariance.MODEL)


def _where(a: Invariance, many_cases: bool) -> str:
  text = f"on {a.target} under {a.precision}"
  if a.experiment != "baseline":
    text += f" ({a.experiment})"
  return f"{text} ({a.case})" if many_cases else text


def _ranges(a: Invariance, ns: Sequence[int]) -> str:
  """Batch sizes as runs over `a`'s swept ones: "2-8", "1", "2, 64"."""
  return ", ".join(str(f) if f == t else f"{f}-{t}" for f, t in a.runs(ns))


def _missing_words(missing) -> str:
  """A size not known (n, its config's `Failure` or None) without its n:
  "failed at compile: XlaRuntimeError: ..." or "not run"."""
  _, failure = missing
  if failure is None:
    return "not run"
  return f"failed at {failure.stage}: {failure.error}"


def _why_words(a: Invariance) -> str | None:
  """`a.why` (a `Why`: why the answer is unknown, or a note) in one line,
  e.g. "only n = 1 ran; not run: 2: not run"; None for none."""
  why, gap = a.why, Invariance.GAP
  if why is None:
    return None
  if why.gap == gap.NONE_RAN:
    if why.missing is None:
      return "no batched output leaf"
    return (
      f"no config ran (n = {why.missing[0]}: {_missing_words(why.missing)})"
    )
  if why.gap == gap.SOME_RAN:
    words = f"only n = {_ranges(a, why.sizes)} ran"
    if why.missing is not None:
      words += f"; not run: {why.missing[0]}: {_missing_words(why.missing)}"
    return words
  if why.gap == gap.ONE_SIZE:
    return "one size compiled"
  if why.gap == gap.UNBATCHED:
    said = ", ".join("[" + ",".join(map(str, d)) + "]" for d in why.shapes)
    return (
      f"no output leaf carries the batch (each has the same shape, {said}, "
      "at every n: reduced over the batch, e.g. a mean): it is not a "
      "per-row output, and its bits may change with n by design; no kernel "
      "is blamed"
    )
  if why.gap == gap.KERNEL:
    return unread_words(why.kernel)
  return why.message  # ROWS_FAILED: the error's first line


def _ulp(u: int | None) -> str:
  if u is None:
    return ""
  return f" by {u} ULP" if u != 1 else " by 1 ULP"


def _class_words(a: Invariance, c) -> list[str]:
  """ "identical for n = 2-8", then each other class with its cause."""
  same = "identical" if _by_bits(a, c.classes[0]) else "same per-row arithmetic"
  parts = [f"{same} for n = {_ranges(a, c.classes[0])}"]
  m = a.mixed
  if m is not None and m.n in c.classes[0]:
    parts[0] += f" ({_mixed_words(a, m)})"
  causes = {b.n: b for b in a.boundaries}
  for cls, u in zip(c.classes[1:], c.ulps[1:] or [None] * len(c.classes)):
    text = f"n = {_ranges(a, cls)} differs"
    text += _ulp(u) if _by_bits(a, cls) else ""
    b = causes.get(cls[0])
    if b is not None and b.parts:
      text += (
        " ("
        + "; ".join(
          f"at n = {_ranges(a, p.sizes)}: {_cause_words(p)}" for p in b.parts
        )
        + ")"
      )
    elif b is not None:
      text += f" ({_cause_words(b)})"
    parts.append(text)
  return parts


def _cause_words(b) -> str:
  """A boundary's causes in one clause, or what was read where none is
  named."""
  said, _ = boundary_causes(b)
  return "; ".join(said) or unexplained_words(b.unexplained) or ""


def _mixed_words(a: Invariance, m) -> str:
  """The reference class's sizes whose sites' fates differ from its
  first size's (`Invariance.mixed`), though their bits are equal: "same
  bits though the sites' fates differ: at n = 64: site 0 dot in
  __ynn_fusion (XLA's own emitter at n = 1)"."""
  return "same bits though the sites' fates differ: " + "; ".join(
    f"at n = {_ranges(a, p.sizes)}: {_cause_words(p)}" for p in m.parts
  )


def _by_bits(a: Invariance, cls) -> bool:
  """Whether class `cls` of `a` is one of bits (run, or the kernel
  model's), not of kernel identity."""
  return a.basis in _BITS or (
    bool(a.model_sizes) and set(cls) <= set(a.model_sizes)
  )


def _row_line(a: Invariance, c, many: bool) -> str:
  name = (
    Invariance.ROW0
    if c.row == Invariance.ROW0
    else f"the anchor row (at the {', '.join(Invariance.ANCHOR_OFFSETS)} offsets)"
  )
  if a.basis == Invariance.KERNELS:
    name = "row 0 (every row alike)"
  where = _where(a, many)
  basis = _BASIS.get(a.basis, a.basis)
  ok = c.invariant if a.basis == Invariance.RUN else a.invariant is True
  if ok:
    return (
      f"{name} is batch-invariant {where} ({basis}): identical for n = "
      f"{_ranges(a, c.classes[0])}"
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
        f"{_why_words(a)}"
      )
      continue
    for c in a.rows:
      line = _row_line(a, c, many)
      if a.invariant is None:
        line = (
          f"whether row 0 is batch-invariant {_where(a, many)} is unknown "
          f"({_why_words(a)}); read so far: " + "; ".join(_class_words(a, c))
        )
      out.append(line)
    if (
      a.basis == Invariance.RUN
      and a.row(Invariance.ANCHOR) is None
      and a.invariant is not None
    ):
      why = f": {_why_words(a)}" if a.why else ""
      out.append(
        f"  (row 0 only {_where(a, many)}: the anchor row was not run{why})"
      )
    out += _model_notes(a, many)
  return out


def _model_notes(a: Invariance, many: bool) -> list[str]:
  """A compile-only group's note on the kernel model's bits: which sizes
  they class and why not the others, and where kernel identity alone
  splits otherwise."""
  out = []
  where = _where(a, many)
  if a.model_sizes and a.basis != Invariance.MODEL:
    out.append(
      f"  (n = {_ranges(a, a.model_sizes)} {where} by the kernel "
      f"model's bits, the others by kernel identity; "
      f"{model_why_words(a.model_why)})"
    )
  elif a.model_why:
    out.append(
      f"  (not backed by the kernel model's bits {where}: "
      f"{model_why_words(a.model_why)})"
    )
  if a.identity:
    split = "; ".join(_ranges(a, c) for c in a.identity)
    out.append(
      f"  (kernel identity alone {where} gives n = {split}: kernels of "
      "other signatures compute the same bits in the kernel model)"
    )
  return out


def kernel_lines(answers: Sequence[Invariance]) -> list[str]:
  """Per compile-only group, each row kernel that is not a contraction
  site's gemm (a reduction that also computes sites, e.g. one Triton
  block-level fusion holding a whole row at n = 1, is listed too), per
  batch size: its per-row arithmetic (emitter, tiling) as the kernel
  reader gives it, so a reduction's tiling per n is seen, kernel by
  kernel. Kernels are matched across n by what they compute: each is
  put beside the kernel of the same kind, at the reference class's first
  size, that shares the most program lines with it (ties: the one whose
  lines are closest to its own; XLA renumbers fusions from n to n, and
  splits or joins them: at n = 1 a layernorm's Triton fusion is two XLA
  row reductions, both listed under it); one with no such partner has a
  line of its own. A kernel that also covers another line's program
  lines is named there too, at its n, pointing to where it is listed in
  full. Each line is titled by the program lines of its kernels, e.g.
  "reduction at model.py:49-52"."""
  out = []
  for a in answers:
    if not a.kernels:
      continue
    slots = _kernel_slots(a)
    titles = [
      _lines_words(
        loc for ks in per_n.values() for k in ks for loc in _source(k)
      )
      for _, per_n, _ in slots
    ]
    for (kind, per_n, also), lines in zip(slots, titles, strict=True):
      where = f" at {lines}" if lines else ""
      words = {
        n: [f"{k.name}: {kernel_words(k)}" for k in ks]
        for n, ks in per_n.items()
      }
      for n, refs in also.items():
        words.setdefault(n, []).extend(
          f"{k.name} (listed in full under {slots[i][0]}"
          + (f" at {titles[i]})" if titles[i] else ")")
          for k, i in refs
        )
      out.append(
        f"  {a.case} on {a.target} under {a.precision}, {kind}{where}: "
        + "; ".join(f"n = {n}: " + " + ".join(words[n]) for n in sorted(words))
      )
    gone = _left_out_words(a)
    if gone:
      out.append(
        f"  {a.case} on {a.target} under {a.precision}, not judged (they "
        "reach only outputs that do not carry the batch, e.g. a mean over "
        f"it, and compute no row): {gone}"
      )
  return out


def _source(k) -> tuple[str, ...]:
  """A kernel's program lines (`file:line`), from its kernels-stage
  record; () where the fates were read instead."""
  return tuple(getattr(k.record, "source", ()) or ())


def _listed(k) -> bool:
  """Whether `kernel_lines` lists row kernel `k`: every kernel but a
  contraction site's gemm (its fate names it); a reduction that also
  computes sites is listed (at n = 1 XLA may fuse the dots, strength
  reduced to multiply+reduce, with the layernorm and softmax into one
  Triton block-level fusion: dense_ln_softmax on a100, jaxlib 0.12.0.1
  and 0.10.2, `triton_softmax.2`, the name SoftmaxRewriterTriton's
  MakeFusionForDiamond gives its "__triton" fusion,
  xla/service/gpu/transforms/softmax_rewriter_triton.cc; which later
  pass joins the producers into it was not checked)."""
  return not k.sites or k.kind == "reduction"


def _kernel_slots(
  a: Invariance,
) -> list[tuple[str, dict[int, list], dict[int, list]]]:
  """[(kind, {n: [kernels]}, {n: [(kernel, slot index)]})]: the group's
  listed kernels (`_listed`), matched across n (`kernel_lines`), in the
  reference size's order, then those with no partner there; the last
  map names, per n, the kernels listed in full in another slot that
  cover this slot's program lines too."""
  ref = a.rows[0].classes[0][0] if a.rows and a.rows[0].classes else None
  order = sorted(a.kernels)
  if ref not in a.kernels:
    ref = order[0]
  slots: list[tuple[str, dict[int, list], set]] = []
  for k in a.kernels[ref]:
    if _listed(k):
      slots.append((k.kind, {ref: [k]}, set(_source(k))))
  for n in order:
    if n == ref:
      continue
    for k in a.kernels[n]:
      if not _listed(k):
        continue
      mine = set(_source(k))
      best, score = None, (0, 0, 0)
      for slot in slots:
        kind, per_n, lines = slot
        if kind != k.kind or ref not in per_n:
          continue
        shared = len(mine & lines)
        # Most lines shared; then the closest lines; then the same name.
        key = (shared, -len(mine ^ lines), per_n[ref][0].name == k.name)
        if shared and key > score:
          best, score = slot, key
      if best is None and not mine:  # no program lines: by order
        best = next(
          (
            slot
            for slot in slots
            if slot[0] == k.kind and ref in slot[1] and n not in slot[1]
          ),
          None,
        )
      if best is None:
        best = next(
          (
            slot
            for slot in slots
            if slot[0] == k.kind and ref not in slot[1] and slot[2] == mine
          ),
          None,
        )
      if best is None:
        best = (k.kind, {}, mine)
        slots.append(best)
      best[1].setdefault(n, []).append(k)
  where = {
    id(k): i
    for i, (_, per_n, _) in enumerate(slots)
    for ks in per_n.values()
    for k in ks
  }
  out = []
  for kind, per_n, lines in slots:
    also: dict[int, list] = {}
    if ref in per_n:
      for n in order:
        if n in per_n:
          continue
        for k in a.kernels[n]:
          if id(k) in where and k.kind == kind and lines & set(_source(k)):
            also.setdefault(n, []).append((k, where[id(k)]))
    out.append((kind, per_n, also))
  return out


def _lines_words(locations) -> str:
  """Program lines as "model.py:49-52" ("a.py:3, b.py:7" across files);
  "" for none."""
  by_file: dict[str, set[int]] = {}
  for loc in locations:
    path, _, line = str(loc).rpartition(":")
    if path and line.isdigit():
      by_file.setdefault(os.path.basename(path), set()).add(int(line))
  out = []
  for name, lines in by_file.items():
    ordered = sorted(lines)
    runs, start = [], 0
    for i in range(1, len(ordered) + 1):
      if i == len(ordered) or ordered[i] != ordered[i - 1] + 1:
        a, b = ordered[start], ordered[i - 1]
        runs.append(str(a) if a == b else f"{a}-{b}")
        start = i
    out.append(f"{name}:{', '.join(runs)}")
  return ", ".join(out)


def _left_out_words(a: Invariance) -> str:
  """The left-out kernels, one phrase per computation: "reduce_sum at
  my_case.py:10 (input_reduce_fusion at n = 1-8)"; "" for none."""
  by_what: dict[str, dict[str, list[int]]] = {}
  for n in sorted(a.left_out):
    for k in a.left_out[n]:
      rec = k.record
      ops = ", ".join(getattr(rec, "ops", ()) or ()) or k.kind
      src = ", ".join(
        os.path.basename(w) for w in getattr(rec, "source", ()) or ()
      )
      what = f"{k.kind} {ops}" + (f" at {src}" if src else "")
      by_what.setdefault(what, {}).setdefault(k.name, []).append(n)
  return "; ".join(
    f"{what} ("
    + ", ".join(f"{name} at n = {_ranges(a, ns)}" for name, ns in names.items())
    + ")"
    for what, names in by_what.items()
  )


# What each pin candidate (`invariance.pin.PinCandidate.name`) changes,
# one phrase; pin_all's is its parts' joined.
_CANDIDATE_WORDS = {
  "float32": "every contraction in full f32",
  "no_ynn_fusion": "CPU dots by XLA's own emitter, not YNNPACK",
  "no_algsimp": "no AlgebraicSimplifier (the CPU's dot strength reduction)",
  "no_dot_strength_reduction": "matrix-vector dots stay gemms",
  "no_split_k": "every Triton gemm in one K split",
  "no_triton_softmax": (
    "layernorm and softmax as XLA row reductions, not Triton fusions"
  ),
  "pinned_gemms": (
    "one Triton config per gemm fusion for every n (block_k fixed, split-K "
    "1; the kernels stage's autotune-results file), Triton softmax "
    "rewriter and dot strength reduction off"
  ),
}


def candidate_words(c) -> str:
  """What pin candidate `c` changes, one phrase (its name where none is
  written here)."""
  if c.parts:
    return " and ".join(_CANDIDATE_WORDS.get(n, n) for n in c.parts)
  return _CANDIDATE_WORDS.get(c.name, c.name)


def _sizes(ns: Sequence[int]) -> str:
  return ", ".join(map(str, ns))


def pin_reason(p) -> str:
  """A pin's outcome in one line (`Pin.outcome`): the classes it left, or
  why it is unknown, e.g. "still split: 2, 8 | 1 | 64"."""
  o, after = p.outcome, p.after
  if o is p.Outcome.NOT_TRIED:
    return "not tried (explain --invariance=pin tries it)"
  if o is p.Outcome.NOT_MADE:
    return f"not made: {p.why}"
  if o is p.Outcome.NOT_SWEPT:
    return f"not swept: {p.why}"
  if o is p.Outcome.NOT_JUDGED or after is None:
    return "not judged: no config of it came back"
  if o is p.Outcome.UNKNOWN:
    return f"unknown: {_why_words(after)}"
  if o is p.Outcome.ONE_CLASS:
    return f"one class for n = {_sizes(after.sizes)}"
  if o is p.Outcome.ONE_CLASS_BUT_N1:
    return f"one class for n = {_sizes(p.sizes)}; n = 1 stays apart"
  if not after.rows:
    return "still split"
  return "still split: " + " | ".join(
    _sizes(cls) for cls in after.rows[0].classes
  )


def pin_cost(p) -> str:
  """What a pin changed against the baseline, in words: each contraction
  site whose fate it changed, with its batch sizes, and row 0's |err|
  against float64 without and with it where known; "not known untried"
  for one not tried, "" for one not made or not swept."""
  if p.not_tried:
    return "not known untried"
  if not p.outcome.swept:
    return ""
  words = "; ".join(
    f"{w} (n = {_sizes(ns)})" for w, ns in changed_phrases(p.changed)
  )
  words = words or "no contraction site changed fate"
  if p.row0_abs is not None:
    before, after = p.row0_abs
    words += f"; row 0 |err| vs f64 {before:.2e} -> {after:.2e}"
  return words


def _kept_apart_words(p, every_cause: bool = True) -> str:
  """The swept sizes a pin's `verify` command leaves out and why, from
  its `left_out` boundaries: "the command leaves out n = 1, which stays
  apart under this pin (at n = 1: ...); with n = 1 it FAILs"; "" for
  none. `every_cause`: each kernel that differs there, as the answer's
  lines name a boundary's (`_class_words`); False: the sites, and how
  many other kernels differ (`_boundary_words`, the folded line's)."""
  if not p.left_out:
    return ""
  ns = ", ".join(str(b.n) for b in p.left_out)
  why = "; ".join(
    f"at n = {b.n}: {_every_cause(b)}" if every_cause else _boundary_words(b)
    for b in p.left_out
  )
  return (
    f"the command leaves out n = {ns}, which stays apart under this pin "
    f"({why}); with n = {ns} it FAILs"
  )


def _every_cause(b) -> str:
  """A boundary's every cause, or what was read where none is named."""
  said, _ = boundary_causes(b)
  return "; ".join(said) or unexplained_words(b.unexplained) or "unread"


def _pin_file_lines(ps: Sequence) -> list[str]:
  """Where a group's pinned-gemm autotune file was written (its `verify`
  command and XLA_FLAGS read it there)."""
  files = {p.candidate.file: p.candidate.name for p in ps if p.candidate.file}
  return [
    f"  {name}'s autotune file (its command reads it; kept): {f}"
    for f, name in files.items()
  ]


# Where the pins were only listed (plain explain, `pin.untried_pins`):
# none was swept, so none is a fix; `Pin.search` tries and verifies them.
_NOT_SEARCHED = (
  "not searched (no setting was tried, so none is known to pin it); "
  "to try each candidate and verify it"
)


def pin_lines(pins: Sequence) -> list[str]:
  """The bitwise question's "Do:": per group searched, the first pin that
  passed (its flags, JAX change, cost and `verify` command; the swept
  sizes its command leaves out, and why), else that none did, then each
  candidate tried in one line, and where the pinned-gemm autotune file
  was written. A group whose pins were only listed (not tried) gets no
  "Do:" and no candidate: one line saying so, with the command that tries
  and verifies them (`Pin.search`, given once per case and target)."""
  out, searched = [], set()
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
        f"Do: pin {where} with {how} ({candidate_words(c)}; cost: "
        f"{pin_cost(p)}): {p.command}"
      )
      if p.left_out:
        out.append(f"  ({_kept_apart_words(p)})")
    elif all(p.not_tried for p in ps):
      # Listed, not tried (plain explain): no candidate is advice until
      # verified, so the one command that tries and verifies them.
      search = ps[0].search
      if search in searched:
        search = "the command above"
      searched.add(ps[0].search)
      out.append(f"Pin for {where}: {_NOT_SEARCHED}: {search}")
      continue
    else:
      out.append(f"Do: no setting tried pins {where} ({len(ps)} tried, below)")
    out += [
      f"  {'passes' if p.passed else 'fails' if p.passed is False else 'unknown'}"
      f": {p.candidate.name}: {pin_reason(p)}"
      + (f" ({_kept_apart_words(p)})" if p.left_out else "")
      for p in ps
      if not (passed and p is passed[0])
    ]
    out += _pin_file_lines(ps)
  return out


def _rows_words(a: Invariance) -> list[str]:
  """Each compared row's classes in a clause, without the group's place:
  "row 0: identical for n = 2-9, n = 1 differs by 322 ULP"."""
  same = "identical" if a.basis in _BITS else "same per-row arithmetic"
  out = []
  for c in a.rows:
    name = Invariance.ROW0 if c.row == Invariance.ROW0 else "the anchor row"
    if a.basis == Invariance.KERNELS:
      name = "every row"
    parts = [f"{name}: {same} for n = {_ranges(a, c.classes[0])}"]
    ulps = c.ulps[1:] or [None] * len(c.classes)
    for cls, u in zip(c.classes[1:], ulps):
      by = _ulp(u) if a.basis in _BITS else ""
      parts.append(f"n = {_ranges(a, cls)} differs{by}")
    parts += [
      f"at n = {n} its bits depend on its offset ({', '.join(map(str, o))})"
      for n, o in c.moves
    ]
    out.append(", ".join(parts))
  return out


def _boundary_words(b) -> str:
  """One class boundary's cause: the sites whose fate differs, then how
  many other kernels differ (their arithmetic: --verbose)."""
  if b.parts:
    return "; ".join(_boundary_words(p) for p in b.parts)
  causes, named = boundary_causes(b)
  words = causes[:named]
  others = len(causes) - named
  if others:
    kernels = "kernel differs" if others == 1 else "kernels differ"
    words.append(f"{others} other {kernels} (--verbose)")
  return f"at n = {b.n}: " + (
    "; ".join(words) or unexplained_words(b.unexplained) or "unread"
  )


def _group_words(a: Invariance) -> tuple[str, str]:
  """(the verdict, the detail) of one group without its precision."""
  basis = _BASIS.get(a.basis, a.basis)
  if a.invariant is None and not a.rows:
    return f"unknown ({_why_words(a)})", ""
  if a.invariant is None:
    verdict = f"unknown ({_why_words(a)}); read so far"
  elif a.invariant:
    verdict = f"batch-invariant ({basis})"
  else:
    verdict = f"not batch-invariant ({basis})"
  detail = "; ".join(
    _rows_words(a) + [_boundary_words(b) for b in a.boundaries]
  )
  if (
    a.basis == Invariance.RUN
    and a.row(Invariance.ANCHOR) is None
    and a.invariant is not None
  ):
    why = f": {_why_words(a)}" if a.why else ""
    detail += f"; the anchor row was not run{why}"
  return verdict, detail


def _pin_words(groups: Sequence[Invariance], pins: Sequence) -> str:
  """The pins of folded groups in a clause: the first that passed, or the
  candidates to try (each with the precisions it applies under, where not
  all), or that none tried passed; "" when none applies."""
  keys = {(a.case, a.target, a.precision, a.experiment) for a in groups}
  mine = [
    p for p in pins if (p.case, p.target, p.precision, p.experiment) in keys
  ]
  if not mine:
    return ""
  passed = [p for p in mine if p.passed]
  if passed:
    c = passed[0].candidate
    how = (
      f"precision {c.precision}"
      if c.precision is not None
      else f"XLA_FLAGS='{' '.join(c.flags)}'"
    )
    apart = _kept_apart_words(passed[0], every_cause=False)
    apart = f"{apart}; " if apart else ""
    return (
      f"pinned by {how} ({apart}{pin_cost(passed[0])}; its `verify`: --verbose)"
    )
  if all(p.not_tried for p in mine):
    searches = list(dict.fromkeys(p.search for p in mine))
    return f"pin {_NOT_SEARCHED}: {'; '.join(searches)}"
  return f"no setting tried pins it ({len(mine)} tried: --verbose)"


def apart_words(answers: Sequence[Invariance]) -> str:
  """Where the rows' bits were found to depend on the batch size, in a
  clause for explain's last answer line, e.g. "not batch-invariant on
  cpu and a100 under float32" (per target where the precisions differ:
  "on cpu under float32; on a100 under bfloat16 and float32"); "" where
  no group is (`Invariance.invariant` False)."""
  many = len({a.case for a in answers}) > 1
  per: dict[str, list[str]] = {}
  for a in answers:
    if a.invariant is not False:
      continue
    where = f"{a.case} on {a.target}" if many else a.target
    if a.experiment != "baseline":
      where += f" ({a.experiment})"
    per.setdefault(where, [])
    if a.precision not in per[where]:
      per[where].append(a.precision)
  if not per:
    return ""
  precisions = {tuple(ps) for ps in per.values()}
  if len(precisions) == 1:
    return (
      f"not batch-invariant on {_and(list(per))} under "
      f"{_and(list(precisions.pop()))}"
    )
  return "not batch-invariant " + "; ".join(
    f"on {where} under {_and(ps)}" for where, ps in per.items()
  )


def _and(words: Sequence[str], last: str = "and") -> str:
  words = list(words)
  if len(words) < 2:
    return "".join(words)
  return f"{', '.join(words[:-1])} {last} {words[-1]}"


def folded_lines(
  answers: Sequence[Invariance], pins: Sequence = ()
) -> list[str]:
  """The bitwise answer folded, one line per cause: groups that differ
  only in their precision, with the same classes and the same sites
  changing fate at each boundary, are one line (their precisions
  named), the pins' clause after; the other kernels' arithmetic per n,
  each pin's command and the per-precision lines come with
  `first_lines` (explain --verbose). A title line first; [] when the
  question was not asked."""
  if not answers:
    return []
  folds: dict[tuple, list[Invariance]] = {}
  for a in answers:
    # Pins tried are part of the cause's line: groups fold only where
    # the same candidates passed and failed.
    tried = tuple(
      (p.candidate.name, p.passed)
      for p in pins
      if (p.case, p.target, p.precision, p.experiment)
      == (a.case, a.target, a.precision, a.experiment)
      and not p.not_tried
    )
    key = (a.case, a.target, a.experiment, *_group_words(a), tried)
    folds.setdefault(key, []).append(a)
  out = ["Batch invariance, by cause (each precision and kernel: --verbose):"]
  for (case, target, experiment, verdict, detail, _), groups in folds.items():
    where = f"{case} on {target}"
    if experiment != "baseline":
      where += f" ({experiment})"
    where += f" under {_and([a.precision for a in groups])}"
    words = [w for w in (detail, _pin_words(groups, pins)) if w]
    line = f"  {where}: {verdict}"
    out.append(f"{line}: {'; '.join(words)}" if words else line)
  return out


def first_lines(
  answers: Sequence[Invariance],
  pins: Sequence = (),
  kernels: bool = True,
  folded: bool = False,
) -> list[str]:
  """What `explain` prints first: the bitwise answer of every group,
  the reductions per n (compile-only) and the pins, before explain's
  "Answer:" (no blank line between: one block, as report.html opens
  with it); [] when the question was not asked (no answers). `kernels`:
  False leaves the reductions per n out (explain's one screen when a
  finding leads: they come with --verbose). `folded`: one line per
  cause instead (`folded_lines`; `kernels` unused)."""
  if not answers:
    return []
  if folded:
    return folded_lines(answers, pins)
  listed = kernel_lines(answers) if kernels else []
  return answer_lines(answers) + listed + pin_lines(pins)


def _boundary_json(b) -> dict:
  """A class boundary (`invariance.Boundary`) in results.json: its sizes,
  its causes' words and what is left unexplained, and its `parts` where
  the class's sizes differ in their sites' fates."""
  out = {
    "n": b.n,
    "against": b.against,
    "causes": boundary_causes(b)[0],
    "unexplained": unexplained_words(b.unexplained),
  }
  if b.parts:  # sub-groups of the class's sizes of other sites' fates
    out["parts"] = [
      {**_boundary_json(p), "sizes": list(p.sizes)} for p in b.parts
    ]
  return out


def invariance_json(answers: Sequence[Invariance], pins: Sequence = ()) -> dict:
  """The answer as JSON (results.json's and `explain --format=json`'s
  "invariance"): {"groups": [{case, target, precision, experiment,
  basis, invariant (true/false/null), why, sizes, model_why, model_sizes,
  identity,
  rows: [{row, classes,
  ulps, moves}], boundaries: [{n, against, causes, unexplained, parts
  (only where the class's sizes differ in their sites' fates: [{n,
  against, causes, unexplained, sizes}])}], mixed (only where the
  reference class's sizes do: its other sub-groups, [{n, against, causes,
  unexplained, sizes}]),
  kernels: {n: [{name, kind, sites, signature, words, why_unknown}]}}],
  "pins": [{case, target, precision, candidate, fix, xla_flags,
  jax_change, passed, reason, cost, command, left_out: [{n, against,
  causes, unexplained}] (the swept sizes `command` leaves out: they stay
  apart under the pin), autotune_file (the pinned-gemm file, or
  null)}]}."""
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
        "why": _why_words(a),
        "sizes": list(a.sizes),
        "model_why": model_why_words(a.model_why),
        "model_sizes": list(a.model_sizes),
        "identity": [list(x) for x in a.identity],
        "rows": [
          {
            "row": c.row,
            "classes": [list(x) for x in c.classes],
            "ulps": list(c.ulps),
            "moves": [[n, list(o)] for n, o in c.moves],
          }
          for c in a.rows
        ],
        "boundaries": [_boundary_json(b) for b in a.boundaries],
        **(
          {
            "mixed": [
              _boundary_json(p) | {"sizes": list(p.sizes)}
              for p in a.mixed.parts
            ]
          }
          if a.mixed is not None
          else {}
        ),
        "kernels": {
          str(n): [
            {
              "name": k.name,
              "kind": k.kind,
              "sites": list(k.sites),
              "signature": k.signature,
              "words": kernel_words(k),
              "why_unknown": unread_words(k),
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
        "reason": pin_reason(p),
        "cost": pin_cost(p),
        "command": p.command,
        "left_out": [_boundary_json(b) for b in p.left_out],
        "autotune_file": p.candidate.file,
      }
      for p in pins
    ],
  }
