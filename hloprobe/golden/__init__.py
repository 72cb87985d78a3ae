"""Goldens: snapshots of what the compiler emits, checked and updated.

The stage's interface is the names below (`__all__`): a sweep's
`Snapshot` (`take_snapshot`), compared with the golden folder (`check`:
a `CheckResult`; `hloprobe.golden_check` is the Python API's) or written
over it (`golden_update`: an `UpdateResult`); `hloprobe golden`'s sweep (`planned_sweep`: the
manifest's, narrowed by the flags) and its check (`check_sweep`); the dot
summary and its changes in words. Import them from here; the modules
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

from hloprobe.golden.diff import SUMMARY_KEYS as SUMMARY_KEYS
from hloprobe.golden.diff import GoldenSiteChange as GoldenSiteChange
from hloprobe.golden.diff import describe_site_changes as describe_site_changes
from hloprobe.golden.diff import dot_summary as dot_summary
from hloprobe.golden.ending import case_cannot_end as case_cannot_end
from hloprobe.golden.folder import default_golden_dir as default_golden_dir
from hloprobe.golden.folder import sweep_record as sweep_record
from hloprobe.golden.snapshot import check as check
from hloprobe.golden.snapshot import check_sweep as check_sweep
from hloprobe.golden.snapshot import planned_sweep as planned_sweep
from hloprobe.golden.snapshot import take_snapshot as take_snapshot
from hloprobe.golden.update import golden_update as golden_update
from hloprobe.golden.update import update_goldens as update_goldens

__all__ = [
  "GoldenSiteChange",
  "SUMMARY_KEYS",
  "case_cannot_end",
  "check",
  "check_sweep",
  "default_golden_dir",
  "describe_site_changes",
  "dot_summary",
  "golden_update",
  "planned_sweep",
  "sweep_record",
  "take_snapshot",
  "update_goldens",
]
