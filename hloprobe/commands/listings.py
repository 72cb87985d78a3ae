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
  from hloprobe.report import (
    targets_listing,
  )

  print(targets_listing(list(args.common.target_config)))
  return common.EXIT_OK


def main_cases(args: ListingArgs) -> int:
  """`hloprobe cases`: the built-in cases and the reports they come from."""
  from hloprobe.report import (
    cases_listing,
  )

  del args
  print(cases_listing())
  return common.EXIT_OK


def main_experiments(args: ListingArgs) -> int:
  """`hloprobe experiments`: the built-in XLA_FLAGS experiments."""
  from hloprobe.report import (
    experiments_listing,
  )

  del args
  print(experiments_listing())
  return common.EXIT_OK
