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
import enum
from collections.abc import Collection, Mapping, Sequence
from typing import ClassVar

import numpy as np

from hloprobe.invariance.kernel_identity import (
  KernelReader,
  RowKernel,
  Unread,
  batched_leaves,
  computes_rows,
  kernel_reader,
  record_differences,
  signature_key,
  unbatched_shapes,
)
from hloprobe.invariance.model_bits import (
  MODEL,
  GroupModel,
  Inexact,
  NotModelled,
)
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
from hloprobe.records import Config, ConfigResult, Failure
from hloprobe.sites import Fate

__all__ = [
  "Boundary",
  "Gap",
  "Invariance",
  "Lever",
  "MODEL",
  "SiteChange",
  "SiteChanges",
  "SiteMade",
  "Unexplained",
  "Why",
  "config_key",
  "group_key",
  "invariance_of",
  "levers",
  "rows_from_records",
  "site_changes",
]

RUN, KERNELS, UNKNOWN = "run", "kernel identity", "unknown"


class Gap(enum.Enum):
  """What an answer could not read (`Why.gap`): why it is unknown, or a
  run group's note.

  NONE_RAN: no size's row is known: `Why.missing` is the first size not
    known, else (None) no output leaf carries the batch.
  SOME_RAN: only `Why.sizes` ran (fewer than two, or some not run:
    `Why.missing` the first of those).
  ONE_SIZE: only one size compiled (compile-only).
  UNBATCHED: no output leaf of a batch-swept case carries the batch
    (`Why.shapes`: every leaf's dimensions, the same at every n; reduced
    over the batch, e.g. a mean); no kernel is blamed.
  KERNEL: `Why.kernel`'s per-row arithmetic is not read
    (`RowKernel.unread`).
  ROWS_FAILED: running the rows failed (`Why.message`, the error's first
    line); the sweep's own row 0 judged instead.
  """

  NONE_RAN = "none ran"
  SOME_RAN = "some ran"
  ONE_SIZE = "one size"
  UNBATCHED = "unbatched"
  KERNEL = "kernel"
  ROWS_FAILED = "rows failed"


@dataclasses.dataclass(frozen=True)
class Why:
  """Why a group's answer is unknown, or its note (`Invariance.why`);
  report words it (`report/invariance_words.py`).

  Attributes:
    gap: what was not read (`Gap`).
    sizes: SOME_RAN: the sizes that ran, ascending.
    missing: NONE_RAN, SOME_RAN: the first size not known and its failed
      config's `Failure` (None: the config did not run), or None.
    shapes: UNBATCHED: each output leaf's dimensions.
    kernel: KERNEL: the first kernel whose arithmetic is not read.
    message: ROWS_FAILED: the error's first line.
  """

  gap: Gap
  sizes: tuple[int, ...] = ()
  missing: tuple[int, Failure | None] | None = None
  shapes: tuple[tuple[int, ...], ...] = ()
  kernel: RowKernel | None = None
  message: str = ""


@dataclasses.dataclass(frozen=True)
class SiteMade:
  """What XLA made of one contraction site in one config, as far as a
  class boundary names it.

  Attributes:
    fate: the site's fate.
    split_k: its split-K factor (1: none).
    pass_name: the pass that made the fate (`CompileRecord.passes`, e.g.
      "dot-strength-reduction"), or None where not named.
    algorithm: its effective algorithm, or None where not settled.
    emitter: the library or custom emitter computing it (a custom
      fusion's backend config kind, e.g. the CPU's "__ynn_fusion", or a
      library call's target), or None for XLA's own emitters.
  """

  fate: Fate
  split_k: int = 1
  pass_name: str | None = None
  algorithm: str | None = None
  emitter: str | None = None


@dataclasses.dataclass(frozen=True)
class SiteChange:
  """One contraction site whose fate (`_fate_key`: fate, algorithm,
  split-K, emitter) differs between two configs of a group.

  Attributes:
    site: the site's index.
    now: what the config explained made of it.
    was: what the config compared with made of it.
  """

  site: int
  now: SiteMade
  was: SiteMade


@dataclasses.dataclass(frozen=True)
class SiteChanges:
  """The contraction sites whose fate differs between two configs of a
  group (`site_changes`).

  Attributes:
    n: the batch size of the config explained.
    against: the batch size of the config compared with.
    changes: each site whose fate differs, in site order.
    counts: (n's, against's) numbers of contraction sites where they
      differ (no site is matched then, `changes` is ()); else None.
  """

  n: int
  against: int
  changes: tuple[SiteChange, ...] = ()
  counts: tuple[int, int] | None = None

  def __bool__(self) -> bool:
    return bool(self.changes or self.counts)


