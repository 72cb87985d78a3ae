"""Predicted numerics of a config: what its chosen algorithms should compute.

For each config, the case is re-evaluated on the CPU (`emulate`) with every
dot site at its effective algorithm (`SiteFate.effective_algorithm`, which
`effective` read from the kernel or a rule), and compared with the float64
reference (`accuracy`). Around it: the f32 noise floor (every site at F32
under several summation orders; checked against the numpy executor's F32
run, `floor_check`, and replaced by its independent floor where XLA:CPU's
disagrees), per-site attribution (each non-F32 site
alone, and each one put back to F32, but for a large program: alone only,
`note_records.SharesAlone`), each site's analytic band, the
candidate assignment that best matches an observed run, and a verdict.

Emulations are cached per (batch size, site algorithms, order), so configs
that share an assignment (most precisions on most targets compute F32) cost
one emulation, and what one config needs is made in one compile, with a
bounded guess at the next sizes (`emulation_cache`). What a config derives
from them (statistics, noise floors, row-0 errors) is held apart from the
outputs, which a budget drops: a later config of an assignment predicted
before emulates nothing again (issue 37). A `Predictor` holds that cache
for one case; it is made per sweep (explain's fix tries reuse it), not
kept globally.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import numpy as np

from hloprobe.compile import Case
from hloprobe.errors import HloprobeError
from hloprobe.ir import is_attention_target
from hloprobe.numerics import (
  accuracy,
  candidates,
  emulate,
  emulation_cache,
  floor_check,
  note_records,
  reference,
  row_proof,
  rows,
  site_notes,
)
from hloprobe.numerics.bands import OPERAND_UNIT, SiteBand, site_band
from hloprobe.numerics.floor_sum import FloorSum
from hloprobe.numerics.kernel_sites import KernelRowZero
from hloprobe.numerics.site_notes import F32
from hloprobe.numerics.verdicts import (
  FarCause,
  Verdict,
  VerdictKind,
  algorithm_groups,
)
from hloprobe.runtime import Stopwatch
from hloprobe.sites import SiteFate

__all__ = ["Prediction", "Predictor", "SiteShare"]


@dataclasses.dataclass(frozen=True, slots=True)
class SiteShare:
  """One non-F32 site's part in a config's predicted error (row 0).

  Attributes:
    site: dot site index.
    algorithm: its effective algorithm.
    alone_abs: |row 0 - f64| with only this site at its algorithm.
    without_abs: |row 0 - f64| with this site at F32, the others as chosen;
      None where not computed: a large program's (`Predictor._shares`,
      `note_records.SharesAlone`).
    share: alone_abs over the sum of all sites' alone_abs, in [0, 1]:
      of the shares' sites only where a large program's are by groups
      (`SharesAlone.groups`: the group of largest error's).
  """

  site: int
  algorithm: str
  alone_abs: float
  without_abs: float | None
  share: float


@dataclasses.dataclass(frozen=True)
class Prediction:
  """A config's predicted numerics and verdict.

  Attributes:
    site_algorithms: the algorithm emulated at each site.
    stats: predicted errors against float64 (`accuracy.ErrorStats`).
    noise: the f32 noise floor of the config (the independent one of
      `floor_check` where the measured one is not trusted).
    tolerance_abs: how far an observed row 0 may sit from the predicted one
      and still be explained: NOISE_FACTOR times the larger of the
      predicted and the F32 row-0 spread over summation orders, plus one
      rounding step of the output dtype at row 0's magnitude.
    shares: attribution of the predicted error to the non-F32 sites (only
      where the error exceeds the noise floor); of those of the group of
      largest error only where a large program's are by groups
      (`note_records.SharesAlone.groups`).
    top_site: the site with the largest share, or None (within that
      group where grouped: another group may hold a larger one alone).
    bands: each site's band over the largest batch swept (None where not
      measurable): analytic; measured for attention (`attention_band`).
    best_candidate: for an observed run, the candidate assignment whose
      emulated row 0 is nearest, as its non-F32 algorithms with their
      sites (`verdicts.algorithm_groups`), e.g. (("TF32_TF32_F32", (1,
      2)),) (cuBLAS kept site 0 in f32), or () where every site is
      F32_F32_F32; None without an observation. See
      `Predictor._best_candidate`; `hloprobe.report` words it.
    leaves: every output leaf's name, in tree-leaves order ("" for a
      single array): the order of `verdicts`, `rows` and `noises`.
    verdicts: every output leaf's verdict as a record (`Verdict`, its
      words made in `hloprobe.report`); `judgement` is `leaf`'s: see
      `accuracy.judge`, with `site_notes.annotate`'s notes. Where TF32 is allowed, not required (cuBLAS sites,
      `SiteFate.tf32_optional`), a run is explained by any assignment of
      TF32 or F32 to those sites that it sits within `tolerance_abs` of;
      the verdict names that assignment and the sites kept in f32.
      Without a run, the note says row 0 assumes TF32 there (ambiguous).
    notes: what the prediction notes as records, each with its `note`
      (`note_records`: sites taken as F32, attention biases of another
      dtype); `hloprobe.report` words them.
    leaf: the output leaf the numbers above are for (`accuracy.headline_leaf`:
      the case's first batched one, fixed per case); "" for a single
      array.
    output_dtype: the dtype of `leaf`, e.g. "bfloat16".
    reference: where the float64 reference comes from
      (`References.source`): the numpy executor, or "XLA:CPU float64 (not
      executed by the numpy executor: <target>)".
    floor_check: `leaf`'s measured noise floor checked against the numpy
      executor (`floor_check`); where not trusted, `noise` is the
      independent floor and the verdicts say so.
    rows: every output leaf's worst row (`rows.worst_row`: every row
      judged, or the rows `rows.judged_rows` picks (`WorstRow.judged`),
      each against its own f32 noise floor), of the observed
      errors where there are some, else the predicted; in `leaves`'
      order; None for a leaf not judged by rows (integer, unbatched).
      `verdict` stays row 0's.
    noises: every output leaf's noise floor, in `leaves`' order
      (`noise` is `leaf`'s): what `made` judges its rows against.
    kernel: row 0 by the kernel model where sites are bit-exact (`KernelRows`).
  """

  site_algorithms: tuple[str, ...]
  stats: accuracy.ErrorStats
  noise: accuracy.NoiseFloor
  tolerance_abs: float
  shares: tuple[SiteShare, ...]
  top_site: int | None
  bands: tuple[SiteBand | None, ...]
  best_candidate: tuple[tuple[str, tuple[int, ...]], ...] | None
  leaves: tuple[str, ...]
  verdicts: tuple[Verdict, ...]
  notes: tuple = ()
  leaf: str = ""
  output_dtype: str = "float32"
  reference: str = ""
  floor_check: floor_check.FloorCheck | None = None
  rows: tuple[rows.WorstRow | None, ...] = ()
  noises: tuple[accuracy.NoiseFloor, ...] = ()
  kernel: KernelRowZero | None = None

  @property
  def unshared_sites(self) -> tuple[int, ...]:
    """The non-F32 sites with no `SiteShare` because a large program's
    shares were made by groups (`note_records.SharesAlone.groups`: only
    the group of largest error's sites have one), ascending; () where the
    shares were not made by groups."""
    if not any(
      getattr(n, "note", None) == "shares alone" and n.groups
      for n in self.notes
    ):
      return ()
    shared = {s.site for s in self.shares}
    return tuple(
      i
      for i, a in enumerate(self.site_algorithms)
      if a != F32 and i not in shared
    )

  @property
  def judgement(self) -> Verdict | None:
    """The headline leaf's (`leaf`'s) verdict; None where it has none."""
    return next(
      (v for leaf, v in self.leaf_judgements() if leaf == self.leaf), None
    )

  def leaf_judgements(self) -> tuple[tuple[str, Verdict], ...]:
    """(leaf name, verdict) for every output leaf, in `leaves`' order."""
    return tuple(zip(self.leaves, self.verdicts))


# Fixed summation orders (all but XLA's own): each output element is summed
# in the same order whatever the batch size, so for a case whose rows are
# independent they are emulated once, at the largest batch size, and sliced.
# The same order, not always the same bits: on jaxlib 0.12.0.1 XLA:CPU
# fuses f32 products into the pairwise order's first sums as FMAs for some
# chunk sizes and shapes and not others (`emulate_dot._pairwise`), so rows
# emulated apart (gathered, or row 0 alone) may differ from the slice in
# the last bits (measured 2026-12-06 on a 1024 x 768 x 2304 dot).
_FIXED_ORDERS = tuple(o for o in emulate.SUMMATION_ORDERS if o != "xla")


def _row0_of(row0: tuple, leaves: tuple, axes) -> tuple:
  """`leaves` (a batch whose first row is row 0) with that row, along each
  leaf's batch axis (`axes`, every one an int: `EmulationCache.by_rows`
  holds no program with a leaf of none), replaced by `row0`'s leaves (a
  batch of that one row)."""
  return tuple(
    np.concatenate(
      [np.asarray(r), np.take(np.asarray(x), np.arange(1, x.shape[a]), a)], a
    )
    for r, x, a in zip(row0, leaves, axes)
  )


# Above this many dot sites (a real-size model: a GPT-2-small layer has
# 6, the largest built-in case 16), a rows_independent case's per-site
# attribution (a whole-program emulation per site, read at row 0 only:
# each site alone; its run without the site is not computed there,
# `Predictor._shares`) is emulated at row 0 alone, gathered, not at the
# config's n: its cost grows with the sites times the program, so with depth
# squared, and a batch of n would multiply it by n (issue 37). A
# ranking of the sites; its numbers may differ in the last bits from row
# 0 of a batch of n, where XLA:CPU's own dot may sum in another order.
SHARES_AT_ROW0_ABOVE = 16

# The same for a rows_independent case whose inputs hold at least this
# many bytes, whatever its sites (a real-size model by its weights and
# caches: gpt2_1 31 MB in 6 sites, the decode layer 0.47 GB in 8; the
# largest built-in case 3.4 MB): decode's a100 bfloat16 shares were 12
# switched emulations at each of its 7 sizes up to 64 rows, 40 of its case
# worker's 105 CPU-s (issue 37).
SHARES_AT_ROW0_FROM_BYTES = 16 << 20

# Above this many non-F32 sites, a large program's attribution
# (`_shares_at_row0`) is made by groups (issue 37): each alone run is a
# whole-program emulation, so one per site costs the sites times the
# program, depth squared (gpt2_12's 72 TF32 sites: 72 runs of 0.65 CPU-s,
# 47 of its case worker's CPU-s). The sites are cut into about sqrt(S)
# groups of consecutive sites (`candidates.consecutive_groups`), each
# group's sites emulated together at row 0, and only the group of largest
# error has its sites emulated alone: about 2 sqrt(S) runs (gpt2_12: 17).
# The largest built-in case has 16 sites, so none is grouped.
SHARES_GROUPED_ABOVE = 16


class Predictor:
  """Predicts configs of one case; caches emulations between them.

  Emulations run at each batch size, like the float64 reference; for a
  case that declares `rows_independent` (checked by `references`), the
  slow fixed-order ones run once at the largest size and are sliced.

  Args:
    case: the case.
    full_inputs: its `full_inputs()` (None for a sized case).
    references: its float64 references (`reference.References`).
    sizes: the sweep's batch sizes in the order it visits them, for the
      cache's guess at the next sizes (`emulation_cache`); () for none. The
      predictions are the same either way.
    all_rows: judge every row (--all_rows); else a batch case above
      `rows.ALL_ROWS_UP_TO` rows whose rows are independent (declared
      `rows_independent`, or proven from its jaxpr: `row_proof`) has its
      noise floor emulated and its rows judged at `rows.judged_rows` only;
      a large program's above fewer rows (`rows.rows_whole`), its fixed
      orders a row at a time (`_measure_rows`).
  """

  def __init__(
    self,
    case: Case,
    full_inputs: tuple | None,
    references: reference.References,
    sizes: tuple[int, ...] = (),
    all_rows: bool = False,
  ):
    self._refs, self._name = references, case.name
    self._cache = emulation_cache.EmulationCache(case, full_inputs, sizes)
    # Rows may be gathered: each row's value does not depend on the others.
    self._gather = (
      not all_rows
      and references.independent
      and full_inputs is not None
      and case.swept_size is None
    )
    self._case, self._full = case, full_inputs
    self._inputs_bytes = sum(
      getattr(x, "nbytes", 0) for x in jax.tree_util.tree_leaves(full_inputs)
    )
    # Judged rows may be gathered (declared, or `row_proof`): made when a
    # size above `rows.ALL_ROWS_UP_TO` first asks (True/False), or the
    # reason they may not be.
    self._subset: bool | None = None if not all_rows else False
    self.subset_why: str | None = None
    # Up to how many rows a size is judged whole (`rows.rows_whole`, from
    # the first config's sites: the program's multiply-adds a row); a
    # large program's fewer than `rows.ALL_ROWS_UP_TO`. None: not known yet.
    self._whole: int | None = None
    self._all_rows = all_rows
    # Its fixed orders are emulated a row at a time (`_measure_rows`).
    self._apart = False
    # What configs derived from emulations, by what it depends on (see
    # `_derive`): small (floats, per-row errors), never dropped.
    self._derived: dict = {}

  def visits(self, sizes: tuple[int, ...]) -> None:
    """The sizes the current sweep visits, in order: the cache guesses at
    these (`EmulationCache.visits`; explain's fix tries visit fewer than
    the sweep that made this predictor). The predictions are the same."""
    self._cache.visits(sizes)

  def _derive(self, key, make):
    """`make()`, held under `key` (issue 37): the statistics, floors and
    row-0 errors a config derives from emulated outputs, kept after the
    outputs themselves are dropped (`kept.Kept`'s budget: a real-size
    model's outputs are MiBs), so that a later config of the same
    assignment (a fix try of the baseline's algorithms, a precision of
    the same effective algorithms) emulates nothing again. Each value is
    a deterministic function of its key, so the results do not change."""
    if key not in self._derived:
      self._derived[key] = make()
    return self._derived[key]

  def _judge_subset(self) -> bool:
    """A batch case's judged rows may be computed on their inputs
    gathered: it declares `rows_independent` (checked by `references`),
    or its jaxpr proves it (`row_proof.proof`, once; else every row is
    judged, and `subset_why` says why)."""
    if self._subset is None:
      case, full = self._case, self._full
      self._subset = self._gather
      if not self._gather and full is not None and case.swept_size is None:
        args = case.inputs_for(full, min(2, case.full_size(full)))
        self.subset_why = row_proof.proof(case, args, self._refs.axes)
        self._subset = self.subset_why is None
    return self._subset

  def _measure_rows(self, n: int) -> None:
    """Up to how many rows a size is judged whole (`rows.rows_whole` of
    the program's multiply-adds a row, `EmulationCache.row_multiply_adds`:
    one value per case, whatever sizes the sweep visits first), once: a
    large program's are fewer than `rows.ALL_ROWS_UP_TO` (never with
    --all_rows, nor for a case whose rows cannot be gathered), and its
    fixed orders are emulated a row at a time where the cache can
    (`EmulationCache.by_rows`), at every row of a size judged whole and at
    the judged rows of a larger one."""
    if self._whole is not None:
      return
    whole = rows.ALL_ROWS_UP_TO
    case = self._case
    if (
      not self._all_rows and self._full is not None and case.swept_size is None
    ):
      try:
        whole = rows.rows_whole(self._cache.row_multiply_adds())
      except Exception:  # a size 1 or 2 it cannot trace: judged as small
        pass  # (an emulation at a size that fails names why, when asked)
    # (`_judge_subset` last: it may trace the case, `row_proof`.)
    large = whole < rows.ALL_ROWS_UP_TO and self._judge_subset()
    self._whole = whole if large else rows.ALL_ROWS_UP_TO
    self._apart = large and self._cache.by_rows(
      self._refs.axes, self._cache.count(n)
    )

  def _found_later(self, n: int) -> bool:
    """The rows judged at size n are found after the first pass (more
    rows than a size judged whole, gathered): their floors' keys are not
    known before it."""
    return n > self._whole_rows() and self._judge_subset()

  def _whole_rows(self) -> int:
    """Up to how many rows a size is judged whole (`_measure_rows`;
    `rows.ALL_ROWS_UP_TO` before the first config)."""
    return rows.ALL_ROWS_UP_TO if self._whole is None else self._whole

  def _judged(self, n: int, first_pass) -> tuple[int, ...] | None:
    """The rows to judge at size n (`rows.judged_rows`), from each leaf's
    first-pass errors; None: every row."""
    if not self._found_later(n):
      return None
    return rows.judged_rows(
      n,
      [
        None if axis is None else s.row_abs
        for s, axis in zip(first_pass, self._refs.axes)
      ],
      self._whole_rows(),
    )

  def _gathered(self, leaves, judged: tuple[int, ...] | None) -> tuple:
    """`leaves` at size n cut to the judged rows along their batch axes."""
    return rows.gathered(leaves, judged, self._refs.axes)

  def _emulate(self, n: int, algorithms: tuple[str, ...]) -> tuple:
    """Every output leaf at size n in XLA's own summation order (cached)."""
    return self._cache.get(n, algorithms)

  def _site_scales(self) -> tuple:
    """Each site's (max, rms) of |A||B| over the largest size (cached).

    Measured once: the max over the largest batch bounds the max over any
    smaller one, so the worst-case bands stay bounds.
    """
    return self._cache.scales(self._refs.largest)

  def _fixed_size(self, n: int) -> int | tuple[int, ...]:
    """The size the fixed orders are emulated at for size n: the largest
    (sliced) for a rows_independent case, else n; a large program's row
    0 alone (`_measure_rows`; `rows`)."""
    if self._apart:
      return (0,)
    return self._refs.largest if self._refs.independent else n

  def _fixed_order(self, n: int, algorithms: tuple[str, ...], order: str):
    """Output leaves at size n in a fixed order (cached)."""
    size = self._fixed_size(n)
    found = self._cache.get(size, algorithms, order)
    return found if size == n else self._refs.sliced(found, n)

  def _row0(self, n: int, algorithms: tuple[str, ...], leaf: int) -> float:
    return self._derive(
      ("row0", n, algorithms, leaf),
      lambda: float(np.ravel(self._emulate(n, algorithms)[leaf])[0]),
    )

  def _spreads(
    self, n: int, assignments, judged: tuple[int, ...] | None = None
  ) -> list[tuple]:
    """`_spread_floors` of each assignment, those made for an earlier
    config held (`_derive`)."""
    key = lambda a: ("spread", n, a, judged)
    missing = [a for a in assignments if key(a) not in self._derived]
    if missing:
      for a, floors in zip(missing, self._spread_floors(n, missing, judged)):
        self._derived[key(a)] = floors
    return [self._derived[key(a)] for a in assignments]

  def _spread_floors(
    self, n: int, assignments, judged: tuple[int, ...] | None = None
  ) -> list[tuple]:
    """For each assignment, each leaf's row 0 and batch against float64
    over every order, one order's outputs at a time (`floor_sum.FloorSum`); the assignments' outputs in one
    order are made together (one compile) where not held.

    With `judged` rows (`_judged`), only those rows: the fixed orders
    emulated on their inputs gathered, all in one compile (a batch of
    len(judged)), XLA's order cut from the config's emulation at n. A
    large program's fixed orders at row 0 alone (`_fixed_size`), each the
    XLA order's output with row 0 replaced: the other rows' floors are
    raised to row 0's scaled to their values (`FloorSum`'s row0_floor)."""
    refs = self._gathered(self._refs.at(n), judged)
    whole = None if judged is None else self._whole_rows()
    sums = [
      [
        FloorSum(r, a, judged, whole, self._apart)
        for r, a in zip(refs, self._refs.axes)
      ]
      for _ in assignments
    ]
    size = self._fixed_size(n) if judged is None or self._apart else judged
    if judged is not None or self._apart:
      self._cache.fetch(
        [(size, a, o) for a in assignments for o in _FIXED_ORDERS]
      )
    # XLA's order first: its outputs are the ones held since `_prefetch`
    # (the floor takes maxima and minima, so the order of orders is free).
    for order in ("xla", *_FIXED_ORDERS):
      if order != "xla" and judged is None and not self._apart:
        self._cache.fetch([(size, a, order) for a in assignments])
      for algorithms, totals in zip(assignments, sums):
        if order == "xla":
          outs = self._gathered(self._emulate(n, algorithms), judged)
        elif self._apart:
          outs = _row0_of(
            self._cache.get(size, algorithms, order),
            self._gathered(self._emulate(n, algorithms), judged),
            self._refs.axes,
          )
        elif judged is not None:
          outs = self._cache.get(judged, algorithms, order)
        else:
          outs = self._fixed_order(n, algorithms, order)
        for total, out in zip(totals, outs):
          total.add(out)
    return [tuple(total.floor() for total in totals) for totals in sums]

  def _leaf_stats(self, n: int, algorithms) -> tuple[accuracy.ErrorStats, ...]:
    return self._derive(
      ("stats", n, algorithms),
      lambda: tuple(
        accuracy.ErrorStats.of(out, ref, axis, name)
        for out, ref, axis, name in zip(
          self._emulate(n, algorithms),
          self._refs.at(n),
          self._refs.axes,
          self._refs.names,
        )
      ),
    )

  def predict(
    self,
    n: int,
    fates: tuple[SiteFate, ...],
    observed: tuple[accuracy.ErrorStats, ...] | None,
    watch: Stopwatch | None = None,
    on_judged: Callable[[tuple[int, ...] | None], object] | None = None,
  ) -> Prediction:
    """The prediction of one config at size n.

    Every output leaf is judged; the headline (`accuracy.headline_leaf`:
    the case's first batched leaf, the same in every config) is the
    config's `leaf`, and gets the attribution and best candidate.

    Args:
      n: batch size (or the case's swept size).
      fates: the config's dot sites, with effective algorithms.
      observed: its observed errors, one per output leaf, or None where
        it cannot run.
      watch: if given, charged the time of each stage (`timing.STAGES`).
      on_judged: if given, called with the rows judged (the noise
        floors' rows, `rows.judged_rows`; None: every row) as soon as the
        first pass has found them, before the floors are emulated (issue
        37: what XLA made is run on those rows beside the floors).

    Raises:
      HloprobeError: the emulator's sites do not match the StableHLO sites.
      EmulationError: the case holds a primitive the emulator cannot follow.
    """
    stage = (watch if watch is not None else Stopwatch()).stage
    with stage("emulation"):
      count = self._cache.count(n)  # one trace per batch size
      if count != len(fates):
        raise HloprobeError(
          f"the emulator finds {count} dot sites, the StableHLO "
          f"{len(fates)}; cannot pair them"
        )
      self._measure_rows(n)
      chosen, note = candidates.chosen_algorithms(fates)
      # A config of an assignment predicted before (another precision of
      # the same effective algorithms, a fix try that keeps them) finds
      # what it derives held (`_derive`): nothing to prefetch.
      if ("predicted", n, chosen) not in self._derived:
        self._prefetch(n, chosen)
      stats = self._leaf_stats(n, chosen)
    with stage("noise floor"):
      # The rows judged: a first pass over every row's error (`rows`).
      judged = self._judged(n, observed or stats)
      if on_judged is not None:
        on_judged(judged)
      f32 = (F32,) * count
      if self._gather and chosen != f32:
        # The chosen assignment's spread serves row 0's tolerance only:
        # its fixed orders are emulated at row 0 alone (gathered).
        spreads = self._spreads(n, [f32], judged)
        spreads += self._spreads(n, [chosen], (0,))
      else:
        spreads = self._spreads(n, list(dict.fromkeys((f32, chosen))), judged)
      checks = self._checked_floors(n, spreads[0], fates)
      noise = tuple(c.floor for c in checks)
      spread = noise if chosen == f32 else spreads[1]
    tolerance = tuple(
      accuracy.NOISE_FACTOR * max(s.row0_spread_abs, f.row0_spread_abs)
      + accuracy.output_ulp(st.row0_values, dtype)
      for s, f, st, dtype in zip(spread, noise, stats, self._refs.dtypes)
    )
    judged = observed or stats
    verdicts = [
      site_notes.overflow_sites(
        accuracy.judge(
          observed[i] if observed else None,
          stats[i],
          noise[i],
          tolerance[i],
          chosen,
          self._refs.dtypes[i],
        ),
        fates,
        self._refs.dtypes[i],
      )
      for i in range(len(stats))
    ]
    leaf = accuracy.headline_leaf(self._refs.axes, self._refs.dtypes)
    with stage("attribution"):
      shares, alone = (), None
      if not noise[leaf].admits(judged[leaf]):
        shares = self._shares(n, chosen, leaf)
        alone = self._shares_alone(chosen, shares)
      bands = self._bands(n, fates, chosen)
      mismatch = self._cache.attention_notes(self._refs.largest)
      notes = tuple(x for x in (note, mismatch, alone) if x is not None)
      best = self._best_candidate(
        n, fates, chosen, observed and observed[leaf], tolerance[leaf], leaf
      )
      verdicts[leaf] = self._headline_verdict(
        n,
        fates,
        chosen,
        best,
        observed and observed[leaf],
        (verdicts[leaf], noise[leaf], tolerance[leaf]),
        leaf,
        tuple(v for i, v in enumerate(verdicts) if i != leaf),
      )
    worst = tuple(map(rows.worst_row, judged, noise, self._refs.dtypes))
    verdicts = tuple(
      _far_rows_first(v, w, c, o, st, f, dtype)
      for v, w, c, o, st, f, dtype in zip(
        verdicts,
        worst,
        checks,
        observed or (None,) * len(stats),
        stats,
        noise,
        self._refs.dtypes,
      )
    )
    verdicts = tuple(map(floor_check.noted, verdicts, checks))
    for named in (mismatch, alone):  # named where the answer is read
      if named is not None:
        verdicts = tuple(
          v.noted(named) if i == leaf else v for i, v in enumerate(verdicts)
        )
    self._derived[("predicted", n, chosen)] = True
    top = max(shares, key=lambda s: s.alone_abs).site if shares else None
    described = None if best is None else algorithm_groups(best)
    return Prediction(
      site_algorithms=chosen,
      stats=stats[leaf],
      noise=noise[leaf],
      tolerance_abs=tolerance[leaf],
      shares=shares,
      top_site=top,
      bands=bands,
      best_candidate=described,
      leaves=tuple(self._refs.names),
      verdicts=verdicts,
      notes=notes,
      leaf=self._refs.names[leaf],
      output_dtype=self._refs.dtypes[leaf],
      reference=self._refs.source(n),
      floor_check=checks[leaf],
      rows=worst,
      noises=noise,
    )

  def _checked_floors(self, n: int, measured: tuple, fates) -> tuple:
    """Each leaf's measured floor checked against the numpy executor's F32
    run (`floor_check.check_floor`)."""
    run = self._refs.executed_f32(n)
    k = sum(f.site.contracting_size or 0 for f in fates)
    return tuple(
      floor_check.check_floor(
        measured[i],
        None if run.outputs is None else run.outputs[i],
        ref,
        self._refs.axes[i],
        self._refs.dtypes[i],
        k,
        f"case {self._name}, n = {n} (F32 emulation)",
        run.why_not,
      )
      for i, ref in enumerate(self._refs.at(n))
    )

  def _prefetch(self, n: int, chosen: tuple[str, ...]) -> None:
    """Emulates what this config will most likely ask for in one compile
    (`EmulationCache.fetch`): F32, `chosen` and the per-site share
    assignments at n, both noise floors' fixed orders (for a
    rows_independent case, the chosen assignment's at row 0 alone: only
    row 0's spread is used; F32's at the judged rows after the first pass
    where a size has more rows than are judged whole, `_found_later`; a
    large program's a row at a time, `_measure_rows`), and the site scales;
    each output is bit for bit the one a separate emulation gives.

    The share assignments are made here only where they can be one
    switched compile (`_shares_ahead`). A config with a non-F32 site also
    has these assignments guessed at the sweep's next sizes. An all-F32
    one has not: its F32 output at another size is cheaper made along
    with that size's other assignments, whose shared ops (an F32 prefix)
    XLA's CSE then compiles once.
    """
    f32 = (F32,) * len(chosen)
    wanted = [f32, chosen]
    if self._shares_ahead(chosen):  # else made when needed, if ever
      wanted += candidates.share_assignments(chosen)
    size = self._fixed_size(n)
    # Judged rows: their fixed orders come after the first pass; the
    # chosen assignment's at row 0 alone (`predict`).
    fixed = (f32,) if self._gather else (f32, chosen)
    keys = [(n, a, "xla") for a in wanted] + [
      (size, a, o)
      for a in fixed
      for o in _FIXED_ORDERS
      if not self._found_later(n)
    ]
    if self._gather and chosen != f32:
      keys += [((0,), chosen, o) for o in _FIXED_ORDERS]
    if not self._cache.fits(keys):
      # Large outputs: F32 and chosen now; the fixed orders two at a time
      # (`_spreads`), the shares by row 0 alone (`_row0s_abs`).
      keys = [(n, a, "xla") for a in (f32, chosen)]
    self._cache.fetch(
      [k for k in keys if not self._derived_from(k, n, chosen)],
      scales_at=self._refs.largest,
      ahead_of=None if chosen == f32 else n,
    )

  def _derived_from(self, key, n: int, chosen: tuple[str, ...]) -> bool:
    """Whether everything `predict` at size n of `chosen` derives from the
    emulation `key` (size, assignment, order) of `_prefetch` is held
    (`_derive`: made by an earlier config), so that it need not be made:
    F32's and the chosen assignment's noise floors (over XLA's order and
    the fixed ones), the chosen one's statistics, a share assignment's
    row-0 error. Not where the rows judged are still to be found (more
    rows than a size is judged whole, gathered: `_found_later`): their
    floors' keys are not known yet."""
    if self._found_later(n):
      return False
    _, a, order = key
    f32 = (F32,) * len(chosen)
    if a not in (f32, chosen):  # a share assignment ("xla" order)
      leaf = accuracy.headline_leaf(self._refs.axes, self._refs.dtypes)
      return self._share_key(n, a, leaf) in self._derived
    judged = (0,) if a == chosen != f32 and self._gather else None
    if ("spread", n, a, judged) not in self._derived:
      return False
    return order != "xla" or a != chosen or ("stats", n, a) in self._derived

  def _shares_ahead(self, chosen: tuple[str, ...]) -> bool:
    """Whether `_prefetch` makes the per-site share assignments of
    `chosen` before they are asked for: where they are not made at row 0
    alone (`_shares_at_row0`) and can switch (`emulate.switchable`, with
    F32 and `chosen`): then all of them are one switched compile
    (`emulation_cache.emulate_together`). A split's (an explain fix
    try's BF16_BF16_F32_X6 or TF32_TF32_F32_X3) cannot switch, so each
    would be an emulator of its own, compiled a few at a time; they are
    made only when `_shares` asks for them, which a config within its
    noise floor (most fix tries) never does (issue 37: a GPT-2 layer's
    three split tries spent about 24 compiles on shares never read)."""
    f32 = (F32,) * len(chosen)
    return not self._shares_at_row0(len(chosen)) and emulate.switchable(
      [f32, chosen, *candidates.share_assignments(chosen)]
    )

  def _shares_at_row0(self, sites: int) -> bool:
    """The per-site attribution is emulated at row 0 alone
    (`SHARES_AT_ROW0_ABOVE`, `SHARES_AT_ROW0_FROM_BYTES`)."""
    return self._gather and (
      sites > SHARES_AT_ROW0_ABOVE
      or self._inputs_bytes >= SHARES_AT_ROW0_FROM_BYTES
    )

  def _share_size(self, n: int, sites: int):
    """The batch a share assignment of `sites` sites is emulated at: n,
    or (0,), a batch of row 0 alone (`_shares_at_row0`); part of the key
    its row-0 error is held by (`_row0s_abs`, `_derived_from`)."""
    return (0,) if self._shares_at_row0(sites) else n

  def _share_key(self, n: int, a: tuple[str, ...], leaf: int) -> tuple:
    """The key a share assignment's row-0 error is held by (`_derived`):
    its batch (`_share_size`) and, where that is n, n. Emulated at row 0
    alone, it is one value at every n: the emulation is a batch of row 0
    alone, and the reference's row 0 is too, for the gathered case's
    references are made once at the largest size and sliced
    (`reference.References.at`). So the configs of one assignment at
    several sizes (gpt2_12's a100 bfloat16 at n = 1, 2 and 8: 72 TF32
    sites, 144 share emulations) emulate the shares once, not once per
    size: the held row-0 outputs (`EmulationCache.kept_of`) outgrow
    `kept.KEPT_BYTES` there and were made again (issue 37: 222 of the
    case worker's 432 CPU-s)."""
    size = self._share_size(n, len(a))
    return ("row 0 abs", None if size == (0,) else n, size, a, leaf)

  def _row0s_abs(self, n: int, assignments, leaf: int) -> dict:
    """|row 0 - float64 row 0| of leaf `leaf` (its max) at each
    assignment ("xla" order), keeping only row 0 of each emulation (`EmulationCache.kept_of`: one switched compile for those
    not held)."""
    axis = self._refs.axes[leaf]
    ref = accuracy.element0(self._refs.at(n)[leaf], axis)
    keep = lambda leaves: np.array(accuracy.element0(leaves[leaf], axis))
    assignments = list(dict.fromkeys(assignments))
    size = self._share_size(n, len(assignments[0])) if assignments else n
    key = lambda a: self._share_key(n, a, leaf)
    missing = [a for a in assignments if key(a) not in self._derived]
    rows = self._cache.kept_of(size, missing, keep, ("row 0", leaf))
    for a, got in zip(missing, rows):
      self._derived[key(a)] = float(
        np.max(np.abs(got.astype(np.float64) - ref))
      )
    return {a: self._derived[key(a)] for a in assignments}

  def _shares(
    self, n: int, chosen: tuple[str, ...], leaf: int
  ) -> tuple[SiteShare, ...]:
    """Each non-F32 site's `SiteShare` of leaf `leaf`'s row-0 error: its
    assignment alone and, but for a large program (`_shares_at_row0`:
    each of its sites is a whole-program emulation), without it. A large
    program's without runs are not computed (`without_abs` None, named by
    `_shares_alone`): the share, the top site and its share read the
    alone runs only (issue 37: gpt2_12's 72 TF32 sites, 144 runs of 0.5
    CPU-s, now 72)."""
    pairs = list(candidates.share_pairs(chosen))
    both = not self._shares_at_row0(len(chosen))
    if not both and len(pairs) > SHARES_GROUPED_ABOVE:
      pairs = self._largest_group(n, chosen, pairs, leaf)
    wanted = [x for p in pairs for x in (p[1:] if both else p[1:2])]
    found = self._row0s_abs(n, wanted, leaf)
    rows = [
      (i, chosen[i], found[a], found[w] if both else None) for i, a, w in pairs
    ]
    total = sum(r[2] for r in rows) or 1.0
    return tuple(SiteShare(i, a, al, wo, al / total) for i, a, al, wo in rows)

  def _largest_group(self, n: int, chosen: tuple[str, ...], pairs, leaf: int):
    """The `share_pairs` of the group of consecutive non-F32 sites
    (`candidates.consecutive_groups`) whose sites, emulated together at
    their algorithms (the others at F32), give row 0 of leaf `leaf` the
    largest error (ties: the first group; a NaN error above every number,
    as `verify.findings` orders them: compared as itself it would leave
    `max` at whichever group came before it); each group one emulation at
    row 0 alone (`_row0s_abs`)."""
    groups = candidates.consecutive_groups(len(pairs))
    assignments = []
    for group in groups:
      sites = {pairs[k][0] for k in group}
      assignments.append(
        tuple(a if i in sites else F32 for i, a in enumerate(chosen))
      )
    found = self._row0s_abs(n, assignments, leaf)
    errors = [np.inf if np.isnan(found[a]) else found[a] for a in assignments]
    top = max(range(len(groups)), key=lambda g: (errors[g], -g))
    return [pairs[k] for k in groups[top]]

  def _shares_alone(
    self, chosen: tuple[str, ...], shares: tuple[SiteShare, ...]
  ) -> note_records.SharesAlone | None:
    """The note that `shares` were made alone only (`_shares`: a large
    program's), and by groups where they were, None where their without
    runs were computed too."""
    if not shares or shares[0].without_abs is not None:
      return None
    note = note_records.SharesAlone(
      sites=len(shares),
      program_sites=len(chosen),
      sites_above=SHARES_AT_ROW0_ABOVE,
      inputs_bytes=self._inputs_bytes,
      from_bytes=SHARES_AT_ROW0_FROM_BYTES,
    )
    non_f32 = sum(a != F32 for a in chosen)
    if non_f32 <= SHARES_GROUPED_ABOVE:
      return note
    return dataclasses.replace(
      note,
      groups=len(candidates.consecutive_groups(non_f32)),
      non_f32_sites=non_f32,
      grouped_above=SHARES_GROUPED_ABOVE,
    )

  def _bands(self, n: int, fates, chosen) -> tuple[SiteBand | None, ...]:
    bands = []
    for f, alg, scale in zip(fates, chosen, self._site_scales()):
      i, k = f.site.index, f.site.contracting_size
      if is_attention_target(f.site.op):
        bands.append(self._cache.attention_band(self._refs.largest, i, alg, k))
      elif scale is not None and alg in OPERAND_UNIT:
        bands.append(site_band(i, alg, k, *scale))
      else:
        bands.append(None)
    return tuple(bands)

  def _best_candidate(
    self, n, fates, chosen, observed, tolerance, leaf
  ) -> tuple[str, ...] | None:
    """The assignment whose row 0 is nearest the observed one; None
    without an observation.

    Where the observation sits within tolerance of the chosen assignment,
    that one is taken without emulating the others. Else the nearest of
    `candidates.candidate_assignments`, ties to the earlier.
    """
    if observed is None:
      return None
    if abs(self._row0(n, chosen, leaf) - observed.row0) <= tolerance:
      return chosen
    found = candidates.candidate_assignments(fates, chosen)
    self._cache.fetch(  # one compile
      [
        (n, c, "xla")
        for c in found
        if ("row0", n, c, leaf) not in self._derived
      ]
    )
    return min(found, key=lambda c: abs(self._row0(n, c, leaf) - observed.row0))

  def _headline_verdict(
    self, n, fates, chosen, best, observed, judged, leaf, elsewhere=()
  ) -> Verdict:
    """The headline leaf's verdict with its site notes.

    `judged` is (`accuracy.judge` at the chosen assignment, the f32
    noise floor, the tolerance), all of leaf `leaf`; `observed` its
    observed errors or None. Where the best candidate is another
    assignment the cuBLAS rule allows (`candidates.allowed_assignments`)
    and the observation sits within tolerance of it, the run is judged
    against that one, and the notes say which sites cuBLAS kept in f32.
    Notes go on the headline leaf only: which sites feed which leaf is not
    known here; a site another leaf's verdict (`elsewhere`) already names
    is not noted again.
    """
    verdict, noise, tolerance = judged
    emulated, dtype = chosen, self._refs.dtypes[leaf]
    if (
      best is not None
      and best != chosen
      and candidates.is_allowed(
        best, chosen, candidates.optional_sites(fates, chosen)
      )
      and abs(self._row0(n, best, leaf) - observed.row0) <= tolerance
    ):
      emulated = best
    stats = self._leaf_stats(n, emulated)[leaf]
    if (
      emulated != chosen
      and verdict.kind is VerdictKind.UNEXPLAINED
      and not verdict.integer
    ):
      verdict = accuracy.judge(
        observed, stats, noise, tolerance, emulated, dtype
      )
    return site_notes.annotate(
      verdict,
      fates,
      emulated,
      dtype,
      noise.admits(stats),
      observed=observed is not None,
      named_elsewhere=elsewhere,
    )


def _far_rows_first(
  verdict: Verdict,
  worst: rows.WorstRow | None,
  check: floor_check.FloorCheck,
  observed: accuracy.ErrorStats | None,
  predicted: accuracy.ErrorStats,
  noise: accuracy.NoiseFloor,
  dtype: str,
) -> Verdict:
  """`verdict` led by the rows orders of magnitude beyond their band
  (`rows.far_rows`), whatever row 0 says, with their cause (`FarCause`):

  - MISCOMPILE where the measured floor failed its check (`floor_check`:
    the XLA:CPU emulation disagrees with the numpy executor), the rows
    judged against the independent floor (`worst`);
  - UNEXPLAINED where the target ran and its rows are that far beyond both
    their f32 floor and the prediction at the sites' effective algorithms
    (each row's band: the larger of the two), e.g. a row XLA computed
    wrong on a GPU.

  A row beyond its f32 floor by what the sites' algorithms predict (TF32
  rows on the A100) is not led with: the verdict names its cause.
  E.g. in words "rows 32768-39999 of 40000 wrong by up to 1.0e+07:
  suspected XLA:CPU miscompile; within f32 noise; ..."."""
  if not check.trusted:
    far = rows.far_rows(worst, FarCause.MISCOMPILE)
  elif observed is not None and predicted.row_abs is not None:
    floors, judged = noise.row_abs, noise.rows
    predicted_rows = predicted.row_abs
    if judged is not None:  # the judged rows' floors only
      predicted_rows = predicted_rows[np.asarray(judged, np.int64)]
    if floors is None or floors.shape != predicted_rows.shape:
      floors, judged = np.full(predicted.row_abs.shape, noise.max_abs), None
      predicted_rows = predicted.row_abs
    band = dataclasses.replace(
      noise, row_abs=np.maximum(floors, predicted_rows), rows=judged
    )
    far = rows.far_rows(
      rows.worst_row(observed, band, dtype), FarCause.UNEXPLAINED
    )
  else:
    return verdict
  if far is None:
    return verdict
  return dataclasses.replace(verdict, far_rows=far)
