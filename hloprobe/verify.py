"""`hloprobe verify`: accept or reject a candidate fix, with the evidence.

A fix is a matmul precision (`float32`, `F32_F32_F32`, ...) or an XLA_FLAGS
experiment (`no_dot_strength_reduction`, `NAME:--xla_...`). One sweep runs
the baseline and the fix on the same cases, targets and batch sizes; each
requirement is then judged on the fix's configs, from numbers only, with
observed values where the target runs and predicted ones (`predict`) where
it cannot:

  consistent  row 0 does not depend on batch size: for every (case, target,
              precision), max over row 0's values of |row0(n) - row0(smallest
              n)| <= NOISE_FACTOR x the f32 noise floor of row 0, both of the
              same output leaf, this config's headline (a batched one:
              `accuracy.headline_leaf`; a leaf without a batch axis, such as
              a loss over the batch, changes with n by design; a predicted
              leaf the smallest n did not headline cannot be compared and
              fails, saying so). Needs at least two batch sizes
              (`check_batch_sizes`); a group with one, or a case with no
              batched leaf, fails, saying so.
  accurate    every config is as close to float64 as f32 noise allows: row
              0 and the whole batch of the headline leaf within NOISE_FACTOR
              x the noise floor, and every other leaf's verdict exact or
              within noise. Or, with --abs_error_bound / --rel_error_bound
              (the names of XLA's run_hlo_module), max |err| <= abs bound or
              max rel err <= rel bound (XLA's ErrorSpec: either bound
              suffices), for the headline and every observed leaf.
  golden      the fix's configs match the committed goldens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from hloprobe.compile import lowering
from hloprobe.compile.experiments import BASELINE, Experiment, parse_experiment
from hloprobe.errors import InvalidArgumentError
from hloprobe.golden import snapshot
from hloprobe.golden.diff import describe_site_changes, dot_summary
from hloprobe.ir import precisions
from hloprobe.numerics import accuracy
from hloprobe.records import ConfigResult
from hloprobe.sites import effective
from hloprobe.sweep import SweepSpec, run_sweep

__all__ = [
  "REQUIREMENTS",
  "Fix",
  "Requirement",
  "Verification",
  "check_batch_sizes",
  "fix_sweep",
  "judge",
  "parse_fix",
  "parse_requirements",
  "verify",
  "verify_fix",
]

REQUIREMENTS = ("consistent", "accurate", "golden")


@dataclasses.dataclass(frozen=True, slots=True)
class Fix:
  """A candidate fix: a precision or an XLA_FLAGS experiment.

  Attributes:
    name: as the user wrote it (the experiment's name for experiments).
    precision: the matmul precision the fix sets, or None.
    experiment: the experiment the fix runs, or None.
  """

  name: str
  precision: str | None = None
  experiment: Experiment | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Requirement:
  """One requirement's outcome.

  Attributes:
    name: "consistent", "accurate" or "golden".
    passed: whether the fix meets it.
    evidence: one line per config or group that decided it; failures first.
  """

  name: str
  passed: bool
  evidence: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Verification:
  """The outcome of `verify`.

  Attributes:
    fix: the fix.
    requirements: one outcome per required requirement, in the order asked.
    fate_changes: dot sites whose fate, emitter or algorithm differs between
      baseline and fix, in words.
    errors: per config, "<config>: row-0 |err| baseline -> fix (observed or
      predicted)".
    failures: the distinct errors of the fix's configs that failed (e.g.
      "XLA rejected flag ..."), or ().
  """

  fix: Fix
  requirements: tuple[Requirement, ...]
  fate_changes: tuple[str, ...]
  errors: tuple[str, ...]
  failures: tuple[str, ...] = ()

  @property
  def passed(self) -> bool:
    return all(r.passed for r in self.requirements)


def parse_fix(text: str) -> Fix:
  """A precision name, else a built-in experiment or `NAME:FLAGS`.

  Raises:
    InvalidArgumentError: neither a precision nor an experiment.
  """
  try:
    precisions.parse_precision(text)
  except InvalidArgumentError:
    pass
  else:
    return Fix(text, precision=text)
  try:
    experiment = parse_experiment(text)
  except InvalidArgumentError as e:
    raise InvalidArgumentError(
      f"--fix={text!r} is neither a matmul precision nor an experiment: {e}"
    ) from e
  return Fix(experiment.name, experiment=experiment)


def parse_requirements(text: str) -> tuple[str, ...]:
  """`consistent,accurate[,golden]` into a tuple; unknown names rejected.

  An empty item (`consistent,,accurate`) is rejected as `--batch_sizes=1,,2`
  is; a name given twice counts once.
  """
  names = tuple(dict.fromkeys(n.strip() for n in text.split(",")))
  if "" in names:
    raise InvalidArgumentError(
      f"--require={text!r} has an empty item; e.g. --require=consistent,accurate"
    )
  bad = [n for n in names if n not in REQUIREMENTS]
  if bad or not names:
    raise InvalidArgumentError(
      f"unknown requirement(s) {bad or [text]}; choose from {', '.join(REQUIREMENTS)}"
    )
  return names


def check_batch_sizes(
  requirements: Sequence[str], batch_sizes: Sequence[int]
) -> None:
  """Rejects "consistent" with fewer than two batch sizes to compare.

  Raises:
    InvalidArgumentError: "consistent" is required and `batch_sizes` has one size.
  """
  if "consistent" in requirements and len(set(batch_sizes)) < 2:
    raise InvalidArgumentError(
      "--require=consistent compares row 0 across batch sizes and needs at "
      f"least two; got --batch_sizes={','.join(map(str, batch_sizes))}; "
      "e.g. --batch_sizes=1,2,9, or --require=accurate"
    )


def fix_sweep(
  spec: SweepSpec, fix: Fix, requirements: Sequence[str]
) -> SweepSpec:
  """The one sweep that runs the baseline and the fix."""
  spec = dataclasses.replace(spec, explain_passes="golden" in requirements)
  if fix.experiment is not None:
    return dataclasses.replace(spec, experiments=(fix.experiment,))
  return dataclasses.replace(
    spec, precisions=tuple(dict.fromkeys(spec.precisions + (fix.precision,)))
  )


def _is_fix(r: ConfigResult, fix: Fix) -> bool:
  c = r.config
  if fix.experiment is not None:
    return c.experiment == fix.experiment.name
  return c.precision == fix.precision and c.experiment == BASELINE.name


def _words(r: ConfigResult) -> str:
  c = r.config
  return f"{c.target.name} {c.case} n={c.n} {c.precision}"


def _judged(r: ConfigResult) -> tuple[accuracy.ErrorStats | None, str]:
  """Observed errors where the target ran, else predicted ones."""
  if r.execution is not None and r.execution.stats is not None:
    return r.execution.stats, "observed"
  if r.prediction is not None:
    return r.prediction.stats, _predicted_words(r)
  return None, "n/a"


def _predicted_words(r: ConfigResult) -> str:
  """ "predicted", and where cuBLAS sites were predicted at a TF32 they
  may not use (`effective.tf32_optional`), that the result is ambiguous."""
  fates = r.compilation.fates if r.compilation is not None else ()
  sites = [f.site.index for f in fates if effective.tf32_optional(f)]
  if not sites:
    return "predicted"
  return (
    f"predicted with TF32 at cuBLAS sites {sites}, which may keep f32: "
    "ambiguous"
  )


def _noise(r: ConfigResult) -> accuracy.NoiseFloor | None:
  return r.prediction.noise if r.prediction is not None else None


def _leaf_of(
  r: ConfigResult, leaf: str, source: str
) -> accuracy.ErrorStats | None:
  """Output leaf `leaf`'s errors in `r`, "observed" or "predicted"."""
  if source == "observed":
    found = [s for s in _leaf_stats(r) if s.leaf == leaf]
  else:
    p = r.prediction
    found = [p.stats] if p is not None and p.stats.leaf == leaf else []
  return found[0] if found else None