@dataclasses.dataclass(frozen=True)
class Unexplained:
  """A boundary no site's fate or kernel explains: what was read.

  Attributes:
    libraries: each library kernel either config runs, with the sites it
      computes: (name, sites), e.g. ("__ynn_fusion", (0, 1)) (its order
      is chosen by the whole shape and not read); () for none.
    kernels_differ: a compile-only group's boundary: the kernels'
      signatures differ but none is named.
    no_boundary: no boundary was read at that size (a pin's left-out
      size, `pin._boundary_at`).
  """

  libraries: tuple[tuple[str, tuple[int, ...]], ...] = ()
  kernels_differ: bool = False
  no_boundary: bool = False


@dataclasses.dataclass(frozen=True)
class Boundary:
  """Where a class of batch sizes starts, and what differs there (report
  words it, `report/invariance_causes.py`).

  Attributes:
    n: the class's smallest batch size.
    against: the first class's smallest batch size, compared with.
    sites: the contraction sites whose fate differs (`site_changes`).
    kernels: a compile-only group's other row kernels (of config n)
      whose signature differs, as the fates read them
      (`kernel_identity.RowKernel`s, `kernel_differences`).
    differences: the same where the kernels stage read every kernel: its
      `KernelDifference` records (`record_differences`).
    unexplained: where nothing above differs, what was read
      (`Unexplained`); else None.
    parts: where the class's sizes do not all share their sites' fates
      (`SiteMade` per site), one boundary per sub-group of sizes of equal
      fates (the first: n's), each against its own nearest member of
      the reference class, with its `sizes`: e.g. n = 1 (site 0 by XLA's
      own emitter) and n = 64 (site 0 in __ynn_fusion, as at the
      reference) of one class of bits; () where they all share them.
    sizes: a part's sizes (ascending); () for a class's boundary.
  """

  n: int
  against: int
  sites: SiteChanges
  kernels: tuple[RowKernel, ...] = ()
  differences: tuple = ()
  unexplained: Unexplained | None = None
  parts: tuple[Boundary, ...] = ()
  sizes: tuple[int, ...] = ()

  @property
  def explained(self) -> bool:
    """Whether a site's fate or a kernel is named."""
    return bool(self.sites or self.kernels or self.differences)


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
    mixed: where the reference (first) class's own sizes do not all
      share their sites' fates (run groups): a `Boundary` whose `parts`
      are its sub-groups of equal fates after the first, each against
      the reference class's first size; None where they all share them.
    kernels: n -> that config's row kernels (compile-only GPUs).
    invariant: True (one class, nothing unknown), False (a class
      boundary seen: bits differ, or per-row arithmetic differs), None
      (unknown: `why`).
    why: why `invariant` is None, or a note (a `Why`); None for none.
    sizes: every swept batch size of the group, ascending.
    left_out: n -> the kernels of that config that compute no row (they
      reach only output leaves that do not carry the batch, e.g. a loss's
      mean over the batch: `kernel_identity.computes_rows`), not judged.
    model_why: a compile-only group's sizes not classed by the kernel
      model's bits: why (`model_bits.NotModelled`: the first such size
      and the kernel or site the model is not bit-exact for, or why its
      bits were not computed); None where every size is (basis MODEL) or
      the question was not asked (run).
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
  why: Why | None = None
  sizes: tuple[int, ...] = ()
  left_out: Mapping[int, tuple[RowKernel, ...]] = dataclasses.field(
    default_factory=dict
  )
  model_why: NotModelled | None = None
  model_sizes: tuple[int, ...] = ()
  identity: tuple[tuple[int, ...], ...] = ()
  mixed: Boundary | None = None

  # The values `basis` and a row's `row` take, for readers of the record
  # (report words them): bits run, the kernel model's bits, kernel
  # identity; row 0 and the anchor row (at ANCHOR_OFFSETS).
  RUN: ClassVar[str] = RUN
  MODEL: ClassVar[str] = MODEL
  KERNELS: ClassVar[str] = KERNELS
  ROW0: ClassVar[str] = ROW0
  ANCHOR: ClassVar[str] = ANCHOR
  ANCHOR_OFFSETS: ClassVar[tuple[str, ...]] = ANCHOR_OFFSETS
  # Why the kernel model does not class a size (`model_why.reason`).
  INEXACT: ClassVar[type[Inexact]] = Inexact
  # What an answer could not read (`why.gap`), and why a row kernel's
  # arithmetic is not known (`RowKernel.unread.kind`).
  GAP: ClassVar[type[Gap]] = Gap
  UNREAD: ClassVar[type[Unread]] = Unread

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


