"""A fix's `Verification`: its requirements judged, and what it changed.

`verify` judges a finished sweep (`fix.fix_sweep`); `verify_fix` runs that
sweep first. Rules: the package docstring.

Private in intent: use the package, `hloprobe.verify`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from hloprobe.compile import BASELINE, INT32_DOTS_FIX, jaxlib_release
from hloprobe.engine import SweepSpec, plan_sweep, run_sweep, worker_pool
from hloprobe.golden import (
  GoldenSiteChange,
)
from hloprobe.invariance import rows_and_kernels
from hloprobe.records import ConfigResult, Failure
from hloprobe.verify import evidence as ev
from hloprobe.verify import requirements as judged_by
from hloprobe.verify.fix import (
  BASELINE_FIX,
  Fix,
  check_batch_sizes,
  fix_sweep,
  is_fix,
  parse_fix,
  parse_requirements,
)

__all__ = ["Verification", "verify", "verify_fix"]


@dataclasses.dataclass(frozen=True)
class Verification:
  """The outcome of `verify`.

  Attributes:
    fix: the fix (`fix.BASELINE_FIX`, `Fix.baseline`: none; the baseline
      judged, with no fate or error changes).
    requirements: one outcome per required requirement, in the order asked.
    fate_changes: contraction sites whose fate, emitter or algorithm differs between
      baseline and fix (`golden.diff.GoldenSiteChange` records).
    errors: per config, row 0's |err| at baseline and fix
      (`evidence.ErrorChange`).
    failures: the distinct failures of the fix's configs that failed
      (`records.Failure`: the stage, XLA's error, the sites it rejected;
      `hloprobe.report` words them), or ().
  """

  fix: Fix
  requirements: tuple[judged_by.Requirement, ...]
  fate_changes: tuple[GoldenSiteChange, ...]
  errors: tuple[ev.ErrorChange, ...]
  failures: tuple[Failure, ...] = ()

  @property
  def passed(self) -> bool:
    return all(r.passed for r in self.requirements)


def _counterpart(r: ConfigResult, baseline: list[ConfigResult], fix: Fix):
  """The baseline configs the fix's config replaces."""
  c = r.config
  case = INT32_DOTS_FIX.unfixed(c.case) if fix.program else c.case
  return [
    b
    for b in baseline
    if (b.config.case, b.config.target.name, b.config.n)
    == (case, c.target.name, c.n)
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


def _changes(baseline, fixed, fix) -> tuple[tuple, tuple]:
  """(site changes, row-0 error changes) from each baseline config to the
  fix's config that replaces it."""
  changes, errors = [], []
  for r in (r for r in fixed if r.ok):
    new_stats, source = judged_by.judged(r)
    for b in _counterpart(r, baseline, fix):
      c = r.config
      words = (
        f"{c.target.name} {c.case} n={c.n} {b.config.precision} -> {fix.name}"
      )
      changes += GoldenSiteChange.of_compilations(
        words, b.compilation, r.compilation, _FATE_KEYS
      )
      old_stats, _ = judged_by.judged(b)
      if old_stats is not None and new_stats is not None:
        errors.append(
          ev.ErrorChange(words, old_stats.row0_abs, new_stats.row0_abs, source)
        )
  return tuple(changes), tuple(errors)


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
  rows=None,
  kernels=None,
  sized=(),
  model=None,
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
    rows: for "invariant", the configs' anchor rows (the first of
      `invariance.rows_and_kernels`); None: row 0 as the records keep it.
    kernels: for "invariant", the compile-only configs' row kernels as
      their workers read them (the second of `invariance.rows_and_kernels`);
      None: read from the records.
    sized: for "invariant", the names of the cases swept over another
      size than the batch (`Case.swept_size`: outputs that keep their
      shape over n are not taken for batch reductions there).
    model: for "invariant", the compile-only groups' row 0 by the kernel
      model (the third of `invariance.rows_and_kernels`); None: by kernel
      identity alone.

  Raises:
    GoldenError: the golden folder is missing or corrupt ("golden").
  """
  fixed = [r for r in results if is_fix(r, fix)]
  baseline = [
    r
    for r in results
    if r.config.experiment == BASELINE.name
    and r.config.precision in spec.precisions
    and not is_fix(r, fix)
  ]
  checks = judged_by.checks(
    fixed,
    abs_error_bound,
    rel_error_bound,
    golden_check=lambda: judged_by.golden(
      fixed,
      dataclasses.replace(spec, precisions=(fix.precision,))
      if fix.precision
      else spec,
      golden_dir or None,
      versions or {},
    ),
    invariant_rows=rows,
    invariant_kernels=kernels,
    invariant_sized=sized,
    invariant_model=model,
  )
  changes, errors = _changes(baseline, fixed, fix)
  failures = tuple(dict.fromkeys(r.failure for r in fixed if not r.ok))
  return Verification(
    fix, tuple(checks[n]() for n in requirements), changes, errors, failures
  )


def verify_fix(
  spec: SweepSpec,
  fix: str | Fix | None,
  requirements: Sequence[str] = ("consistent", "accurate"),
  *,
  golden_dir: str | None = None,
  abs_error_bound: float | None = None,
  rel_error_bound: float | None = None,
  recorded: Callable[..., Sequence[ConfigResult]] | None = None,
) -> Verification:
  """`hloprobe verify` as a function: runs the baseline and the fix (or
  the baseline alone, `fix` None), judges.

  Args:
    spec: the sweep (its experiments are ignored: the fix is the only one).
    fix: a precision or experiment name (`parse_fix`), or a `Fix`; None
      (`BASELINE_FIX`): no fix, the program as it is judged (`verify`
      without --fix, e.g. the baseline against --require=invariant).
    requirements: names from `REQUIREMENTS`; "invariant" alone sweeps
      the bits only (`fix.fix_sweep`: no accuracy numerics).
    golden_dir: the golden folder for "golden"; default `golden/`.
    abs_error_bound, rel_error_bound: optional bounds for "accurate".
    recorded: None (sweep), or given the planned sweep (baseline and fix,
      an `engine.SweepPlan`) its records, swept already (`verify
      --results`: a `hloprobe merge` folder's); nothing runs then, and
      "invariant" has no anchor rows to judge.

  Raises:
    InvalidArgumentError: a bad fix, requirement or batch-size list.
    GoldenError: the golden folder is missing or corrupt ("golden").
  """
  if fix is None:
    fix = BASELINE_FIX
  elif isinstance(fix, str):
    fix = parse_fix(fix)
  requirements = parse_requirements(",".join(requirements))
  spec = dataclasses.replace(spec, experiments=())
  check_batch_sizes(requirements, spec.batch_sizes)
  plan = plan_sweep(fix_sweep(spec, fix, requirements))
  rows = kernels = model = None
  if recorded is not None:
    results = recorded(plan)
  else:
    results, rows, kernels, model = _swept(plan, requirements)
  return verify(
    results,
    spec,
    fix,
    requirements,
    golden_dir=golden_dir,
    versions=jaxlib_release().versions,
    abs_error_bound=abs_error_bound,
    rel_error_bound=rel_error_bound,
    rows=rows,
    kernels=kernels,
    sized={c.name for c in plan.cases if c.case.swept_size is not None},
    model=model,
  )


def _swept(plan, requirements):
  """The verify sweep's records and, for "invariant", its anchor rows and
  kernels, on the same workers."""
  rows = kernels = model = None
  with worker_pool(plan) as pool:
    results = run_sweep(plan, pool=pool)
    if "invariant" in requirements:  # the anchors, on the same workers
      # Each case's inputs made where its program may run: a user case's
      # in the worker that loaded it, never here.
      rows, kernels, model = rows_and_kernels(plan, pool, None, results)
  return results, rows, kernels, model
