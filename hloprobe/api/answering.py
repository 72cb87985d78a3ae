"""explain's answer, one library call for every entry point: the findings
ranked worst first and the candidate fixes, tried or listed.

`answer` is what `hloprobe explain` (commands/explain.py) and
`hloprobe.explain` (`calls.sweep` with passes named) both call; they
differ only in what they ask of it: the command line tries the fixes on
its sweep's workers and record cache (or lists their `verify` commands
under --notry_fixes); from Python none is tried (`NOT_TRIED`).

Nothing here prints. Private in intent: use the package, `hloprobe.api`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hloprobe.engine import SweepPlan, SweepProgress
from hloprobe.records import ConfigResult
from hloprobe.report import Answer
from hloprobe.verify import candidate_fixes, find_findings

__all__ = ["AFTER_PASS", "BEFORE_XLA", "NOT_TRIED", "answer"]

# Why `explain` from Python tries no fix: each try is a further sweep, and
# its `verify` command names a case by its words, which a function has not.
NOT_TRIED = (
  "hloprobe.explain tries none; `hloprobe explain --case=FILE.py:FACTORY` "
  "tries them and prints their verify commands"
)

# Why the candidates after the first that passed were not tried.
AFTER_PASS = "a fix before them passed; --all_fixes tries every one"
# Why none was tried where every config at fault failed before XLA
# (`verify.candidate_fixes`' `before_xla`).
BEFORE_XLA = (
  "the configs at fault fail before XLA compiles them, at lower, where "
  "jax reads no XLA flag and a precision only as the dots' parameters"
)


def answer(
  plan: SweepPlan,
  records: Sequence[ConfigResult],
  *,
  try_fixes: bool,
  every_fix: bool = False,
  not_tried: str = "--notry_fixes",
  list_untried: bool = True,
  pool=None,
  progress: Callable[[], Callable[[SweepProgress], None] | None] = (
    lambda: None
  ),
) -> Answer:
  """The findings (`verify.find_findings`) and the candidate fixes.

  Args:
    plan: the explain sweep's plan.
    records: its records.
    try_fixes: try the candidates on the configs at fault (further
      sweeps, `verify.candidate_fixes`), judged as `verify` judges, until
      one passes; the rest are listed untried (`AFTER_PASS` says why).
      Where every config at fault failed before XLA, none is planned
      (`BEFORE_XLA` says why).
    every_fix: with `try_fixes`, try every candidate (--all_fixes).
    not_tried: why none was tried, when not `try_fixes`.
    list_untried: with `try_fixes` off, list each candidate with its
      `verify` command (False: the case has no words for one; nothing is
      planned).
    pool: the workers the tries run on (the explain sweep's
      `sweep.worker_pool`), or None: workers of their own.
    progress: makes each try sweep's progress callable (or None).

  Raises:
    KeyboardInterrupt: during a try sweep (the caller says what finished).
  """
  findings = find_findings(records)
  if not try_fixes and not list_untried:
    return Answer(findings, not_tried=not_tried)
  tries = candidate_fixes(
    findings,
    records,
    plan,
    run=try_fixes,
    every=every_fix,
    pool=pool,
    progress=progress,
  )
  if tries is None:
    return Answer(findings)
  if tries.before_xla:
    return Answer(findings, not_tried=BEFORE_XLA)
  if not try_fixes:
    return Answer(findings, untried=tries.untried, not_tried=not_tried)
  why = AFTER_PASS if tries.after_pass else None
  return Answer(findings, tries.trials, tries.untried, not_tried=why)