def _made(r: ConfigResult, i: int) -> SiteMade:
  """What config `r` made of site i (its fate record, the pass that made
  it)."""
  f = r.compilation.fates[i]
  passes = r.compilation.passes or {}
  made_by = passes[i].pass_name if i in passes else None
  return SiteMade(
    f.fate, f.split_k or 1, made_by or None, f.effective_algorithm, _emitter(f)
  )


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


def site_changes(r: ConfigResult, base: ConfigResult) -> SiteChanges:
  """The sites whose fate (fate, algorithm, split-K, emitter) differs
  between two configs of a group: what config `r` and config `base`
  made of each, or their site counts where those differ. Empty where
  either config has no compile record."""
  out = SiteChanges(r.config.n, base.config.n)
  if r.compilation is None or base.compilation is None:
    return out
  a, b = r.compilation.fates, base.compilation.fates
  if len(a) != len(b):
    return dataclasses.replace(out, counts=(len(a), len(b)))
  changes = tuple(
    SiteChange(i, _made(r, i), _made(base, i))
    for i in range(len(a))
    if _fate_key(r, i) != _fate_key(base, i)
  )
  return dataclasses.replace(out, changes=changes)


def kernel_differences(
  mine: Sequence[RowKernel], base: Sequence[RowKernel]
) -> tuple[RowKernel, ...]:
  """The kernels of `mine` whose signature differs from their
  counterpart's in `base` (matched by name and sites, else by order and
  kind): the fates' reading of a boundary's other kernels."""
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
    out.append(k)
  return tuple(out)


