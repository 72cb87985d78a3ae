"""The batch-invariance answer of each (case, target, precision,
experiment): its classes of batch sizes, what backs them and what
explains each boundary.

Bases (issue 38 item 3), strongest first:
  run              the target ran (the CPU, an attached GPU): the rows'
                   bits compared exactly (`rows`).
  kernel model     a compile-only GPU whose every row-computing kernel
                   the kernel model is bit-exact for (`model_bits`), at
                   every size: row 0's bits computed per n by the model
                   and compared. Where only some sizes are, those are
                   classed by the model's bits and the others by kernel
                   identity (basis kernel identity, `model_sizes` saying
                   which).
  kernel identity  a compile-only GPU: configs whose every row-computing
                   kernel has the same signature (`kernel_identity`)
                   compute the same bits; a kernel of another signature
                   changes the row's order of operations.
  unknown          neither settles it (a kernel whose arithmetic is not
                   read, a failed config), with why.

Private in intent: use the package, `hloprobe.invariance`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from typing import ClassVar

import numpy as np

from hloprobe.invariance.kernel_identity import (
  KernelReader,
  RowKernel,
  batched_leaves,
  computes_rows,
  kernel_reader,
  record_differences,
  signature_key,
  unbatched_why,
)
from hloprobe.invariance.model_bits import MODEL, GroupModel
from hloprobe.invariance.rows import (
  ANCHOR,
  ANCHOR_OFFSETS,
  ROW0,
  ConfigRows,
  RowClasses,
  bits,
  classes_of,
  ulps,
)
from hloprobe.records import Config, ConfigResult
from hloprobe.sites import Fate

__all__ = [
  "Boundary",
  "Invariance",
  "MODEL",
  "config_key",
  "group_key",
  "invariance_of",
  "rows_from_records",
]

RUN, KERNELS, UNKNOWN = "run", "kernel identity", "unknown"


@dataclasses.dataclass(frozen=True)
class Boundary:
  """Where a class of batch sizes starts, and what differs there.

  Attributes:
    n: the class's smallest batch size.
    against: the first class's smallest batch size, compared with.
    causes: what differs between the two configs, one phrase each, e.g.
      "site 1 Triton gemm split-K 1 -> 2" or "sites 0-1 multiply+reduce
      after dot-strength-reduction"; () where nothing read differs.
    unexplained: a sentence where `causes` is empty.
    named: how many of `causes`, the first, name sites whose fate
      differs (`site_causes`); the rest are other kernels' per-row
      arithmetic (compile-only groups). None: all of them.
  """

  n: int
  against: int
  causes: tuple[str, ...]
  unexplained: str | None = None
  named: int | None = None


@dataclasses.dataclass(frozen=True)
class Invariance:
  """One (case, target, precision, experiment)'s batch-invariance answer.

  Attributes:
    case, target, precision, experiment: the group (names).
    basis: RUN, KERNELS or UNKNOWN (module docstring).
    rows: the classes of each compared row (row 0; the anchor where run),
      for RUN; for KERNELS one entry, ROW0, whose classes are the batch
      sizes of equal kernel signatures (every row alike).
    boundaries: each class after the first and its causes.
    kernels: n -> that config's row kernels (compile-only GPUs).
    invariant: True (one class, nothing unknown), False (a class
      boundary seen: bits differ, or per-row arithmetic differs), None
      (unknown: `why`).
    why: one line where `invariant` is None, or a note.
    sizes: every swept batch size of the group, ascending.
    left_out: n -> the kernels of that config that compute no row (they
      reach only output leaves that do not carry the batch, e.g. a loss's
      mean over the batch: `kernel_identity.computes_rows`), not judged.
    model_why: a compile-only group's sizes not classed by the kernel
      model's bits: why (one line: the first such size and the kernel or
      site the model is not bit-exact for, or why its bits were not
      computed); None where every size is (basis MODEL) or the question
      was not asked (run).
    model_sizes: the sizes classed by the kernel model's bits (all of
      them for basis MODEL; some for a kernel identity group).
    identity: the classes kernel identity alone gives, where they differ
      from the answer's (kernels of other signatures that compute the
      same bits in the kernel model, e.g. another block_k).
  """

  case: str
  target: str
  precision: str
  experiment: str
  basis: str
  rows: tuple[RowClasses, ...]
  boundaries: tuple[Boundary, ...] = ()
  kernels: Mapping[int, tuple[RowKernel, ...]] = dataclasses.field(
    default_factory=dict
  )
  invariant: bool | None = None
  why: str | None = None
  sizes: tuple[int, ...] = ()
  left_out: Mapping[int, tuple[RowKernel, ...]] = dataclasses.field(
    default_factory=dict
  )
  model_why: str | None = None
  model_sizes: tuple[int, ...] = ()
  identity: tuple[tuple[int, ...], ...] = ()

  # The values `basis` and a row's `row` take, for readers of the record
  # (report words them): bits run, the kernel model's bits, kernel
  # identity; row 0 and the anchor row (at ANCHOR_OFFSETS).
  RUN: ClassVar[str] = RUN
  MODEL: ClassVar[str] = MODEL
  KERNELS: ClassVar[str] = KERNELS
  ROW0: ClassVar[str] = ROW0
  ANCHOR: ClassVar[str] = ANCHOR
  ANCHOR_OFFSETS: ClassVar[tuple[str, ...]] = ANCHOR_OFFSETS

  def row(self, name: str) -> RowClasses | None:
    return next((r for r in self.rows if r.row == name), None)

  def runs(self, ns: Sequence[int]) -> list[tuple[int, int]]:
    """Batch sizes `ns` as (first, last) runs of consecutive swept sizes
    (`sizes`): e.g. [(2, 8)] for 2, 4, 8 of 1, 2, 4, 8; (n, n) alone."""
    return _runs(ns, self.sizes)


def group_key(c: Config) -> tuple[str, str, str, str]:
  """(case, target, precision, experiment) of a config."""
  return (c.case, c.target.name, str(c.precision), c.experiment)


def config_key(c: Config) -> tuple[str, str, str, str, int]:
  """`group_key` and n: what `invariance_of`'s rows are keyed by."""
  return (*group_key(c), c.n)