def _leaf_stats(r: ConfigResult) -> tuple[accuracy.ErrorStats, ...]:
  return r.execution.leaf_stats if r.execution is not None else ()


def _moved(a: accuracy.ErrorStats, b: accuracy.ErrorStats) -> float:
  """Max |a - b| over row 0's values (its first value where not kept)."""
  x, y = a.row0_values, b.row0_values
  if x is None or y is None or x.shape != y.shape:
    return abs(a.row0 - b.row0)
  diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
  return float(np.max(diff)) if diff.size else 0.0


def _consistent_line(r: ConfigResult, first: ConfigResult) -> tuple[bool, str]:
  """(passed, evidence) for row 0 of `r` against the group's `first`.

  Both sides are the same output leaf, `r`'s headline (a batched leaf
  wherever the case has one, `accuracy.headline_leaf`): a leaf without a
  batch axis (a loss over the batch) changes with n by design.
  """
  stats, source = _judged(r)
  noise = _noise(r)
  if stats is None or noise is None:
    return False, f"{_words(r)}: no row 0 to compare"
  leaf = f" {stats.leaf}" if stats.leaf else ""
  if stats.axis is None:
    return False, (
      f"{_words(r)}: output leaf{leaf} has no batch axis, so no row 0 "
      "that should stay fixed as n changes"
    )
  base = _leaf_of(first, stats.leaf, source)
  if base is None:  # several batched leaves, another headline there
    return False, (
      f"{_words(r)}: no {source} row 0 of{leaf} at n={first.config.n} to "
      "compare with"
    )
  moved = _moved(stats, base)
  limit = accuracy.NOISE_FACTOR * noise.row0_abs
  # Row 0 of a leaf with several values per row: the first values are
  # shown, and the move is the largest over all of them (`_moved`).
  count = 1 if stats.row0_values is None else stats.row0_values.size
  first_of, over = (
    ("", "")
    if count < 2
    else (
      " (first values)",
      f", the largest of its {count} values",
    )
  )
  return moved <= limit, (
    f"{_words(r)}: row 0{leaf}{first_of} {stats.row0:.7g} vs "
    f"{base.row0:.7g} at n={first.config.n}, moved {moved:.2e}{over} "
    f"({source}); limit {limit:.2e}"
  )


