"""`hloprobe versions --jaxlib=V1,V2,...`: the sweep under each jaxlib
release (cached venvs), one table comparing them.

Progress (venv made or reused, each worker's failure) goes to stderr, one
line at a time (`log`); the table or JSON to stdout. Exit status: 0 when
every version ran every config, 1 otherwise (a version not installed, a
worker or a config failed), 2 for bad input (InvalidArgumentError).
"""

from __future__ import annotations

import dataclasses
import sys

from hloprobe.commands import common

__all__ = ["VersionsArgs", "log", "main", "versions"]


@dataclasses.dataclass(frozen=True, slots=True)
class VersionsArgs:
  """`hloprobe versions`'s flags (each field a flag of the same name).

  Attributes:
    common: the flags every command accepts.
    jaxlib: --jaxlib releases, as given.
    changes_only: --changes_only: only configs where something changed.
    python: --python, the interpreter making every venv, or None.
    experiment, experiments_file: --experiment and --experiments_file, as
      for `sweep`: each version sweeps them beside the baseline.
  """

  common: common.SweepWords
  jaxlib: tuple[str, ...] = ()
  changes_only: bool = False
  python: str | None = None
  experiment: tuple[str, ...] = ()
  experiments_file: str | None = None


def log(line: str) -> None:
  """One progress line on stderr, "hloprobe: <line>", flushed."""
  print(f"hloprobe: {line}", file=sys.stderr, flush=True)


def versions(args: VersionsArgs, spec):
  """Runs the sweep `spec` under each --jaxlib version, up to `spec.jobs`
  at once (`versions.versions_runs`); returns their `VersionRuns` (the
  runs in --jaxlib order, `text()`, `ok`).

  Raises:
    InvalidArgumentError: no or malformed --jaxlib.
  """
  from hloprobe.versions import versions_runs

  return versions_runs(
    args.jaxlib, spec, common.venv_dir(args.common), log=log, python=args.python
  )


def main(args: VersionsArgs) -> int:
  """`hloprobe versions`: runs, prints the comparison; the exit status."""
  spec = common.sweep_spec(args.common, args.experiment, args.experiments_file)
  fmt = common.check_format(args.common)
  outcome = versions(args, spec)
  print(outcome.text(fmt, args.changes_only))
  return common.ExitStatus.OK if outcome.ok else common.ExitStatus.FAILED
