"""`hloprobe golden check` and `hloprobe golden update`.

The sweep is MANIFEST.json's, each sweep flag given on the command line
replacing its part (`golden.planned_sweep`). The report goes to stdout; exit status
0 when the goldens match (update: written), 1 when they differ or a
candidate file cannot be written (`cannot write ...`, after the comparison
is printed).
"""

from __future__ import annotations

import dataclasses

from hloprobe.commands import common
from hloprobe.engine import SweepSpec
from hloprobe.errors import InvalidArgumentError
from hloprobe.golden import (
  case_cannot_end,
  check_sweep,
  default_golden_dir,
  golden_update,
  planned_sweep,
)

__all__ = ["GoldenArgs", "cmd_check", "cmd_update", "main"]


@dataclasses.dataclass(frozen=True, slots=True)
class GoldenArgs:
  """`hloprobe golden check|update`'s words and flags.

  Attributes:
    common: the flags every command accepts.
    words: the words after `golden`: ["check"] or ["update"].
    golden_dir: --golden_dir, or None (the default folder).
    strict: --strict: compare full text across jax/jaxlib versions.
    results: --results (`check` only): a `hloprobe merge` --output_dir
      whose records are compared instead of sweeping, or None.
  """

  common: common.SweepWords
  words: tuple[str, ...] = ()
  golden_dir: str | None = None
  strict: bool = False
  results: str | None = None


def cmd_update(spec: SweepSpec, golden_dir: str) -> int:
  """Runs `spec`, rewrites the goldens (`update.golden_update`) and says
  what changed; returns 0."""
  print(golden_update(spec, golden_dir).render())
  return 0


def cmd_check(
  spec: SweepSpec,
  golden_dir: str,
  strict: bool,
  output_dir: str | None,
  results: str | None = None,
) -> int:
  """Runs `spec` (or reads its records from `results`, a `hloprobe merge`
  --output_dir) and compares with the goldens (`golden.check_sweep`: on a
  mismatch the new snapshot is written to `output_dir` or a new temporary
  folder); prints the result.

  Returns:
    0 when everything matches, else 1.

  Raises:
    HloprobeError: the candidate files cannot be written (after the
      comparison is printed).
  """
  records = None
  if results:
    from hloprobe.commands.merge import results_in

    records = results_in(results, spec)
  result, failed = check_sweep(spec, golden_dir, strict, output_dir, records)
  print(result.render())
  if failed is not None:
    raise failed
  return 0 if result.ok else 1


def main(args: GoldenArgs) -> int:
  """`hloprobe golden check|update`; returns the exit status.

  Raises:
    InvalidArgumentError: another word, or --target_config given.
  """
  if list(args.words) not in (["check"], ["update"]):
    raise InvalidArgumentError(
      f"`golden` takes one word, check or update; got {list(args.words)}; "
      "e.g. `hloprobe golden check`"
    )
  if args.common.target_config:
    raise InvalidArgumentError(
      "`golden` does not read --target_config; name config files in "
      "--targets (e.g. --targets=cpu,golden/configs/x.txtpb), as "
      "MANIFEST.json records them"
    )
  golden_dir = args.golden_dir or default_golden_dir()
  # Case code (factories, the reference) cannot end the command with a
  # status of its own (`golden.case_cannot_end`).
  with case_cannot_end(f"golden {args.words[0]}"):
    values, given = common.sweep_values(args.common)
    spec = planned_sweep(
      golden_dir,
      values,
      given,
      args.common.jobs,
      writing=args.words[0] == "update",
    )
    common.start_jax(spec.targets)
    if args.words[0] == "update":
      if args.results:
        raise InvalidArgumentError(
          "--results is for `golden check`; `golden update` sweeps"
        )
      return cmd_update(spec, golden_dir)
    return cmd_check(
      spec, golden_dir, args.strict, args.common.output_dir, args.results
    )
