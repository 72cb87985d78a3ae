"""Goldens: snapshots of what the compiler emits, checked and updated.

snapshot (make, read, check), format (file layout and bodies), diff (site
changes in words and unified diffs), update (atomic rewrite of golden/),
commands (`hloprobe golden check` and `update`).
"""

from __future__ import annotations

__all__: list[str] = []
