"""`hloprobe golden check` and `hloprobe golden update`.

The sweep is MANIFEST.json's, each sweep flag given on the command line
replacing its part (`golden.golden_command`). The report goes to stdout; exit status
0 when the goldens match (update: written), 1 when they differ or a
candidate file cannot be written (`cannot write ...`, after the comparison
is printed).
"""

from __future__ import annotations

import dataclasses

from hloprobe.commands import common
from hloprobe.errors import InvalidArgumentError
from hloprobe.golden import golden_command

__all__ = ["GoldenArgs", "main"]


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


def main(args: GoldenArgs) -> int:
  """`hloprobe golden check|update`; returns the exit status: 0 when the
  goldens match (update: written), else 1.

  Raises:
    InvalidArgumentError: another word, or --target_config given.
    HloprobeError: the candidate files cannot be written (after the
      comparison is printed).
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
  values, given = common.sweep_values(args.common)
  recorded = None
  if args.results:  # its records, swept already (sharded, merged)
    from hloprobe.commands.shards import recorded_results

    recorded = lambda spec: recorded_results(args.results, spec)
  run = golden_command(
    args.words[0],
    args.golden_dir,
    values,
    given,
    args.common.jobs,
    strict=args.strict,
    output_dir=args.common.output_dir,
    recorded=recorded,
    start=common.start_jax,
  )
  print(run.result.render())
  if run.failed is not None:
    raise run.failed
  return 0 if run.ok else 1