def _consistent(fixed: list[ConfigResult]) -> Requirement:
  groups: dict[tuple, list[ConfigResult]] = {}
  for r in fixed:
    c = r.config
    groups.setdefault((c.case, c.target.name, c.precision), []).append(r)
  bad, good = [], []
  if not groups:
    bad.append("no configs of the fix to compare")
  for rs in groups.values():
    rs = sorted(rs, key=lambda r: r.config.n)
    first = rs[0].config
    if len(rs) < 2:
      bad.append(
        f"{first.target.name} {first.case} {first.precision}: consistent needs "
        f"at least two batch sizes; got n={first.n}"
      )
    for r in rs[1:]:
      ok, line = _consistent_line(r, rs[0])
      (good if ok else bad).append(line)
  return Requirement("consistent", not bad and bool(good), tuple(bad + good))


def _noise_limits(noise: accuracy.NoiseFloor) -> str:
  """E.g. "limits row-0 |err| 2.02e-04, max |err| 3.10e-04 (2 x noise
  floor 1.01e-04, 1.55e-04)": what "accurate" compares with."""
  k = accuracy.NOISE_FACTOR
  return (
    f"limits row-0 |err| {k * noise.row0_abs:.2e}, max |err| "
    f"{k * noise.max_abs:.2e} ({k:g} x noise floor {noise.row0_abs:.2e}, "
    f"{noise.max_abs:.2e})"
  )


def _within_bounds(s: accuracy.ErrorStats, abs_bound, rel_bound) -> bool:
  """XLA's ErrorSpec rule: either bound suffices."""
  return (abs_bound is not None and s.max_abs <= abs_bound) or (
    rel_bound is not None and s.max_rel <= rel_bound
  )


def _other_leaves(
  r: ConfigResult, headline: str, abs_bound, rel_bound
) -> list[str]:
  """The output leaves besides the headline that are not accurate, in
  words: by their verdict (within the noise floor or exact) or, with
  bounds, by their observed errors (where the target ran)."""
  if abs_bound is None and rel_bound is None:
    verdicts = r.prediction.leaf_verdicts if r.prediction is not None else ()
    return [
      f"{leaf} {v}"
      for leaf, v in verdicts
      if leaf != headline and v != "exact" and not v.startswith("within ")
    ]
  return [
    f"{s.leaf} max |err| {s.max_abs:.2e}, max rel {s.max_rel:.2e}"
    for s in _leaf_stats(r)
    if s.leaf != headline and not _within_bounds(s, abs_bound, rel_bound)
  ]


