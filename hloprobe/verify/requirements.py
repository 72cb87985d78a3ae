"""Judging requirements on a sweep's configs, from numbers only.

Each check returns a `Requirement` whose evidence is records
(`verify.evidence`), failures first; `report.verification` words them.
Rules: the package docstring.

Private in intent: use the package, `hloprobe.verify`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from hloprobe.engine import SweepSpec
from hloprobe.errors import InvalidArgumentError
from hloprobe.golden import against_goldens
from hloprobe.invariance import invariance_of
from hloprobe.numerics import (
  NOISE_FACTOR,
  ErrorStats,
  NoiseFloor,
)
from hloprobe.records import ConfigResult
from hloprobe.verify import evidence as ev

__all__ = [
  "Requirement",
  "checks",
  "judge",
  "judged",
  "subject",
]


@dataclasses.dataclass(frozen=True, slots=True)
class Requirement:
  """One requirement's outcome.

  Attributes:
    name: "consistent", "accurate" or "golden".
    passed: whether the fix meets it.
    evidence: one record per config or group that decided it (see
      `verify.evidence`); failures first.
  """

  name: str
  passed: bool
  evidence: tuple


def subject(r: ConfigResult) -> ev.Subject:
  """The config `r` is about, for evidence."""
  c = r.config
  return ev.Subject(c.target.name, c.case, c.n, c.precision)


def judged(r: ConfigResult) -> tuple[ErrorStats | None, ev.Source]:
  """Observed errors where the target ran, else predicted ones."""
  if r.execution is not None and r.execution.stats is not None:
    return r.execution.stats, ev.Source("observed")
  if r.prediction is not None:
    return r.prediction.stats, _predicted(r)
  return None, ev.Source("n/a")


def _predicted(r: ConfigResult) -> ev.Source:
  """ "predicted", with the cuBLAS sites predicted at a TF32 they may not
  use (`SiteFate.tf32_optional`), which make the result ambiguous."""
  fates = r.compilation.fates if r.compilation is not None else ()
  sites = [f.site.index for f in fates if f.tf32_optional]
  return ev.Source("predicted", tuple(sites))


def _failed(r: ConfigResult) -> ev.NotJudged:
  """A config that failed: never "no errors", but what failed and why.

  A compile XLA rejected, or a program jax could not lower for the target
  (stage "lower"), is NOT_COMPILED, with the sites and the pass or rule
  that rejected it where they were found (`records.Failure.finding`).
  """
  f = r.failure
  not_compiled = f.stage in ("lower", "compile")
  reason = ev.Reason.NOT_COMPILED if not_compiled else ev.Reason.FAILED
  return ev.NotJudged(subject(r), reason, failure=f)


def _noise(r: ConfigResult) -> NoiseFloor | None:
  return r.prediction.noise if r.prediction is not None else None


def _leaf_of(
  r: ConfigResult, leaf: str, source: ev.Source
) -> ErrorStats | None:
  """Output leaf `leaf`'s errors in `r`, observed or predicted."""
  if source.kind == "observed":
    found = [s for s in _leaf_stats(r) if s.leaf == leaf]
  else:
    p = r.prediction
    found = [p.stats] if p is not None and p.stats.leaf == leaf else []
  return found[0] if found else None


def _leaf_stats(r: ConfigResult) -> tuple[ErrorStats, ...]:
  return r.execution.leaf_stats if r.execution is not None else ()


def _moved(a: ErrorStats, b: ErrorStats) -> float:
  """Max |a - b| over row 0's values (its first value where not kept)."""
  x, y = a.row0_values, b.row0_values
  if x is None or y is None or x.shape != y.shape:
    return abs(a.row0 - b.row0)
  diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
  return float(np.max(diff)) if diff.size else 0.0


def _row_moved(r: ConfigResult, first: ConfigResult):
  """`ev.RowMoved` (or `ev.NotJudged`) for row 0 of `r` against the
  group's `first`.

  Both sides are the same output leaf, `r`'s headline (a batched leaf
  wherever the case has one, `accuracy.headline_leaf`): a leaf without a
  batch axis (a loss over the batch) changes with n by design.
  """
  stats, source = judged(r)
  noise = _noise(r)
  who = subject(r)
  if stats is None or noise is None:
    return ev.NotJudged(who, ev.Reason.NO_ROW0)
  if stats.axis is None:
    return ev.NotJudged(who, ev.Reason.NO_BATCH_AXIS, stats.leaf)
  base = _leaf_of(first, stats.leaf, source)
  if base is None:  # several batched leaves, another headline there
    return ev.NotJudged(
      who, ev.Reason.NO_BASE, stats.leaf, source, first.config.n
    )
  moved = _moved(stats, base)
  limit = NOISE_FACTOR * noise.row0_abs
  # Row 0 of a leaf with several values per row: the first values are
  # shown, and the move is the largest over all of them (`_moved`).
  count = 1 if stats.row0_values is None else stats.row0_values.size
  return ev.RowMoved(
    who,
    stats.leaf,
    stats.row0,
    base.row0,
    first.config.n,
    moved,
    count,
    source,
    limit,
    moved <= limit,
    stats.row0_size if stats.row0_size > count else 0,
  )