def rows_from_records(r: ConfigResult) -> ConfigRows | None:
  """Row 0 as the sweep's own run kept it (each batched leaf's
  `row0_values`, exact: `accuracy.ROW0_KEPT` values at most per leaf);
  None where the config did not run."""
  run = r.execution
  if not r.ok or run is None or not run.leaf_stats:
    return None
  found = [
    (s.leaf, np.ravel(s.row0_values))
    for s in run.leaf_stats
    if s.axis is not None and s.row0_values is not None
  ]
  if not found:
    return None
  return ConfigRows(
    r.config.n,
    tuple(v for _, v in found),
    leaves=tuple(name for name, _ in found),
  )


def _ranges(ns: Sequence[int], sizes: Sequence[int]) -> str:
  """Batch sizes as runs over the swept ones: "2-8", "1", "2, 64"."""
  return ", ".join(
    str(a) if a == b else f"{a}-{b}" for a, b in _runs(ns, sizes)
  )


def _runs(ns: Sequence[int], sizes: Sequence[int]) -> list[tuple[int, int]]:
  """Batch sizes as (first, last) runs over the swept ones."""
  order = list(sizes)
  ns = sorted(ns)
  out, start = [], 0
  while start < len(ns):
    end = start
    while (
      end + 1 < len(ns)
      and ns[end] in order
      and ns[end + 1] in order
      and order.index(ns[end + 1]) == order.index(ns[end]) + 1
    ):
      end += 1
    out.append((ns[start], ns[end]))
    start = end + 1
  return out


def _site_list(sites: Sequence[int]) -> str:
  """ "site 1", "sites 0-1", "sites 0, 2"."""
  sites = sorted(sites)
  if len(sites) == 1:
    return f"site {sites[0]}"
  if sites == list(range(sites[0], sites[-1] + 1)):
    return f"sites {sites[0]}-{sites[-1]}"
  return "sites " + ", ".join(map(str, sites))