def _accurate(
  fixed: list[ConfigResult], abs_bound: float | None, rel_bound: float | None
) -> Requirement:
  """Every output leaf of every config accurate: the headline by its
  numbers, the others by their verdicts (or observed errors, with
  bounds)."""
  bad, good = [], []
  for r in fixed:
    stats, source = _judged(r)
    noise = _noise(r)
    if stats is None or (
      noise is None and abs_bound is None and rel_bound is None
    ):
      bad.append(f"{_words(r)}: no errors to judge")
      continue
    if abs_bound is not None or rel_bound is not None:
      ok = _within_bounds(stats, abs_bound, rel_bound)
      limit = f"abs bound {abs_bound}, rel bound {rel_bound}"
    else:
      ok = (
        accuracy.within_noise(stats, noise)
        and stats.max_abs <= accuracy.NOISE_FACTOR * noise.max_abs
      )
      limit = _noise_limits(noise)
    others = _other_leaves(r, stats.leaf, abs_bound, rel_bound)
    leaf = f"{stats.leaf} " if stats.leaf else ""
    line = (
      f"{_words(r)}: {leaf}row-0 |err| {stats.row0_abs:.2e}, max |err| "
      f"{stats.max_abs:.2e}, max rel {stats.max_rel:.2e} ({source}); {limit}"
    )
    if others:
      line += f"; not accurate: {'; '.join(others)}"
    (good if ok and not others else bad).append(line)
  return Requirement("accurate", not bad and bool(good), tuple(bad + good))


def _golden(
  fixed: list[ConfigResult],
  spec: SweepSpec,
  golden_dir: str,
  versions: dict[str, str],
) -> Requirement:
  snap = snapshot.snapshot(fixed, versions)
  record = snapshot.sweep_record(spec)
  result = snapshot.check(golden_dir, snap, record)
  lines = [str(s) for s in result.sites]
  lines += [
    f"missing golden {m} (run `hloprobe golden update` with the fix's sweep)"
    for m in result.missing
  ]
  lines += [f"changed {c.path}" for c in result.changed if not result.sites]
  lines += list(result.failed)
  if result.ok:
    lines.append(f"{result.compared} golden files match")
  return Requirement("golden", result.ok, tuple(lines))


def _counterpart(r: ConfigResult, baseline: list[ConfigResult], fix: Fix):
  """The baseline configs the fix's config replaces."""
  c = r.config
  return [
    b
    for b in baseline
    if (b.config.case, b.config.target.name, b.config.n)
    == (c.case, c.target.name, c.n)
    and (fix.precision is not None or b.config.precision == c.precision)
  ]


# What "a dot site's fate changed" compares: what XLA made of it and what
# that computes, not the precision config a precision fix changes anyway.
_FATE_KEYS = (
  "site",
  "fate",
  "fusion_kind",
  "backend_config_kind",
  "custom_call_target",
  "effective_algorithm",
  "split_k",
  "pass",
)


def _fate_sites(r: ConfigResult) -> list[dict]:
  comp = r.compilation
  if comp is None:
    return []
  return [
    {k: s[k] for k in _FATE_KEYS}
    for s in dot_summary(comp.fates, comp.passes)["sites"]
  ]


def _evidence(baseline, fixed, fix) -> tuple[tuple[str, ...], tuple[str, ...]]:
  changes, errors = [], []
  for r in (r for r in fixed if r.ok):
    new_stats, source = _judged(r)
    for b in _counterpart(r, baseline, fix):
      old, new = _fate_sites(b), _fate_sites(r)
      c = r.config
      words = (
        f"{c.target.name} {c.case} n={c.n} {b.config.precision} -> {fix.name}"
      )
      changes += [str(c) for c in describe_site_changes(words, old, new)]
      old_stats, _ = _judged(b)
      if old_stats is not None and new_stats is not None:
        errors.append(
          f"{words}: row-0 |err| {old_stats.row0_abs:.2e} -> "
          f"{new_stats.row0_abs:.2e} ({source})"
        )
  return tuple(changes), tuple(errors)


