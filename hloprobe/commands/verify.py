"""`hloprobe verify [--fix=...] --require=...`: run baseline and fix, judge.

`verify` parses the fix and requirements, runs the one sweep and returns
the `verify.Verification`; `main` prints it (`report.verification`).
Without --fix the baseline itself is judged (e.g. `--require=invariant`:
is the program as it is batch-invariant?).
Exit status: 0 when every requirement passed, else 1.
"""

from __future__ import annotations

import dataclasses
import sys

from hloprobe.commands import common
from hloprobe.errors import InvalidArgumentError

__all__ = ["VerifyArgs", "main", "verify"]


@dataclasses.dataclass(frozen=True, slots=True)
class VerifyArgs:
  """`hloprobe verify`'s flags (each field a flag of the same name).

  Attributes:
    common: the flags every command accepts.
    fix: --fix, a precision or an experiment, or None: the baseline is
      judged as it is.
    require: --require names, as given.
    abs_error_bound: --abs_error_bound, or None.
    rel_error_bound: --rel_error_bound, or None.
    golden_dir: --golden_dir, or None (the default folder).
    cache_max_mb: --cache_max_mb, the records' bound in MiB.
    results: --results, a `hloprobe merge` --output_dir whose records are
      judged instead of sweeping, or None (sweep).
    executor, ray_address: --executor ("local" or "ray") and
      --ray_address (`common.with_executor`).
  """

  common: common.SweepWords
  fix: str | None = None
  require: tuple[str, ...] = ("consistent", "accurate")
  abs_error_bound: float | None = None
  rel_error_bound: float | None = None
  golden_dir: str | None = None
  cache_max_mb: int = 2048
  results: str | None = None
  executor: str = "local"
  ray_address: str | None = None


def verify(args: VerifyArgs):
  """Runs baseline and fix (without --fix, the baseline alone); returns
  the `verify.Verification`.

  Raises:
    InvalidArgumentError: a bad fix, requirement or batch sizes.
    GoldenError: the golden folder is missing or corrupt ("golden").
  """
  from hloprobe import verify as verifying

  # parse_requirements rejects an empty item and drops a repeated one.
  requirements = verifying.parse_requirements(",".join(args.require))
  common.check_format(args.common)
  spec = common.with_executor(common.sweep_spec(args.common), args)
  requirements = _without_consistent_for_modules(requirements, spec.cases)
  # Bad input is one line before JAX or any worker starts.
  verifying.parse_requirements(",".join(requirements), spec.batch_sizes)
  # No --fix: the baseline judged as it is (an empty --fix is refused).
  fix = None if args.fix is None else verifying.parse_fix(args.fix)
  common.start_jax(spec.targets)
  recorded = None
  if args.results:  # the sweep verify_fix runs, done already (sharded)
    from hloprobe.commands.shards import recorded_results

    recorded = lambda swept: recorded_results(args.results, swept)
  return verifying.verify_fix(
    spec,
    fix,
    requirements,
    golden_dir=args.golden_dir or None,
    abs_error_bound=args.abs_error_bound,
    rel_error_bound=args.rel_error_bound,
    recorded=recorded,
  )


def _without_consistent_for_modules(
  requirements: tuple[str, ...], cases: tuple[str, ...]
) -> tuple[str, ...]:
  """ "consistent" compares batch sizes; a module case runs at its one
  size. With only module cases it is dropped, said on stderr; mixed with
  other cases, or asked for alone, it is refused, so that nothing is
  dropped unseen and a verify never judges nothing.

  Raises:
    InvalidArgumentError: "consistent" with module and other cases, or
      "consistent" alone with module cases.
  """
  from hloprobe.compile import is_module_case

  if "consistent" not in requirements:
    return requirements
  modules = [c for c in cases if isinstance(c, str) and is_module_case(c)]
  if not modules:
    return requirements
  if len(modules) < len(cases) or requirements == ("consistent",):
    raise InvalidArgumentError(
      "--require=consistent compares batch sizes, which a module case "
      f"does not have ({', '.join(modules)}); verify the module cases "
      "apart, or give --require=accurate"
    )
  print(
    "verify: consistent not judged: a module case runs at its one size "
    f"({', '.join(modules)})",
    file=sys.stderr,
  )
  return tuple(r for r in requirements if r != "consistent")


def main(args: VerifyArgs) -> int:
  """`hloprobe verify`: judges, prints; returns the exit status."""
  from hloprobe.report import render_verification

  outcome = verify(args)
  print(render_verification(outcome, args.common.format))
  common.bound_cache(args.common, args.cache_max_mb)
  return common.ExitStatus.OK if outcome.passed else common.ExitStatus.FAILED