def _run_answer(
  key, results: Sequence[ConfigResult], rows: Mapping[int, ConfigRows]
) -> Invariance:
  """A group that ran: classes by bits."""
  sizes = tuple(sorted(r.config.n for r in results))
  by_n = {r.config.n: r for r in results}
  missing = tuple(
    (r.config.n, r.failure) for r in results if r.config.n not in rows
  )
  found = [
    c
    for name in (ROW0, ANCHOR)
    if (
      c := classes_of(
        list(rows.values()),
        name,
        missing,
        prefer=lambda ns: len(_by_fates(ns, by_n)) == 1,
      )
    )
    is not None
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
    ran = tuple(sorted(n for c in found[0].classes for n in c))
    why = Why(Gap.SOME_RAN, ran, missing[0] if missing else None)
  else:
    verdict, why = True, None
  return Invariance(
    *key,
    RUN,
    tuple(found),
    boundaries,
    {},
    verdict,
    why,
    sizes,
    mixed=_mixed(found[0].classes[0], by_n),
  )


def _run_boundaries(found: Sequence[RowClasses], by_n) -> tuple[Boundary, ...]:
  """Each class start of any row (once per n), explained by the sites'
  fates against the first class; per sub-group of sizes of equal fates
  where the class's sizes differ in them (`Boundary.parts`)."""
  starts: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
  for c in found:
    for cls in c.classes[1:]:
      starts.setdefault(cls[0], (cls, c.classes[0]))
  out = []
  for n, (cls, ref) in sorted(starts.items()):
    b = _run_boundary(n, _nearest(n, ref, by_n), by_n)
    groups = _by_fates(cls, by_n)
    if len(groups) > 1:
      parts = tuple(
        dataclasses.replace(
          _run_boundary(g[0], _nearest(g[0], ref, by_n), by_n), sizes=g
        )
        for g in groups
      )
      b = dataclasses.replace(b, parts=parts)
    out.append(b)
  return tuple(out)


def _run_boundary(n: int, against: int, by_n) -> Boundary:
  """Config n's sites' fates against config `against`'s, or what was
  read where none changed."""
  sites = site_changes(by_n[n], by_n[against])
  why = None if sites else _unexplained(by_n[n], by_n[against])
  return Boundary(n, against, sites, unexplained=why)


def _mixed(ref: Sequence[int], by_n) -> Boundary | None:
  """The reference class's sub-groups of equal fates after its first,
  each against the class's first size (`Invariance.mixed`); None where
  its sizes all share them."""
  groups = _by_fates(ref, by_n)
  if len(groups) < 2:
    return None
  parts = tuple(
    dataclasses.replace(_run_boundary(g[0], ref[0], by_n), sizes=g)
    for g in groups[1:]
  )
  return Boundary(ref[0], ref[0], SiteChanges(ref[0], ref[0]), parts=parts)


def _fates(r: ConfigResult | None) -> tuple | None:
  """Every site's `_fate_key` of a config; None without a compile
  record."""
  if r is None or r.compilation is None:
    return None
  return tuple(_fate_key(r, i) for i in range(len(r.compilation.fates)))


def _by_fates(ns: Sequence[int], by_n) -> tuple[tuple[int, ...], ...]:
  """Sizes `ns` in sub-groups of equal site fates (`_fate_key` per
  site), in the order of their smallest size; a size without a compile
  record joins none but its own kind (None)."""
  groups: dict[tuple | None, list[int]] = {}
  for n in sorted(ns):
    groups.setdefault(_fates(by_n.get(n)), []).append(n)
  return tuple(tuple(g) for g in groups.values())


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


def _unexplained(r: ConfigResult, base: ConfigResult) -> Unexplained:
  """Why a bits boundary with no fate change happened, as far as read:
  the library kernels either config runs."""
  libs = _library_sites(r)
  for lib, sites in _library_sites(base).items():
    libs.setdefault(lib, [])
    libs[lib] = sorted(set(libs[lib]) | set(sites))
  return Unexplained(tuple((lib, tuple(s)) for lib, s in libs.items()))


def _none_ran(missing) -> Why:
  """No size's row known: the first missing (n, failure), if any."""
  return Why(Gap.NONE_RAN, missing=missing[0] if missing else None)


def _kernel_answer(
  key,
  results: Sequence[ConfigResult],
  reader: KernelReader,
  sized=False,
  model: GroupModel | NotModelled | None = None,
) -> Invariance:
  """A compile-only group: classes by kernel identity (the largest class
  first: the reference the others are described against), the sizes
  `model` computed row 0 for by the kernel model (`model_bits`) by those
  bits instead (`_model_classes`; basis MODEL where that is every size).
  `model` a `NotModelled`: why the model's bits were not computed
  (`Invariance.model_why`). A group of a batch-swept case (not `sized`)
  whose every output leaf keeps its shape over n has no row: unknown,
  saying so (`unbatched_shapes`)."""
  sizes = tuple(sorted(r.config.n for r in results))
  by_n = {r.config.n: r for r in results if r.ok}
  shapes = None if sized else unbatched_shapes(list(by_n.values()))
  if shapes is not None:
    no_rows = Why(Gap.UNBATCHED, shapes=shapes)
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
  missing = tuple((r.config.n, r.failure) for r in results if not r.ok)
  groups: dict[tuple, list[int]] = {}
  for n in sorted(kernels):
    groups.setdefault(signature_key(kernels[n]), []).append(n)
  classes = reference_first([tuple(g) for g in groups.values()])
  rows = (RowClasses(ROW0, classes, (), (), missing),) if classes else ()
  exact: Mapping[int, ConfigRows] = {}
  model_why = model if isinstance(model, NotModelled) else None
  if isinstance(model, GroupModel):
    exact = {n: r for n, r in model.rows.items() if n in kernels}
    others = sorted(set(kernels) - set(exact))
    if others:
      first = others[0]
      why = model.why.get(first, NotModelled(Inexact.NOT_COMPUTED))
      model_why = dataclasses.replace(why, n=first)
  identity = classes
  if exact:
    rows = (_model_classes(kernels, exact, missing),)
    classes = rows[0].classes
  boundaries = []
  for cls in classes[1:]:
    n = cls[0]
    ref = _nearest(n, classes[0], by_n)
    named = _changed_sites(by_n[n], by_n[ref])
    found = record_differences(kernels[n], kernels[ref], named)
    read: tuple[RowKernel, ...] = ()
    if found is None:  # the fates' reading: matched by name and order
      found = ()
      read = kernel_differences(
        [k for k in kernels[n] if not _same_fate(by_n[n], by_n[ref], k)],
        kernels[ref],
      )
    b = Boundary(n, ref, site_changes(by_n[n], by_n[ref]), read, found)
    if not b.explained:
      b = dataclasses.replace(b, unexplained=Unexplained(kernels_differ=True))
    boundaries.append(b)
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
    verdict = None
    why = _none_ran(missing) if missing else Why(Gap.ONE_SIZE)
  elif unknown:
    verdict, why = None, Why(Gap.KERNEL, kernel=unknown[0])
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
  """The sites whose fate `site_changes` names between two configs."""
  if r.compilation is None or base.compilation is None:
    return ()
  a, b = r.compilation.fates, base.compilation.fates
  if len(a) != len(b):
    return tuple(range(max(len(a), len(b))))
  return tuple(
    i for i in range(len(a)) if _fate_key(r, i) != _fate_key(base, i)
  )


def _same_fate(r: ConfigResult, base: ConfigResult, k: RowKernel) -> bool:
  """Whether kernel `k` of `r` computes sites whose fates `site_changes`
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
  model: Mapping[tuple, GroupModel | NotModelled] | None = None,
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
      `model_bits.NotModelled`, kept as `Invariance.model_why`); a group
      not here is by
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


class Lever(enum.Enum):
  """What a group's class boundaries name that a setting can turn off
  (`levers`; the pin's candidates, `pin.candidates_for`)."""

  YNN = enum.auto()  # a site run in YNNPACK (the CPU's __ynn_fusion)
  STRENGTH_REDUCTION = enum.auto()  # a dot made a multiply+reduce
  SPLIT_K = enum.auto()  # a Triton gemm's split-K
  TRITON_SOFTMAX = enum.auto()  # a Triton block-level (softmax) fusion


def levers(a: Invariance) -> frozenset[Lever]:
  """The levers `a`'s boundaries name, read from their records: what
  each boundary's cause names (report's words of it,
  `report/invariance_causes.py`), field by field.

  - YNN: a library named by an unexplained boundary, or an emitter that
    changed (same fate), whose name holds "ynn".
  - STRENGTH_REDUCTION: a site made a multiply+reduce, or by a pass of
    dot strength reduction, where the cause names it (the config
    explained; the one compared with where the fate changed); a fates'
    kernel of a multiply+reduce; a kernel record whose arithmetic names
    multiply+reduce (every field of a fates' kernel, the differing fields
    of the kernels stage's differences).
  - SPLIT_K: a site whose split-K is named (above 1, or changed); any
    fates' reading of a Triton gemm kernel (its split-K is named).
  - TRITON_SOFTMAX: a kernel named "triton_softmax..." or whose emitter
    is named and is "Triton block-level".
  """
  out: set[Lever] = set()
  for b in (x for c in a.boundaries for x in (c, *c.parts)):
    for c in b.sites.changes:
      shown = [c.now]
      if c.now.fate != c.was.fate:
        shown.append(c.was)
      else:
        if c.now.split_k != c.was.split_k:
          out.add(Lever.SPLIT_K)
        if c.now.emitter != c.was.emitter and any(
          "ynn" in (e or "") for e in (c.now.emitter, c.was.emitter)
        ):
          out.add(Lever.YNN)
      for m in shown:
        if m.split_k > 1:
          out.add(Lever.SPLIT_K)
        if m.fate == Fate.MULTIPLY_REDUCE or "strength-reduction" in (
          m.pass_name or ""
        ):
          out.add(Lever.STRENGTH_REDUCTION)
    for k in b.kernels:
      out |= _kernel_levers(k)
    for d in b.differences:
      out |= _difference_levers(d)
    if b.unexplained is not None and any(
      "ynn" in lib for lib, _ in b.unexplained.libraries
    ):
      out.add(Lever.YNN)
  return frozenset(out)


def _kernel_levers(k: RowKernel) -> set[Lever]:
  """The levers a fates' kernel of a boundary names (`levers`)."""
  out = set()
  if not k.sites and "triton_softmax" in k.name:
    out.add(Lever.TRITON_SOFTMAX)
  if k.fate is not None:
    if k.fate.fate == Fate.TRITON_GEMM:
      out.add(Lever.SPLIT_K)
    if k.fate.fate == Fate.MULTIPLY_REDUCE:
      out.add(Lever.STRENGTH_REDUCTION)
  rec = k.record
  if rec is not None:
    if rec.emitter.startswith("Triton block-level"):
      out.add(Lever.TRITON_SOFTMAX)
    fields = dict(rec.arithmetic)  # strength_reduction: only where it was
    if (
      "strength_reduction" in fields
      or fields.get("fate") == Fate.MULTIPLY_REDUCE.value
    ):
      out.add(Lever.STRENGTH_REDUCTION)
  return out


def _difference_levers(d) -> set[Lever]:
  """The levers a kernels-stage `KernelDifference` names: its kernels'
  names, their emitters where they differ (or one is alone), its
  differing fields (`levers`)."""
  out = set()
  kernels = [r for r in (d.a, d.b) if r is not None]
  if any("triton_softmax" in r.name for r in kernels):
    out.add(Lever.TRITON_SOFTMAX)
  if len({r.emitter for r in kernels}) != 1 or len(kernels) == 1:
    if any(r.emitter.startswith("Triton block-level") for r in kernels):
      out.add(Lever.TRITON_SOFTMAX)
  if any(
    name == "strength_reduction"
    or (name == "fate" and Fate.MULTIPLY_REDUCE.value in (x, y))
    for name, x, y in d.fields
  ):
    out.add(Lever.STRENGTH_REDUCTION)
  return out
