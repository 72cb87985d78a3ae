"""`hloprobe targets`, `hloprobe cases` and `hloprobe experiments`: the
vocabularies, listed (`report.listings`). Exit status 0."""

from __future__ import annotations

import dataclasses

from hloprobe.commands import common

__all__ = [
  "ListingArgs",
  "main_cases",
  "main_experiments",
  "main_targets",
]


@dataclasses.dataclass(frozen=True, slots=True)
class ListingArgs:
  """A listing's flags: the common ones (`targets` reads --target_config)."""

  common: common.SweepWords


def main_targets(args: ListingArgs) -> int:
  """`hloprobe targets`: the targets, their compute capability, ptxas."""
  from hloprobe.report import listing

  print(listing("targets", list(args.common.target_config)))
  return common.ExitStatus.OK


def main_cases(args: ListingArgs) -> int:
  """`hloprobe cases`: the built-in cases and the reports they come from."""
  from hloprobe.report import listing

  del args
  print(listing("cases"))
  return common.ExitStatus.OK


def main_experiments(args: ListingArgs) -> int:
  """`hloprobe experiments`: the built-in XLA_FLAGS experiments."""
  from hloprobe.report import listing

  del args
  print(listing("experiments"))
  return common.ExitStatus.OK