def _fate_words(r: ConfigResult, i: int) -> str:
  """Site i's fate in a config, with the pass that made it."""
  f = r.compilation.fates[i]
  words = f.fate.value
  if f.split_k and f.split_k > 1:
    words += f" split-K {f.split_k}"
  passes = r.compilation.passes or {}
  if i in passes and passes[i].pass_name:
    words += f" after {passes[i].pass_name.replace('-', ' ')}"
  return words


def _fate_change(r: ConfigResult, base: ConfigResult, i: int) -> str:
  """Site i in `r` where its fate differs from `base`'s: the fate (and
  pass); where only its algorithm, split-K or library call differs, that
  change, e.g. "Triton gemm split-K 4 (1 at n = 8)"."""
  f, g = r.compilation.fates[i], base.compilation.fates[i]
  words = _fate_words(r, i)
  if f.fate != g.fate:
    return f"{words} ({_fate_words(base, i)} at n = {base.config.n})"
  was = []
  if (f.split_k or 1) != (g.split_k or 1):
    was.append(f"split-K {g.split_k or 1}")
  if f.effective_algorithm != g.effective_algorithm:
    was.append(f"{g.effective_algorithm}")
    words += f" {f.effective_algorithm}"
  if _emitter(f) != _emitter(g):
    was.append(f"in {_emitter(g)}" if _emitter(g) else "XLA's own emitter")
    words += f" in {_emitter(f)}" if _emitter(f) else " by XLA's own emitter"
  return f"{words} ({', '.join(was)} at n = {base.config.n})"


def _emitter(f) -> str | None:
  """A site's library or custom emitter from its record: a custom
  fusion's backend config kind (the CPU's "__ynn_fusion") or a library
  call's target; None for XLA's own emitters."""
  if f.custom_call_target:
    return f.custom_call_target
  if f.fusion_kind == "kCustom" and f.fate != Fate.TRITON_GEMM:
    return f.backend_config_kind
  return None


def _fate_key(r: ConfigResult, i: int) -> tuple:
  f = r.compilation.fates[i]
  return (f.fate, f.effective_algorithm, f.split_k or 1, _emitter(f))


def site_causes(r: ConfigResult, base: ConfigResult) -> tuple[str, ...]:
  """The sites whose fate differs between two configs of a group, grouped
  by what `r` made of them: ("sites 0-1 multiply+reduce after dot
  strength reduction", ...)."""
  if r.compilation is None or base.compilation is None:
    return ()
  a, b = r.compilation.fates, base.compilation.fates
  if len(a) != len(b):
    return (
      f"{len(a)} contraction sites at n = {r.config.n}, {len(b)} at "
      f"n = {base.config.n}",
    )
  by_words: dict[str, list[int]] = {}
  for i in range(len(a)):
    if _fate_key(r, i) != _fate_key(base, i):
      by_words.setdefault(_fate_change(r, base, i), []).append(i)
  return tuple(f"{_site_list(s)} {w}" for w, s in by_words.items())


def kernel_causes(
  mine: Sequence[RowKernel], base: Sequence[RowKernel]
) -> tuple[str, ...]:
  """The kernels whose signature differs between two configs, in words
  (the site's or kernel's name, then its arithmetic here)."""
  out = []
  theirs = {(k.name, k.sites): k for k in base}
  for i, k in enumerate(mine):
    other = theirs.get((k.name, k.sites))
    if other is None and i < len(base) and base[i].kind == k.kind:
      other = base[i]
    if other is not None and other.signature == k.signature:
      continue
    if other is None and k.signature is None:
      continue
    who = _site_list(k.sites) if k.sites else k.name
    out.append(f"{who} {k.words}")
  return tuple(out)