def _consistent(fixed: list[ConfigResult]) -> Requirement:
  groups: dict[tuple, list[ConfigResult]] = {}
  for r in fixed:
    c = r.config
    key = (c.experiment, c.case, c.target.name, c.precision)
    groups.setdefault(key, []).append(r)
  bad, good = [], []
  if not groups:
    bad.append(ev.NotJudged(None, ev.Reason.NO_CONFIGS))
  for rs in groups.values():
    bad.extend(_failed(r) for r in rs if not r.ok)
    rs = sorted((r for r in rs if r.ok), key=lambda r: r.config.n)
    if not rs:
      continue
    first = rs[0].config
    if len(rs) < 2:
      bad.append(
        ev.TooFewSizes(first.target.name, first.case, first.precision, first.n)
      )
    for r in rs[1:]:
      found = _row_moved(r, rs[0])
      (good if getattr(found, "passed", False) else bad).append(found)
  return Requirement("consistent", not bad and bool(good), tuple(bad + good))


def _invariant(
  fixed: list[ConfigResult],
  rows: Mapping[tuple, object] | None,
  kernels: Mapping[tuple, tuple] | None = None,
  sized: Collection[str] = (),
  model: Mapping[tuple, object] | None = None,
) -> Requirement:
  """ "invariant": every (case, target, precision) of the fix's configs
  one class of identical bits (`invariance.invariance_of`: run where the
  target runs, by kernel identity on a compile-only GPU, by the kernel
  model's bits where `model` has them). The evidence is
  each group's `invariance.Invariance` (its line names the classes and
  the boundary sites), the groups not invariant (or unknown) first."""
  answers = invariance_of(fixed, rows, None, kernels, sized, model)
  bad = [a for a in answers if a.invariant is not True]
  good = [a for a in answers if a.invariant is True]
  bad += [_failed(r) for r in fixed if not r.ok]
  if not answers:  # no group swept two sizes (check_batch_sizes refuses)
    bad.append(ev.NotJudged(None, ev.Reason.NO_CONFIGS))
  return Requirement("invariant", not bad and bool(good), tuple(bad + good))


def _within_bounds(s: ErrorStats, abs_bound, rel_bound) -> bool:
  """XLA's ErrorSpec rule: either bound suffices."""
  return (abs_bound is not None and s.max_abs <= abs_bound) or (
    rel_bound is not None and s.max_rel <= rel_bound
  )


def _other_leaves(
  r: ConfigResult, headline: str, abs_bound, rel_bound
) -> tuple[ev.LeafVerdict | ev.LeafRow | ev.LeafErrors, ...]:
  """The output leaves besides the headline that are not accurate: by
  their verdict (within the noise floor or exact) or, with bounds, by
  their observed errors (where the target ran)."""
  if abs_bound is None and rel_bound is None:
    p = r.prediction
    verdicts = p.leaf_judgements() if p is not None else ()
    rows = p.rows if p is not None else ()
    return tuple(
      ev.LeafVerdict(leaf, v)
      for leaf, v in verdicts
      if leaf != headline and not v.accurate
    ) + tuple(
      ev.LeafRow(w.leaf, w)
      for w in rows
      if w is not None and w.leaf != headline and not w.within
    )
  return tuple(
    ev.LeafErrors(s.leaf, s.max_abs, s.max_rel)
    for s in _leaf_stats(r)
    if s.leaf != headline and not _within_bounds(s, abs_bound, rel_bound)
  )


def _errors_judged(r: ConfigResult, abs_bound, rel_bound):
  """`ev.ErrorsJudged` (or `ev.NotJudged`) for one config: the headline
  by its numbers, the other leaves by their verdicts (or observed
  errors, with bounds); without bounds, every row of every leaf against
  its own noise floor too (`Prediction.rows`)."""
  if not r.ok:
    return _failed(r)
  stats, source = judged(r)
  noise = _noise(r)
  bounded = abs_bound is not None or rel_bound is not None
  if stats is None or (noise is None and not bounded):
    return ev.NotJudged(subject(r), ev.Reason.NO_ERRORS)
  worst = None
  if bounded:
    ok = _within_bounds(stats, abs_bound, rel_bound)
    limits = ev.ErrorBounds(abs_bound, rel_bound)
  elif stats.mismatched is not None:
    # An integer leaf is compared exactly: its "noise floor" is the
    # emulation's own distance from the exact result (a wrapping dot's
    # emulation wraps as much), never a band an overflow fits in.
    ok = stats.mismatched == 0
    limits = ev.ErrorBounds(0.0, None)  # exact: no error allowed
  else:
    k = NOISE_FACTOR
    ok = noise.admits(stats) and stats.max_abs <= (k * noise.max_abs)
    limits = ev.NoiseLimits(k, noise.row0_abs, noise.max_abs)
    worst = _worst_row(r, stats.leaf)
    ok = ok and (worst is None or worst.within)
  others = _other_leaves(r, stats.leaf, abs_bound, rel_bound)
  return ev.ErrorsJudged(
    subject(r),
    stats.leaf,
    stats.row0_abs,
    stats.max_abs,
    stats.max_rel,
    source,
    limits,
    others,
    ok and not others,
    worst,
  )


