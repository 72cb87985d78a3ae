"""hloprobe from Python: `sweep` and `explain` on a function and its
example arguments (or a `Case`), returning `Results`.

  answering  explain's answer (findings, fixes tried or listed): the one
           call `hloprobe explain` and `hloprobe.explain` share
  calls    `sweep`, `explain`, `as_case` (a function as a `Case`),
           `plan_case` (`sweep`'s first half) and their one keyword list
           (`SweepOptions`)
  running  `run`: a plan's sweep, streamed to a folder on request; the
           one run the command line, `sweep` and the pytest plugin share
           (`Interrupted` says how far it got)
  results  `Results`: records, `.table()`, `.to_dataframe()`, HTML
  ship     a case's way to the worker processes, and their environment
  planning `plan`: a sweep in the command line's words (what commands/
           turn their flags into, then `run`)
  defaults the one table of defaults (`DEFAULTS`) the command line, the
           Python API and the pytest plugin share

`hloprobe.sweep(...)` and `hloprobe.explain(...)` are these (see
`hloprobe/__init__.py`).
"""

from __future__ import annotations

from hloprobe.api.answering import answer as answer
from hloprobe.api.calls import plan_case as plan_case
from hloprobe.api.defaults import DEFAULTS as DEFAULTS
from hloprobe.api.planning import plan as plan
from hloprobe.api.running import Interrupted as Interrupted
from hloprobe.api.running import run as run

__all__ = [
  "DEFAULTS",
  "Interrupted",
  "answer",
  "plan",
  "plan_case",
  "run",
]