def judge(
  results: Sequence[ConfigResult],
  requirements: Sequence[str],
  abs_error_bound: float | None = None,
  rel_error_bound: float | None = None,
) -> tuple[Requirement, ...]:
  """Judges "consistent" and "accurate" on a sweep's own configs (no fix).

  For `hloprobe bisect`: is the requirement met by this jax version's
  sweep as it stands. Rules as for a fix (module docstring).

  Raises:
    InvalidArgumentError: a requirement other than consistent or accurate.
  """
  checks = _checks(list(results), abs_error_bound, rel_error_bound)
  bad = [n for n in requirements if n not in checks]
  if bad:
    raise InvalidArgumentError(
      f"cannot judge {bad} on a sweep alone; choose from {', '.join(checks)}"
    )
  return tuple(checks[n]() for n in requirements)


def _checks(
  results: list[ConfigResult],
  abs_bound: float | None,
  rel_bound: float | None,
  golden: Callable[[], Requirement] | None = None,
) -> dict[str, Callable[[], Requirement]]:
  """`REQUIREMENTS` name -> a thunk judging it on `results`.

  "golden" is in the table only when given (it needs the sweep's spec and
  the golden folder, which `judge` has not).
  """
  checks = {
    "consistent": lambda: _consistent(results),
    "accurate": lambda: _accurate(results, abs_bound, rel_bound),
  }
  if golden is not None:
    checks["golden"] = golden
  return checks


def verify(
  results: Sequence[ConfigResult],
  spec: SweepSpec,
  fix: Fix,
  requirements: Sequence[str],
  *,
  golden_dir: str | None = None,
  versions: dict[str, str] | None = None,
  abs_error_bound: float | None = None,
  rel_error_bound: float | None = None,
) -> Verification:
  """Judges a fix from the results of `fix_sweep(spec, fix, requirements)`.

  Args:
    results: that sweep's results.
    spec: the sweep as the user asked for it (before `fix_sweep`).
    fix: the fix.
    requirements: names from `REQUIREMENTS`.
    golden_dir: the golden folder (for "golden").
    versions: jax/jaxlib versions (for "golden").
    abs_error_bound, rel_error_bound: optional bounds for "accurate".

  Raises:
    GoldenError: the golden folder is missing or corrupt ("golden").
  """
  fixed = [r for r in results if _is_fix(r, fix)]
  baseline = [
    r
    for r in results
    if r.config.experiment == BASELINE.name
    and r.config.precision in spec.precisions
    and not _is_fix(r, fix)
  ]
  checks = _checks(
    fixed,
    abs_error_bound,
    rel_error_bound,
    golden=lambda: _golden(
      fixed,
      dataclasses.replace(spec, precisions=(fix.precision,))
      if fix.precision
      else spec,
      golden_dir or snapshot.default_golden_dir(),
      versions or {},
    ),
  )
  changes, errors = _evidence(baseline, fixed, fix)
  failures = tuple(dict.fromkeys(r.failure.error for r in fixed if not r.ok))
  return Verification(
    fix, tuple(checks[n]() for n in requirements), changes, errors, failures
  )


def verify_fix(
  spec: SweepSpec,
  fix: str | Fix,
  requirements: Sequence[str] = ("consistent", "accurate"),
  *,
  golden_dir: str | None = None,
  abs_error_bound: float | None = None,
  rel_error_bound: float | None = None,
) -> Verification:
  """`hloprobe verify` as a function: runs the baseline and the fix, judges.

  Args:
    spec: the sweep (its experiments are ignored: the fix is the only one).
    fix: a precision or experiment name (`parse_fix`), or a `Fix`.
    requirements: names from `REQUIREMENTS`.
    golden_dir: the golden folder for "golden"; default `golden/`.
    abs_error_bound, rel_error_bound: optional bounds for "accurate".

  Raises:
    InvalidArgumentError: a bad fix, requirement or batch-size list.
    GoldenError: the golden folder is missing or corrupt ("golden").
  """
  fix = parse_fix(fix) if isinstance(fix, str) else fix
  requirements = parse_requirements(",".join(requirements))
  spec = dataclasses.replace(spec, experiments=())
  check_batch_sizes(requirements, spec.batch_sizes)
  results = run_sweep(fix_sweep(spec, fix, requirements))
  return verify(
    results,
    spec,
    fix,
    requirements,
    golden_dir=golden_dir,
    versions=lowering.versions(),
    abs_error_bound=abs_error_bound,
    rel_error_bound=rel_error_bound,
  )
