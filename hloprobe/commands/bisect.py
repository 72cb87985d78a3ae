"""`hloprobe bisect --good=V --bad=V --require=...`: the first jaxlib
release where the requirement's verdict changes.

Progress goes to stderr (`versions.log`), the answer to stdout. Exit
status: 0 when an answer was found, 1 otherwise, 2 for bad input.
"""

from __future__ import annotations

import dataclasses

from hloprobe.commands import common
from hloprobe.commands import versions as versions_command

__all__ = ["BisectArgs", "bisect", "main"]


@dataclasses.dataclass(frozen=True, slots=True)
class BisectArgs:
  """`hloprobe bisect`'s flags (each field a flag of the same name).

  Attributes:
    common: the flags every command accepts.
    good: --good, the release with the old verdict, or None (an error).
    bad: --bad, the release with the new verdict, or None (an error).
    require: --require names, as given.
    python: --python, the interpreter making every venv, or None.
    experiment, experiments_file: --experiment and --experiments_file, as
      for `sweep`: each release sweeps them beside the baseline, and the
      requirements are judged on every config ("which release introduced
      or fixed this rewrite").
  """

  common: common.SweepWords
  good: str | None = None
  bad: str | None = None
  require: tuple[str, ...] = ("consistent", "accurate")
  python: str | None = None
  experiment: tuple[str, ...] = ()
  experiments_file: str | None = None


def bisect(args: BisectArgs):
  """Bisects the index's releases between --good and --bad
  (`versions.bisect_between`); returns its `BisectResult` (`text()`: the
  answer in words).

  The releases are those with a wheel for a Python found here (or for
  --python's), each probed under a Python it supports.

  Raises:
    InvalidArgumentError: --good or --bad missing or not a release, a
      requirement that cannot be judged on a sweep alone, or one batch
      size with "consistent".
    VenvError: the releases cannot be listed.
  """
  from hloprobe.versions import bisect_between

  spec = common.sweep_spec(args.common, args.experiment, args.experiments_file)
  return bisect_between(
    spec,
    args.good,
    args.bad,
    args.require,
    common.venv_dir(args.common),
    versions_command.log,
    args.python,
  )


def main(args: BisectArgs) -> int:
  """`hloprobe bisect`: bisects, prints the answer; the exit status."""
  result = bisect(args)
  print(result.text())
  return (
    common.ExitStatus.OK
    if result.after is not None
    else common.ExitStatus.FAILED
  )
