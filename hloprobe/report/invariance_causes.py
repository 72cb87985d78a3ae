"""The batch-invariance answer's causes in words: what differs at a class
boundary (the sites' fates, the other kernels' per-row arithmetic, or
what was read where nothing differs), a row kernel's arithmetic, why the
kernel model does not class a size, and what a pin changed.

E.g. "sites 0-1 multiply+reduce after dot strength reduction (Triton
gemm at n = 2)", "Triton gemm TF32_TF32_F32, mma.sync..., split-K 2,
block_k 32", "n = 1: site 0: multiply+reduce: kernel arithmetic not
modelled".

`hloprobe.invariance` returns the records (`Boundary` and its
`SiteChanges`, `RowKernel`, `NotModelled`, a pin's `changed`); the words
are made here, at the edge (issue 36 item 2). Private in intent: use the
package, `hloprobe.report` (`report/invariance_words.py` puts these in
the answer's lines and JSON).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from hloprobe.invariance import Invariance
from hloprobe.report.kernel_words import (
  kernel_site_words,
  row_count_why_words,
)
from hloprobe.sites import Fate

__all__ = [
  "boundary_causes",
  "changed_phrases",
  "kernel_words",
  "model_why_words",
  "site_phrases",
  "unexplained_words",
  "unread_words",
]

_NOT_EXACT = "(the GPU's implementation, not modelled bit for bit)"
# What the fates alone cannot read on a GPU (the reductions' emitters).
_NO_REDUCTIONS = (
  "reductions and other fusions not read (the kernels stage, "
  "hloprobe.kernels, reads their emitter and tiling)"
)
_UNREAD = Invariance.UNREAD
# A row kernel's arithmetic not read, by `Unread` kind (ORDER and OPS
# have their own words, with the kernel's fate or the ops).
_UNREAD_WORDS = {
  _UNREAD.LIBRARY: (
    "chosen by the library's per-shape heuristic at run time: unknown "
    "without a device"
  ),
  _UNREAD.BLOCK_K: "the gemm's K tile (block_k) not read from its config",
}


def site_list(sites: Sequence[int]) -> str:
  """ "site 1", "sites 0-1", "sites 0, 2"."""
  sites = sorted(sites)
  if len(sites) == 1:
    return f"site {sites[0]}"
  if sites == list(range(sites[0], sites[-1] + 1)):
    return f"sites {sites[0]}-{sites[-1]}"
  return "sites " + ", ".join(map(str, sites))


def _made_words(m) -> str:
  """What XLA made of a site (`SiteMade`): its fate, split-K above 1 and
  the pass that made it, e.g. "Triton gemm split-K 4", "multiply+reduce
  after dot strength reduction"."""
  words = m.fate.value
  if m.split_k > 1:
    words += f" split-K {m.split_k}"
  if m.pass_name:
    words += f" after {m.pass_name.replace('-', ' ')}"
  return words


def _change_words(c, against: int) -> str:
  """One site's change (`SiteChange`) without its site: what the config
  explained made of it, then, in brackets, the fate it had at n =
  `against`; where only its split-K, algorithm or emitter changed, that
  change, e.g. "Triton gemm split-K 4 (split-K 1 at n = 8)"."""
  now, was = c.now, c.was
  words = _made_words(now)
  if now.fate != was.fate:
    return f"{words} ({_made_words(was)} at n = {against})"
  before = []
  if now.split_k != was.split_k:
    before.append(f"split-K {was.split_k}")
  if now.algorithm != was.algorithm:
    before.append(f"{was.algorithm}")
    words += f" {now.algorithm}"
  if now.emitter != was.emitter:
    before.append(f"in {was.emitter}" if was.emitter else "XLA's own emitter")
    words += f" in {now.emitter}" if now.emitter else " by XLA's own emitter"
  return f"{words} ({', '.join(before)} at n = {against})"


def site_phrases(s) -> list[str]:
  """A `SiteChanges` as phrases, the sites of equal words in one:
  ["sites 0-1 multiply+reduce after dot strength reduction (Triton gemm
  at n = 2)", ...]; or, where the site counts differ, "3 contraction
  sites at n = 1, 4 at n = 2"; [] where no site changed."""
  if s.counts is not None:
    mine, theirs = s.counts
    return [
      f"{mine} contraction sites at n = {s.n}, {theirs} at n = {s.against}"
    ]
  by_words: dict[str, list[int]] = {}
  for c in s.changes:
    by_words.setdefault(_change_words(c, s.against), []).append(c.site)
  return [f"{site_list(sites)} {w}" for w, sites in by_words.items()]