def _worst_row(r: ConfigResult, leaf: str):
  """Leaf `leaf`'s worst row (`numerics.WorstRow`), or None."""
  rows = r.prediction.rows if r.prediction is not None else ()
  return next((w for w in rows if w is not None and w.leaf == leaf), None)


def _accurate(
  fixed: list[ConfigResult], abs_bound: float | None, rel_bound: float | None
) -> Requirement:
  """Every output leaf of every config accurate, and no config's math
  changed by XLA (`ev.MathChanged`, whatever its errors)."""
  bad, good = [], []
  for r in fixed:
    if r.made is not None and r.made.changed:
      m = r.made
      bad.append(ev.MathChanged(subject(r), m, m.deviation_abs, m.bound_abs))
      continue
    found = _errors_judged(r, abs_bound, rel_bound)
    (good if getattr(found, "passed", False) else bad).append(found)
  return Requirement("accurate", not bad and bool(good), tuple(bad + good))


def golden(
  fixed: list[ConfigResult],
  spec: SweepSpec,
  golden_dir: str | None,
  versions: dict[str, str],
) -> Requirement:
  """ "golden": the fix's configs against the goldens in `golden_dir`
  (None: the default folder, `golden.against_goldens`).

  Raises:
    GoldenError: the golden folder is missing or corrupt.
  """
  result = against_goldens(golden_dir, fixed, versions, spec)
  notes = [ev.GoldenNote("site", s) for s in result.sites]
  notes += [ev.GoldenNote("missing", m) for m in result.missing]
  if not result.sites:
    notes += [ev.GoldenNote("changed", c.path) for c in result.changed]
  notes += [ev.GoldenNote("failed", f) for f in result.failed]
  if result.ok:
    notes.append(ev.GoldenNote("match", result.compared))
  return Requirement("golden", result.ok, tuple(notes))


def judge(
  results: Sequence[ConfigResult],
  requirements: Sequence[str],
  abs_error_bound: float | None = None,
  rel_error_bound: float | None = None,
) -> tuple[Requirement, ...]:
  """Judges "consistent" and "accurate" on a sweep's own configs (no fix).

  For `hloprobe bisect`: is the requirement met by this jax version's
  sweep as it stands. Rules as for a fix (package docstring).

  Raises:
    InvalidArgumentError: a requirement other than consistent or accurate.
  """
  table = checks(list(results), abs_error_bound, rel_error_bound)
  bad = [n for n in requirements if n not in table]
  if bad:
    raise InvalidArgumentError(
      f"cannot judge {bad} on a sweep alone; choose from {', '.join(table)}"
    )
  return tuple(table[n]() for n in requirements)


def checks(
  results: list[ConfigResult],
  abs_bound: float | None,
  rel_bound: float | None,
  golden_check: Callable[[], Requirement] | None = None,
  invariant_rows: Mapping[tuple, object] | None = None,
  invariant_kernels: Mapping[tuple, tuple] | None = None,
  invariant_sized: Collection[str] = (),
  invariant_model: Mapping[tuple, object] | None = None,
) -> dict[str, Callable[[], Requirement]]:
  """`REQUIREMENTS` name -> a thunk judging it on `results`.

  "golden" is in the table only when given (it needs the sweep's spec and
  the golden folder, which `judge` has not). "invariant" judges row 0 as
  the records keep it, and the anchor rows where `invariant_rows` (the
  fix's configs' rows from `invariance.rows_and_kernels`) has them; `invariant_sized`
  names the cases swept over another size than the batch
  (`invariance.invariance_of`'s `sized`).
  """
  table = {
    "consistent": lambda: _consistent(results),
    "accurate": lambda: _accurate(results, abs_bound, rel_bound),
    "invariant": lambda: _invariant(
      results,
      invariant_rows,
      invariant_kernels,
      invariant_sized,
      invariant_model,
    ),
  }
  if golden_check is not None:
    table["golden"] = golden_check
  return table
