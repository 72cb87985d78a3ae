"""The command table: each `hloprobe` command's args record and `main`.

Private in intent: use the package, `hloprobe.commands` (`COMMANDS`).
"""

from __future__ import annotations

from hloprobe.commands import (
  bisect,
  cache,
  explain,
  golden,
  listings,
  merge,
  sweep,
  verify,
  versions,
  view,
)

__all__ = ["COMMANDS"]

# command -> (its args record, its main). The records' fields are named
# after the flags each command reads: they are the per-command flag table.
COMMANDS = {
  "sweep": (sweep.SweepArgs, sweep.main),
  "versions": (versions.VersionsArgs, versions.main),
  "bisect": (bisect.BisectArgs, bisect.main),
  "view": (view.ViewArgs, view.main),
  "explain": (explain.ExplainArgs, explain.main),
  "targets": (listings.ListingArgs, listings.main_targets),
  "cases": (listings.ListingArgs, listings.main_cases),
  "experiments": (listings.ListingArgs, listings.main_experiments),
  "golden": (golden.GoldenArgs, golden.main),
  "verify": (verify.VerifyArgs, verify.main),
  "cache": (cache.CacheArgs, cache.main),
  "merge": (merge.MergeArgs, merge.main),
}