def _mma(f) -> str:
  """The instruction of the kernel a site was read from (the first of
  `SiteFate.mma_opcodes`), "no mma" for a kernel read without one, or
  "instruction not read" where no kernel was read."""
  if f.mma_opcodes:
    return f.mma_opcodes[0]
  return "no mma" if f.ptx_kernel is not None else "instruction not read"


def kernel_words(k) -> str:
  """A row kernel's (`RowKernel`) per-row arithmetic: the kernels
  stage's emitter and arithmetic fields ("Triton block-level (__triton):
  num_warps 2, tile 256"), else as its site's fate says ("Triton gemm
  TF32_TF32_F32, mma.sync..., split-K 2, block_k 32"), else (the fates'
  "other kernels") what is not read."""
  rec = k.record
  if rec is not None:
    shown = [
      f"{name} {value}"
      for name, value in rec.arithmetic
      if name not in ("computation", "ptx")
    ]
    return f"{rec.emitter}" + (f": {', '.join(shown)}" if shown else "")
  f = k.fate
  if f is None:
    return unread_words(k) or ""
  algorithm = f.effective_algorithm or "algorithm unknown"
  if f.fate in (Fate.CUBLAS, Fate.CUBLASLT):
    return f"{f.fate.value}: {unread_words(k)}"
  if f.fate == Fate.TRITON_GEMM:
    words = f"Triton gemm {algorithm}, {_mma(f)}, split-K {f.split_k or 1}"
    return words if k.block_k is None else f"{words}, block_k {k.block_k}"
  return f"{f.fate.value} {algorithm}"


def unread_words(k) -> str | None:
  """Why a row kernel's (`RowKernel`) per-row arithmetic is not known,
  one line (its `unread`, a `KernelUnread`); None where it is: e.g. "the
  gemm's K tile (block_k) not read from its config", "reduce, sort in
  the optimized HLO: reductions and other fusions not read (...)"."""
  u = k.unread
  if u is None:
    return None
  if u.kind in _UNREAD_WORDS:
    return _UNREAD_WORDS[u.kind]
  if u.kind == _UNREAD.ORDER:
    return (
      f"a {k.fate.fate.value}'s order on the GPU not read: {_NO_REDUCTIONS}"
    )
  if u.kind == _UNREAD.OPS:
    return f"{', '.join(u.ops)} in the optimized HLO: {_NO_REDUCTIONS}"
  if u.why is None:  # RECORD without the kernels stage's reason
    return "unknown"
  return row_count_why_words(u.why)  # RECORD: the kernels stage's reason


def boundary_causes(b) -> tuple[list[str], int]:
  """A `Boundary`'s causes, one phrase each, and how many of them (the
  first) name sites whose fate differs; the rest are the other kernels'
  per-row arithmetic: "site 1 Triton gemm split-K 4 (split-K 1 at n =
  8)", "triton_softmax.4 (reduction ...): only at n = 2, not at n = 1"
  (a kernel with no counterpart on one side is placed by batch size, not
  by the order of the comparison). Phrases said twice are said once."""
  sites = site_phrases(b.sites)
  kernels = [
    f"{site_list(k.sites) if k.sites else k.name} {kernel_words(k)}"
    for k in b.kernels
  ]
  kernels += [_difference_words(d, b) for d in b.differences]
  causes = list(dict.fromkeys(sites + kernels))
  return causes, len(dict.fromkeys(sites))


def _kernel_what(r) -> str:
  """What a `KernelRecord` computes: its role, ops (else name) and source
  lines' files, e.g. "contraction dot_general at model.py:11"."""
  where = (
    ", ".join(os.path.basename(s) for s in r.source)
    if r.source
    else "no source line"
  )
  return f"{r.role.value} {'+'.join(r.ops) or r.name} at {where}"


def _matched_words(d) -> str:
  """A `KernelDifference` of two matched kernels: their names, what the
  first computes, and what changed: the emitter, the `arithmetic` fields,
  the config values, and where only the PTX's fields differ, that the
  same bits are likely but not proven."""
  x, y = d.a, d.b
  changes = ", ".join(f"{k} {va} -> {vb}" for k, va, vb in d.fields)
  if x.emitter != y.emitter:
    changes = f"emitter {x.emitter} -> {y.emitter}" + (
      f", {changes}" if changes else ""
    )
  if d.config:
    config = ", ".join(f"{k} {va} -> {vb}" for k, va, vb in d.config)
    changes += f" (config: {config})"
  if d.ptx_only:
    changes += (
      "; every rule field is equal: the PTX's float dataflow differs "
      "(e.g. a value loaded again instead of kept in a register), so "
      "the same bits are likely but not proven"
    )
  name = x.name if x.name == y.name else f"{x.name} / {y.name}"
  return f"{name} ({_kernel_what(x)}): {changes}"


