"""`hloprobe bisect --good=V --bad=V --require=...`: the first jaxlib
release where the requirement's verdict changes.

Progress goes to stderr (`versions.log`), the answer to stdout. Exit
status: 0 when an answer was found, 1 otherwise, 2 for bad input.
"""

from __future__ import annotations

import dataclasses

from hloprobe.commands import common
from hloprobe.commands import versions as versions_command
from hloprobe.errors import InvalidArgumentError

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
  """Bisects the index's releases between --good and --bad; returns
  (`versions.bisect.BisectResult`, the requirements judged).

  The releases are those with a wheel for a Python found here (or for
  --python's), each probed under a Python it supports.

  Raises:
    InvalidArgumentError: --good or --bad missing or not a release, a
      requirement that cannot be judged on a sweep alone, or one batch
      size with "consistent".
    VenvError: the releases cannot be listed.
  """
  from hloprobe import verify
  from hloprobe.versions import bisect_between

  spec = common.sweep_spec(args.common, args.experiment, args.experiments_file)
  if not args.good or not args.bad:
    raise InvalidArgumentError(
      "bisect needs --good=V and --bad=V, e.g. --good=0.4.35 --bad=0.10.2"
    )
  requirements = verify.parse_requirements(",".join(args.require))
  if "golden" in requirements:
    raise InvalidArgumentError(
      "bisect judges consistent and accurate; golden files belong to one jaxlib"
    )
  verify.check_batch_sizes(requirements, spec.batch_sizes)
  result = bisect_between(
    spec,
    args.good,
    args.bad,
    requirements,
    common.venv_dir(args.common),
    versions_command.log,
    args.python,
  )
  return result, requirements


def main(args: BisectArgs) -> int:
  """`hloprobe bisect`: bisects, prints the answer; the exit status."""
  from hloprobe.versions import render_bisect

  result, requirements = bisect(args)
  print(render_bisect(result, requirements))
  return common.EXIT_OK if result.after is not None else common.EXIT_FAILED