def _run_answer(
  key, results: Sequence[ConfigResult], rows: Mapping[int, ConfigRows]
) -> Invariance:
  """A group that ran: classes by bits."""
  sizes = tuple(sorted(r.config.n for r in results))
  by_n = {r.config.n: r for r in results}
  missing = tuple(
    (r.config.n, _why_missing(r)) for r in results if r.config.n not in rows
  )
  found = [
    c
    for name in (ROW0, ANCHOR)
    if (c := classes_of(list(rows.values()), name, missing)) is not None
  ]
  if not found:
    return Invariance(
      *key, UNKNOWN, (), invariant=None, why=_none_ran(missing), sizes=sizes
    )
  boundaries = _run_boundaries(found, by_n)
  any_split = any(len(c.classes) > 1 or c.moves for c in found)
  known = sum(len(c) for c in found[0].classes)
  if any_split:
    verdict, why = False, None
  elif missing or known < 2:
    verdict = None
    why = (
      f"only n = {_ranges([n for c in found[0].classes for n in c], sizes)} "
      "ran"
      + (f"; not run: {missing[0][0]}: {missing[0][1]}" if missing else "")
    )
  else:
    verdict, why = True, None
  return Invariance(
    *key, RUN, tuple(found), boundaries, {}, verdict, why, sizes
  )


def _run_boundaries(found: Sequence[RowClasses], by_n) -> tuple[Boundary, ...]:
  """Each class start of any row (once per n), explained by the sites'
  fates against the first class."""
  starts: dict[int, int] = {}
  for c in found:
    for cls in c.classes[1:]:
      starts.setdefault(cls[0], _nearest(cls[0], c.classes[0], by_n))
  out = []
  for n, against in sorted(starts.items()):
    causes = site_causes(by_n[n], by_n[against])
    why = None if causes else _unexplained(by_n[n], by_n[against])
    out.append(Boundary(n, against, causes, why))
  return tuple(out)


def _nearest(n: int, members: Sequence[int], by_n) -> int:
  """The member of the reference class to explain n's class against: the
  one whose sites differ from n's least (then the nearest size), so a
  boundary names what differs, not what its reference class shares."""

  def cost(m: int) -> tuple[int, int]:
    a, b = by_n.get(n), by_n.get(m)
    changed = len(_changed_sites(a, b)) if a and b else 0
    return (changed, abs(m - n))

  return min(members, key=cost)


def _library_sites(r: ConfigResult) -> dict[str, list[int]]:
  """Library kernel -> the sites it computes, from each site's record: a
  custom fusion's backend config kind (e.g. "__ynn_fusion": the CPU's
  dot-library-rewriter hands the dot to YNNPACK, which picks its kernel
  from the whole shape at run time) or a library call's target."""
  found: dict[str, list[int]] = {}
  c = r.compilation
  if c is None:
    return found
  for f in c.fates:
    lib = f.custom_call_target
    if lib is None and f.fusion_kind == "kCustom":
      lib = f.backend_config_kind
    if lib and f.fate != Fate.TRITON_GEMM:
      found.setdefault(lib, []).append(f.site.index)
  return found


def _unexplained(r: ConfigResult, base: ConfigResult) -> str:
  """Why a bits boundary with no fate change happened, as far as read:
  the library kernels either config runs."""
  libs = _library_sites(r)
  for lib, sites in _library_sites(base).items():
    libs.setdefault(lib, [])
    libs[lib] = sorted(set(libs[lib]) | set(sites))
  if libs:
    return "no site changed fate; " + "; ".join(
      f"{_site_list(s)} run in {lib}, a library kernel chosen by the whole "
      "shape (its order is not read)"
      for lib, s in libs.items()
    )
  return (
    "no contraction site changed fate: a kernel chose another order at "
    "this shape (the CPU's reductions are not read)"
  )


def _why_missing(r: ConfigResult) -> str:
  if not r.ok:
    return f"failed at {r.failure.stage}: {r.failure.message}"
  return "not run"


def _none_ran(missing) -> str:
  if missing:
    return f"no config ran (n = {missing[0][0]}: {missing[0][1]})"
  return "no batched output leaf"


