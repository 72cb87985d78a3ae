"""A sweep's findings: what is wrong, where, and how far beyond its band.

`find_findings` reads a sweep's `ConfigResult`s and returns one `Finding` per
(experiment, case, target, what is wrong, sites) and set of batch sizes,
ranked worst first: the `explain` headline is the first, and the configs
at fault are where `candidates` tries fixes. A config is at fault exactly
when `verify`'s "accurate" requirement (no bounds) fails on it
(`requirements.checks`), so a fix that passes `verify` clears the
finding, and "no finding" means every config is within its band.

What a finding says, per config at fault, in this order (the first that
applies):

  failed            a stage failed (a compile XLA rejected, a worker
                    that died): no distance can be given (ratio None).
  changed the math  the optimized module, executed widened, left the F32
                    band (`numerics.made`): ratio = |widened module -
                    float64| / that band.
  integer           an integer headline leaf differs from its exact
                    result (overflow, wrap): ratio inf (exact is its band).
  row 0             row 0 of the headline leaf is beyond NOISE_FACTOR x
                    its f32 noise floor (`NoiseFloor.admits`): ratio
                    = row 0's |err| / that floor, observed where the
                    target ran, else predicted; what = the prediction's
                    verdict ("explained by TF32_TF32_F32 at sites [0, 1,
                    2]").
  row               a row of any leaf beyond its own floor
                    (`numerics.rows`; a large program's, row 0's scaled
                    to the row's values): ratio = that row's |err| / its
                    floor; what = "row 5 of 8 beyond its floor".

Row 0 and the worst row, where both are beyond: the one further beyond
its floor is the config's finding, whichever row it is. Within a factor
NOISE_FACTOR of each other they tie and row 0 takes it (the seed's report
is about row 0, and its verdict names the cause): a floor is the largest
of a few draws of f32 summation orders, so ratios closer than the factor
that "within noise" allows are not told apart. The seed on the A100 under
TF32 is such a tie: row 0 6029x its floor, row 6 of 9 7520x its own (both
the TF32 sites; jaxlib 0.12.0.1, 2026-12-02).
  leaf              another leaf's verdict (an overflowing int8 leaf): inf.
  not judged        no errors to judge (no reference, no prediction):
                    ratio None.

Ranking: ratio descending (inf first), ties in sweep order; findings with
no ratio (failed, not judged) after every finding with one, since how far
they are from their band cannot be said.

Private in intent: use the package, `hloprobe.verify`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from hloprobe.numerics import (
  NOISE_FACTOR,
  Verdict,
  VerdictKind,
  WorstRow,
)
from hloprobe.records import ConfigResult, Failure
from hloprobe.sites import Fate
from hloprobe.verify.requirements import checks, judged

__all__ = ["Finding", "Said", "find_findings", "rank_findings"]


@dataclasses.dataclass(frozen=True, slots=True)
class Said:
  """What a finding says, as records: its words are made in
  `hloprobe.report`. One group of fields is set per `Finding.kind`.

  Attributes:
    verdict: "integer" and "row 0": the headline leaf's verdict; "leaf":
      that leaf's (`numerics.Verdict`).
    leaf: "leaf": the leaf's name; "row": the row's leaf ("" for a single
      array).
    row, rows: "row": the worst row's index and the batch size.
    miscompile: "row": the worst row is orders of magnitude beyond a
      floor XLA:CPU's emulation could not measure (`WorstRow.far` and the
      floor check failed): named as the verdict leads with such rows.
    worst: "row": the worst row (`numerics.WorstRow`), for its words; not
      compared: configs whose worst row is the same row of the same size
      share a finding.
    changes, localised: "changed the math": the instructions named
      (`numerics.Made.changes`, `MathChange`s) and whether they are the
      suspects.
    failure: "failed": the stage that failed (`records.Failure`).
    why: "not judged": why there are no numbers to judge (the prediction's
      error, e.g. "EmulationError: ...").
    text: words given as they are, for a finding made by hand.
  """

  verdict: Verdict | None = None
  leaf: str = ""
  row: int | None = None
  rows: int | None = None
  miscompile: bool = False
  worst: WorstRow | None = dataclasses.field(default=None, compare=False)
  changes: tuple = ()
  localised: bool = True
  failure: Failure | None = None
  why: str | None = None
  text: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
  """One thing wrong, over the configs that share it.

  Attributes:
    kind: "failed", "changed the math", "integer", "row 0", "row", "leaf"
      or "not judged" (see the module docstring).
    case, target, experiment: where (names, as results print them).
    compile_only: the target ran nothing (its numbers are predicted).
    precisions: the swept precisions it holds under, in sweep order.
    batch_sizes: the batch sizes it holds at, ascending.
    what: what it says as records (`Said`: the verdict, the row, the
      instructions), in words e.g. "explained by TF32_TF32_F32 at sites
      [0, 1, 2]" (made in `hloprobe.report`).
    sites: the dot sites at fault (the non-F32 sites the prediction
      attributes the error to; the rewritten call's site), () if unknown.
    fates: what XLA made of those sites, with the pass where it was named,
      e.g. ("Triton gemm (triton-gemm-rewriter)",).
    error_abs: the error, output units (the worst config's); None when
      unknown.
    floor_abs: the band it is measured against, output units; None.
    floor_dtype: the band is the f32 noise floor of an output of this
      dtype (numpy's name, e.g. "float32", "bfloat16"; in words "f32
      noise floor", "bfloat16 noise floor"); None for the F32 band of
      "changed the math", or no band.
    ratio: error_abs / floor_abs, dimensionless (inf: beyond an exact or
      zero band; NaN: the error is NaN, ranked first); None when no
      distance can be given.
    source: "observed" (the target ran), "predicted", or "" (no numbers).
    fate_kinds: what XLA made of those sites as records (`Fate`), in
      `fates`' order, one per distinct fate: what code reads.
    split_k: the split-K factors of those sites, where split.
    algorithms: the effective algorithm of each site in `sites`, in its
      order, at the worst config (`sites.SiteFate.effective_algorithm`;
      None where not settled).
    locations: each site's `file:line` in the program (the innermost
      source frame, `ir.StableHloDot.location`, as `sweep --sites`
      prints it), in `sites` order; None where the site has none.
    worst_n, worst_precision: the worst config's batch size and
      precision (the one `error_abs` is from); None for a finding that
      has no config (none today).
    row: the row of the headline leaf the error is of (0 for "row 0",
      the worst row for "row"), None for other kinds.
  """

  kind: str
  case: str
  target: str
  experiment: str
  compile_only: bool
  precisions: tuple[str, ...]
  batch_sizes: tuple[int, ...]
  what: Said
  sites: tuple[int, ...] = ()
  fates: tuple[str, ...] = ()
  error_abs: float | None = None
  floor_abs: float | None = None
  floor_dtype: str | None = None
  ratio: float | None = None
  source: str = ""
  fate_kinds: tuple[Fate, ...] = ()
  split_k: tuple[int, ...] = ()
  algorithms: tuple[str | None, ...] = ()
  locations: tuple[str | None, ...] = ()
  worst_n: int | None = None
  worst_precision: str | None = None
  row: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class _Fault:
  """One config's finding, before configs are grouped."""

  kind: str
  what: Said
  sites: tuple[int, ...] = ()
  error_abs: float | None = None
  floor_abs: float | None = None
  floor_dtype: str | None = None
  source: str = ""
  row: int | None = None

  @property
  def ratio(self) -> float | None:
    if self.kind in ("integer", "leaf"):
      return math.inf
    if self.error_abs is None or self.floor_abs is None:
      return None
    if math.isinf(self.error_abs):  # an f32 overflow: over an inf floor too
      return math.inf
    if self.floor_abs == 0:
      return math.inf if self.error_abs > 0 else 0.0
    return self.error_abs / self.floor_abs


def _row0_or_rows(r: ConfigResult) -> _Fault | None:
  """Row 0 or the worst row, whichever is further beyond its floor (row 0
  on a tie, see the module), else another leaf's verdict."""
  p = r.prediction
  stats, source = judged(r)
  if p is None or stats is None:
    return None
  dtype = p.output_dtype
  j = p.judgement
  exact = j is not None and j.kind is VerdictKind.EXACT
  if dtype.startswith(("int", "uint")) and not exact:
    return _Fault("integer", Said(j), source=source.kind)
  row0 = None
  if not p.noise.admits(stats):
    row0 = _Fault(
      "row 0",
      Said(j),
      tuple(s.site for s in p.shares),
      stats.row0_abs,
      p.noise.row0_abs,
      dtype or "float32",
      source.kind,
      0,
    )
  row = _worst_row(r, source.kind)
  if row0 is not None and (row is None or not _further(row, row0)):
    return row0
  if row is not None:
    return row
  others = [Said(v, leaf) for leaf, v in p.leaf_judgements() if not v.accurate]
  return _Fault("leaf", others[0], source=source.kind) if others else None


def _worst_row(r: ConfigResult, source: str) -> _Fault | None:
  """The row furthest beyond its own floor over every judged leaf
  (`Prediction.rows`), or None when every row is within its own."""
  p = r.prediction
  worst = max(
    (w for w in p.rows if w is not None and not w.within),
    key=lambda w: w.multiple,
    default=None,
  )
  if worst is None:
    return None
  check = p.floor_check
  # Orders of magnitude beyond a floor XLA:CPU's emulation could not
  # measure: named as the verdict leads with them (`predict`).
  far = worst.far and check is not None and not check.trusted
  what = Said(
    leaf=worst.leaf, row=worst.row, rows=worst.rows, miscompile=far, worst=worst
  )
  return _Fault(
    "row",
    what,
    tuple(s.site for s in p.shares),
    worst.abs_err,
    worst.floor_abs,
    worst.output_dtype or "float32",
    source,
    worst.row,
  )


def _further(row: _Fault, row0: _Fault) -> bool:
  """`row` is further beyond its floor than `row0` is beyond its own, by
  more than NOISE_FACTOR (a floor's own resolution; less is a tie, which
  row 0 takes). A NaN error is further than any number (`_order`)."""
  return _order(row.ratio) > NOISE_FACTOR * _order(row0.ratio)


def _fault(r: ConfigResult) -> _Fault | None:
  """The config's finding, or None when "accurate" passes on it."""
  if not r.ok:
    f = r.failure
    return _Fault("failed", Said(failure=f))
  if checks([r], None, None)["accurate"]().passed:
    return None
  m = r.made
  if m is not None and m.changed:
    sites = tuple(
      dict.fromkeys(c.site for c in m.changes if c.site is not None)
    )
    return _Fault(
      "changed the math",
      Said(changes=m.changes, localised=m.localised),
      sites,
      m.deviation_abs,
      m.bound_abs,
      None,
      "executed",
    )
  found = _row0_or_rows(r)
  if found is not None:
    return found
  why = r.prediction_error or (
    "no errors against float64 to judge"
    if r.compilation is None or r.compilation.fates
    # Nothing hloprobe predicts: an elementwise program is not a finding
    # of hloprobe's bands, and its made check (`r.made`) stands.
    else "no contraction site, so no prediction to judge against"
  )
  return _Fault("not judged", Said(why=why))


def _fate_records(
  r: ConfigResult, sites: tuple[int, ...]
) -> tuple[tuple[Fate, ...], tuple[int, ...]]:
  """What XLA made of `sites` in `r` (each fate once) and the split-K
  factors among them."""
  comp = r.compilation
  fates = [f for f in (comp.fates if comp else ()) if f.site.index in sites]
  return (
    tuple(dict.fromkeys(f.fate for f in fates)),
    tuple(f.split_k for f in fates if f.split_k),
  )


def _fate_words(r: ConfigResult, sites: tuple[int, ...]) -> tuple[str, ...]:
  """What XLA made of `sites` in `r`, e.g. "Triton gemm
  (triton-gemm-rewriter)"; a split-K factor after the fate."""
  comp = r.compilation
  if comp is None:
    return ()
  words = []
  for f in comp.fates:
    if f.site.index not in sites:
      continue
    text = f.fate.value + (f" split-K {f.split_k}" if f.split_k else "")
    found = (comp.passes or {}).get(f.site.index)
    words.append(f"{text} ({found.pass_name})" if found else text)
  return tuple(dict.fromkeys(words))


def rank_findings(findings: Sequence[Finding]) -> tuple[Finding, ...]:
  """Worst first: a NaN error's (ratio NaN) first, then ratio
  descending, those without one last (stable)."""

  def key(f: Finding):
    nan = f.ratio is not None and math.isnan(f.ratio)
    return (f.ratio is None, not nan, -_order(f.ratio))

  return tuple(sorted(findings, key=key))


def find_findings(results: Sequence[ConfigResult]) -> tuple[Finding, ...]:
  """The findings of a sweep, ranked worst first (see the module).

  Args:
    results: a sweep's `ConfigResult`s (`sweep.run_sweep`).

  Returns:
    One `Finding` per (experiment, case, target, kind, what, sites) and
    set of batch sizes; precisions with the same batch sizes share one.
    Empty when every config is within its band.
  """
  groups: dict[tuple, list[tuple[ConfigResult, _Fault]]] = {}
  for r in results:
    fault = _fault(r)
    if fault is None:
      continue
    c = r.config
    key = (c.experiment, c.case, c.target.name, fault.kind, fault.what)
    groups.setdefault(key + (fault.sites,), []).append((r, fault))
  return rank_findings(
    [f for items in groups.values() for f in _grouped(items)]
  )


def _grouped(items: list[tuple[ConfigResult, _Fault]]) -> list[Finding]:
  """One group's configs as findings: precisions that fail at the same
  batch sizes share one."""
  sizes: dict[str, list[int]] = {}
  for r, _ in items:
    sizes.setdefault(str(r.config.precision), []).append(r.config.n)
  by_sizes: dict[tuple[int, ...], list[str]] = {}
  for precision, ns in sizes.items():
    by_sizes.setdefault(tuple(sorted(set(ns))), []).append(precision)
  out = []
  for ns, precisions in by_sizes.items():
    mine = [(r, f) for r, f in items if str(r.config.precision) in precisions]
    r, fault = max(mine, key=lambda rf: _order(rf[1].ratio))
    c = r.config
    out.append(
      Finding(
        fault.kind,
        c.case,
        c.target.name,
        c.experiment,
        c.target.compile_only,
        tuple(precisions),
        ns,
        fault.what,
        fault.sites,
        _fate_words(r, fault.sites),
        fault.error_abs,
        fault.floor_abs,
        fault.floor_dtype,
        fault.ratio,
        fault.source,
        *_fate_records(r, fault.sites),
        *_site_fields(r, fault.sites),
        c.n,
        str(c.precision),
        fault.row,
      )
    )
  return out


def _site_fields(r: ConfigResult, sites: tuple[int, ...]) -> tuple:
  """(effective algorithms, locations) of `sites` in `r`, in their order."""
  comp = r.compilation
  by_site = {f.site.index: f for f in comp.fates} if comp else {}
  fates = [by_site.get(i) for i in sites]
  return (
    tuple(f.effective_algorithm if f else None for f in fates),
    tuple(f.site.location if f else None for f in fates),
  )


def _order(ratio: float | None) -> float:
  """A ratio to compare by: None (no distance) below every number, NaN (a
  NaN error: beyond any band) above every number, inf included; a NaN
  compared as itself would leave `max` and `sorted` in input order."""
  if ratio is None:
    return -1.0
  return math.inf if math.isnan(ratio) else ratio
