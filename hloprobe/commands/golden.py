"""`hloprobe golden check` and `hloprobe golden update`.

The sweep is MANIFEST.json's, each sweep flag given on the command line
replacing its part (`golden_spec`). The report goes to stdout; exit status
0 when the goldens match (update: written), 1 when they differ or a
candidate file cannot be written (`cannot write ...`, after the comparison
is printed).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Collection, Mapping, Sequence

from hloprobe.commands import common
from hloprobe.engine import SweepSpec
from hloprobe.errors import HloprobeError, InvalidArgumentError, write_or_fail
from hloprobe.golden import (
  case_cannot_end,
  check,
  confine_sweep,
  default_golden_dir,
  golden_update,
  manifest_sweep,
  spec_from_record,
  sweep_snapshot,
  write_snapshot,
)

__all__ = [
  "GoldenArgs",
  "cmd_check",
  "cmd_update",
  "golden_spec",
  "golden_words",
  "main",
]


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


def golden_words(
  golden_dir: str,
  flag_values: Mapping[str, Sequence],
  given: Collection[str],
) -> dict[str, tuple]:
  """The sweep in words (keys as `golden.manifest_sweep`'s): the flags
  given on the command line, the rest from MANIFEST.json.

  Args:
    golden_dir: the golden folder (its MANIFEST.json may be missing).
    flag_values: "cases", "batch_sizes" (ints), "precisions", "targets" ->
      the command line's values, defaults included.
    given: the keys of `flag_values` whose flags were on the command line;
      the others take the manifest's value when it records one.
  """
  recorded = manifest_sweep(golden_dir) or {}
  return {
    key: tuple(value if key in given or key not in recorded else recorded[key])
    for key, value in flag_values.items()
  }


def golden_spec(
  golden_dir: str,
  flag_values: Mapping[str, Sequence],
  given: Collection[str],
) -> SweepSpec:
  """`golden_words`' sweep, planned (`golden.spec_from_record`)."""
  return spec_from_record(golden_words(golden_dir, flag_values, given))


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
  --output_dir) and compares with the goldens; prints the result.

  On a mismatch the new snapshot is written to `output_dir` (or a new
  temporary folder) for a person to diff or copy.

  Returns:
    0 when everything matches, else 1.

  Raises:
    HloprobeError: the candidate files cannot be written (after the
      comparison is printed).
  """
  if results:
    from hloprobe.commands.merge import results_in
    from hloprobe.compile import jax_versions
    from hloprobe.golden import take_snapshot

    snap = take_snapshot(results_in(results, spec), jax_versions())
  else:
    snap = sweep_snapshot(spec)
  result = check(golden_dir, snap, spec, strict=strict).capped()
  if result.ok:
    print(result.render())
    return 0
  try:
    out = write_or_fail(
      "the candidate goldens", lambda: _write_candidates(snap, output_dir)
    )
  except HloprobeError:
    print(result.render())  # the comparison stands; only the copy failed
    raise
  print(dataclasses.replace(result, candidate_dir=out).render())
  return 1


def _write_candidates(snap, output_dir: str | None) -> str:
  """Writes a mismatching snapshot to `output_dir` or a new temporary folder."""
  out = output_dir or tempfile.mkdtemp(prefix="hloprobe-golden-candidate-")
  return write_snapshot(snap, out)


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
  from hloprobe.engine import check_nonempty

  # Case code (factories, the reference) cannot end the command with a
  # status of its own (`golden.case_cannot_end`).
  with case_cannot_end(f"golden {args.words[0]}"):
    values, given = common.sweep_values(args.common)
    words = golden_words(golden_dir, values, given)
    if args.words[0] == "update":  # before any case is loaded
      confine_sweep(golden_dir, words, writing=True)
    spec = check_nonempty(spec_from_record(words))
    spec = dataclasses.replace(spec, jobs=args.common.jobs)
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