def _kernel_answer(
  key,
  results: Sequence[ConfigResult],
  reader: KernelReader,
  sized=False,
  model: GroupModel | str | None = None,
) -> Invariance:
  """A compile-only group: classes by kernel identity (the largest class
  first: the reference the others are described against), the sizes
  `model` computed row 0 for by the kernel model (`model_bits`) by those
  bits instead (`_model_classes`; basis MODEL where that is every size).
  `model` a string: why the model's bits were not computed
  (`Invariance.model_why`). A group of a batch-swept case (not `sized`)
  whose every output leaf keeps its shape over n has no row: unknown,
  saying so (`unbatched_why`)."""
  sizes = tuple(sorted(r.config.n for r in results))
  by_n = {r.config.n: r for r in results if r.ok}
  no_rows = None if sized else unbatched_why(list(by_n.values()))
  if no_rows is not None:
    return Invariance(
      *key, UNKNOWN, (), invariant=None, why=no_rows, sizes=sizes
    )
  read = {n: tuple(reader(r)) for n, r in by_n.items()}
  batched = batched_leaves(list(by_n.values()))
  kernels = {
    n: tuple(k for k in ks if computes_rows(k, batched))
    for n, ks in read.items()
  }
  left_out = {
    n: gone
    for n, ks in read.items()
    if (gone := tuple(k for k in ks if not computes_rows(k, batched)))
  }
  missing = tuple((r.config.n, _why_missing(r)) for r in results if not r.ok)
  groups: dict[tuple, list[int]] = {}
  for n in sorted(kernels):
    groups.setdefault(signature_key(kernels[n]), []).append(n)
  classes = reference_first([tuple(g) for g in groups.values()])
  rows = (RowClasses(ROW0, classes, (), (), missing),) if classes else ()
  exact: Mapping[int, ConfigRows] = {}
  model_why = model if isinstance(model, str) else None
  if isinstance(model, GroupModel):
    exact = {n: r for n, r in model.rows.items() if n in kernels}
    others = sorted(set(kernels) - set(exact))
    if others:
      first = others[0]
      model_why = f"n = {first}: " + model.why.get(
        first, "the kernel model's bits not computed"
      )
  identity = classes
  if exact:
    rows = (_model_classes(kernels, exact, missing),)
    classes = rows[0].classes
  boundaries = []
  for cls in classes[1:]:
    n = cls[0]
    ref = _nearest(n, classes[0], by_n)
    named = _changed_sites(by_n[n], by_n[ref])
    others = record_differences(kernels[n], kernels[ref], named)
    if others is None:  # the fates' reading: matched by name and order
      others = kernel_causes(
        [k for k in kernels[n] if not _same_fate(by_n[n], by_n[ref], k)],
        kernels[ref],
      )
    by_sites = site_causes(by_n[n], by_n[ref])
    causes = tuple(dict.fromkeys(by_sites + others))
    boundaries.append(
      Boundary(
        n, ref, causes, None if causes else "kernels differ", len(by_sites)
      )
    )
  unknown = [
    k
    for n, ks in kernels.items()
    if n not in exact  # computed bit for bit: none unknown
    for k in ks
    if not k.complete
  ]
  if len(classes) > 1:  # some kernel's per-row arithmetic, as read, differs
    verdict, why = False, None
  elif missing or len(kernels) < 2:
    verdict, why = None, _none_ran(missing) if missing else "one size compiled"
  elif unknown:
    verdict, why = None, unknown[0].why_unknown
  else:
    verdict, why = True, None
  basis = MODEL if exact and len(exact) == len(kernels) else KERNELS
  return Invariance(
    *key,
    basis if verdict is not None else UNKNOWN,
    rows,
    tuple(boundaries),
    kernels,
    verdict,
    why,
    sizes,
    left_out,
    model_why,
    tuple(sorted(exact)),
    identity if identity != classes else (),
  )


def _model_classes(
  kernels: Mapping[int, tuple[RowKernel, ...]],
  exact: Mapping[int, ConfigRows],
  missing,
) -> RowClasses:
  """Row 0's classes where the sizes in `exact` are split by the kernel
  model's bits and the others by kernel identity (their signatures): a
  size the model computed and one it did not are never one class. ULPs
  against the reference class where both are the model's bits."""
  groups: dict[tuple, list[int]] = {}
  for n in sorted(kernels):
    if n in exact:
      k = ("bits", bits(exact[n].row0))
    else:
      k = ("kernels", signature_key(kernels[n]))
    groups.setdefault(k, []).append(n)
  classes = reference_first([tuple(g) for g in groups.values()])
  ref = exact.get(classes[0][0])
  distances = tuple(
    0
    if i == 0
    else (
      ulps(ref.row0, exact[c[0]].row0)
      if ref is not None and c[0] in exact
      else None
    )
    for i, c in enumerate(classes)
  )
  return RowClasses(ROW0, classes, distances, (), tuple(missing))