def _difference_words(d, b) -> str:
  """A `KernelDifference` of boundary `b` in words: what changed where
  both sides have the kernel; else where it runs by batch size. The stage
  compares b.against (its first config, `a`) with b.n (its second, `b`,
  `invariance.answer`'s `record_differences`)."""
  if d.a is not None and d.b is not None:
    return _matched_words(d)
  only, here, not_here = (
    (d.a, b.against, b.n) if d.b is None else (d.b, b.n, b.against)
  )
  return (
    f"{only.name} ({_kernel_what(only)}, {only.emitter}): only at n = "
    f"{here}, not at n = {not_here}"
  )


def unexplained_words(u) -> str | None:
  """Why a boundary names no cause (`Unexplained`), as far as read; None
  for None."""
  if u is None:
    return None
  if u.kernels_differ:
    return "kernels differ"
  if u.no_boundary:
    return "no boundary read at this batch size"
  if u.libraries:
    return "no site changed fate; " + "; ".join(
      f"{site_list(sites)} run in {lib}, a library kernel chosen by the "
      "whole shape (its order is not read)"
      for lib, sites in u.libraries
    )
  return (
    "no contraction site changed fate: a kernel chose another order at "
    "this shape (the CPU's reductions are not read)"
  )


def _who(k) -> str:
  """A kernel by name, with the sites it computes."""
  sites = f" (sites {', '.join(map(str, k.sites))})" if k.sites else ""
  return f"{k.name}{sites}"


def _contracts_words(w) -> str:
  """A kernel whose multiply feeds an add or subtract (`Inexact.CONTRACTS`),
  with what its PTX says where it was read."""
  if w.fused:
    return (
      f"{_who(w.kernel)}: {'; '.join(w.pairs)} in one kernel, and its PTX "
      f"has {', '.join(w.fused)} (a multiply fused into an add, or left for "
      "ptxas to fuse: one rounding where XLA:CPU's kernel model rounds "
      "twice)"
    )
  return (
    f"{_who(w.kernel)}: {'; '.join(w.pairs)} in one kernel (a multiply "
    "feeding an add or subtract: the GPU may fuse them into one "
    "multiply-add" + (")" if w.ptx_read else "; its PTX not read)")
  )


# `Inexact` name -> the words of a `NotModelled` of that reason (one table,
# as `kernel_words._BAND_WORDS`: a test holds it to every reason).
_INEXACT_WORDS = {
  "NOT_COMPILED": lambda w: "the config did not compile",
  "NOT_READ": lambda w: "its kernels not read",
  "NOT_COMPUTED": lambda w: (
    "the kernel model's bits not computed" + (f": {w.error}" if w.error else "")
  ),
  "SITE": lambda w: f"site {w.site}: {kernel_site_words(w.model)}",
  "NOT_A_GEMM": lambda w: (
    f"{_who(w.kernel)}: not a Triton gemm the kernel model is bit-exact for"
  ),
  "FUSES": lambda w: f"{_who(w.kernel)}: fuses {', '.join(w.ops)} {_NOT_EXACT}",
  "ORDER": lambda w: (
    f"{_who(w.kernel)}: a {w.kernel.kind} ({kernel_words(w.kernel)}): its "
    "order is not modelled"
  ),
  "OPS_NOT_READ": lambda w: f"{_who(w.kernel)}: its ops not read",
  "NO_OP_METADATA": lambda w: (
    f"{_who(w.kernel)}: its ops not read (no op metadata)"
  ),
  "COMPUTES": lambda w: (
    f"{_who(w.kernel)}: computes {', '.join(w.ops)} {_NOT_EXACT}"
  ),
  "CONTRACTS": _contracts_words,
  "MULTIPLY_ADD": lambda w: (
    f"{_who(w.kernel)}: a multiply and an add or subtract among its ops, "
    "and whether one feeds the other (a possible multiply-add) not read"
  ),
}


def model_why_words(w) -> str | None:
  """Why the kernel model's bits do not class a size (`NotModelled`),
  one line, led by the size where it names one: "n = 1: site 0:
  multiply+reduce: kernel arithmetic not modelled"; None for None."""
  if w is None:
    return None
  words = _INEXACT_WORDS[w.reason.name](w)
  return words if w.n is None else f"n = {w.n}: {words}"


def changed_phrases(changes) -> list[tuple[str, list[int]]]:
  """What a pin changed (`Pin.changed`: a `SiteChanges` per batch size):
  each site phrase (`site_phrases`) with the sizes it was said at, in the
  order first met: [("site 1 Triton gemm (split-K 2 at n = 64)", [64]),
  ...]; [] where no site changed."""
  changed: dict[str, list[int]] = {}
  for s in changes:
    for phrase in site_phrases(s):
      changed.setdefault(phrase, []).append(s.n)
  return list(changed.items())
