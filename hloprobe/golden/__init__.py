"""Goldens: snapshots of what the compiler emits, checked and updated.

The stage's interface is the names below (`__all__`): a sweep's records
against the golden folder (`against_goldens`: their snapshot compared
with it, a `CheckResult`, or written over it, an `UpdateResult`;
`hloprobe.golden_check` and `hloprobe.golden_update`, the Python API's,
sweep first); `hloprobe golden check|update` as one call
(`golden_command`: the manifest's sweep narrowed by the flags, checked or
written); the dot sites' changes between two summaries, compilations
or results.json configs (`GoldenSiteChange.between`, `of_compilations`,
`of_results_json`). Import them from here; the modules
behind them are private in intent:

  snapshot  make, write and check snapshots
  folder    the golden folder, its files and MANIFEST.json
  format    file names, headers, bodies and the manifest's text
  diff      dot summaries, site changes in words, unified diffs
  update    the atomic rewrite of golden/
  lock      the lock an update holds
  ending    case code cannot end a golden command (os._exit, sys.exit)

(`hloprobe golden check` and `update` are `hloprobe.commands.golden`.)

"""

from __future__ import annotations

from hloprobe.golden.diff import GoldenSiteChange as GoldenSiteChange
from hloprobe.golden.update import against_goldens as against_goldens
from hloprobe.golden.update import golden_command as golden_command

__all__ = [
  "GoldenSiteChange",
  "against_goldens",
  "golden_command",
]