def _changed_sites(r: ConfigResult, base: ConfigResult) -> tuple[int, ...]:
  """The sites whose fate `site_causes` names between two configs."""
  if r.compilation is None or base.compilation is None:
    return ()
  a, b = r.compilation.fates, base.compilation.fates
  if len(a) != len(b):
    return tuple(range(max(len(a), len(b))))
  return tuple(
    i for i in range(len(a)) if _fate_key(r, i) != _fate_key(base, i)
  )


def _same_fate(r: ConfigResult, base: ConfigResult, k: RowKernel) -> bool:
  """Whether kernel `k` of `r` computes sites whose fates `site_causes`
  already names (so it is not named twice)."""
  if not k.sites or r.compilation is None or base.compilation is None:
    return False
  a, b = r.compilation.fates, base.compilation.fates
  if len(a) != len(b):
    return True
  return all(_fate_key(r, i) != _fate_key(base, i) for i in k.sites)


def reference_first(
  classes: Sequence[tuple[int, ...]],
) -> tuple[tuple[int, ...], ...]:
  """The classes with the reference first: the largest (the earliest of
  equals), then the others in the order of their smallest n."""
  if not classes:
    return ()
  ordered = sorted(classes, key=lambda c: c[0])
  ref = max(ordered, key=len)
  return (ref, *(c for c in ordered if c is not ref))


def invariance_of(
  results: Sequence[ConfigResult],
  rows: Mapping[tuple, ConfigRows] | None = None,
  reader: KernelReader | None = None,
  kernels: Mapping[tuple, tuple[RowKernel, ...]] | None = None,
  sized: Collection[str] = (),
  model: Mapping[tuple, GroupModel | str] | None = None,
) -> tuple[Invariance, ...]:
  """The batch-invariance answer of every (case, target, precision,
  experiment) group of a sweep's records that swept two batch sizes or
  more, in the records' order.

  Args:
    results: the sweep's records.
    rows: `config_key` -> the config's rows from `RowsRequest` (row 0
      and the anchor at each offset); a config that ran but is not here is judged by its
      records' row 0 (`rows_from_records`).
    kernels: `config_key` -> a compile-only config's row kernels as
      read in its worker (`in_workers.sweep_kernels`: every kernel's PTX);
      a config not here is read by `reader`.
    reader: the compile-only targets' kernel reader (`KernelReader`);
      None: `kernel_reader()` (the kernels stage's where installed, else
      the dot sites' fates only).
    sized: the names of the cases swept over another size than the batch
      (`Case.swept_size`): their outputs need not carry n, so an output
      whose shape stays over n is not taken for a batch reduction.
    model: `group_key` -> a compile-only group's row 0 per n by the
      kernel model (`model_bits.GroupModel`: those sizes are classed by
      its bits; basis MODEL where that is every size), or why not (a
      string: kept as `Invariance.model_why`); a group not here is by
      kernel identity.
  """
  rows, kernels, model = rows or {}, kernels or {}, model or {}
  base = reader or kernel_reader()

  def reader(r: ConfigResult) -> tuple[RowKernel, ...]:
    found = kernels.get(config_key(r.config))
    return found if found is not None else tuple(base(r))

  groups: dict[tuple, list[ConfigResult]] = {}
  for r in results:
    groups.setdefault(group_key(r.config), []).append(r)
  out = []
  for key, rs in groups.items():
    if len({r.config.n for r in rs}) < 2:
      continue  # one batch size (a module case's): no question to answer
    if rs[0].config.target.compile_only:
      out.append(
        _kernel_answer(key, rs, reader, key[0] in sized, model.get(key))
      )
      continue
    found = {}
    for r in rs:
      got = rows.get(config_key(r.config)) or rows_from_records(r)
      if got is not None:
        found[r.config.n] = got
    out.append(_run_answer(key, rs, found))
  return tuple(out)
