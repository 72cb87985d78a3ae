"""`run`: a planned sweep run, the one call every entry point runs through.

`hloprobe sweep` and `hloprobe explain` (commands/), `hloprobe.sweep` and
`hloprobe.explain` (`calls`) and the pytest plugin run their plan here: a
case no worker can find by its words is shipped to them first (`ship`),
the workers get their environment for the sweep only
(`ship.worker_environment`), each finished config is appended to
`<output_dir>/results.jsonl` when asked, and an interrupt says how far the
sweep got (`Interrupted`). Nothing here prints; the caller passes a
progress callable (the command line's bar on a terminal).

Private in intent: use the package, `hloprobe.api`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import signal
from collections.abc import Callable, Iterator

from hloprobe.api.ship import ship, worker_environment
from hloprobe.engine import SweepPlan, SweepProgress, run_sweep
from hloprobe.records import ConfigResult
from hloprobe.report import stream_results

__all__ = ["Interrupted", "run", "shipped"]


class Interrupted(KeyboardInterrupt):
  """SIGINT or SIGTERM, raised where the program is so `finally` blocks run.

  Attributes:
    signum: the signal.
    done: the configs finished before it (`ConfigResult`s), when a sweep
      was running; None before one started.
    total: the sweep's number of configs.
  """

  def __init__(self, signum: int, done=None, total: int = 0):
    super().__init__(signum)
    self.signum, self.done, self.total = signum, done, total


def run(
  plan: SweepPlan,
  *,
  output_dir: str | None = None,
  overwrite: bool = False,
  pool=None,
  progress: Callable[[SweepProgress], None] | None = None,
) -> tuple[ConfigResult, ...]:
  """Runs the sweep `plan` (`api.plan`'s or `plan_case`'s); its records in
  the plan's order.

  Args:
    plan: the planned sweep.
    output_dir: a folder where each finished config is appended to
      results.jsonl as it finishes (`report.stream_results`), or None.
    overwrite: remove an earlier sweep's results in `output_dir` first.
    pool: the `runtime.WorkerPool` to run on (`engine.worker_pool`, e.g.
      shared with explain's fix tries), or None for the sweep's own.
    progress: called with each `engine.SweepProgress`, or None.

  Raises:
    InvalidArgumentError: `output_dir` holds an earlier sweep's results
      and not `overwrite`, or is not a folder (before anything runs).
    CaseError: a case that cannot be shipped to the workers.
    Interrupted: on SIGINT/SIGTERM (any KeyboardInterrupt), carrying the
      configs finished.
  """
  stream = stream_results(output_dir, plan.config_count, overwrite)
  try:
    with shipped(plan) as plan, worker_environment(plan):
      return tuple(run_sweep(plan, progress, on_result=stream.add, pool=pool))
  except KeyboardInterrupt as e:
    signum = getattr(e, "signum", signal.SIGINT)
    raise Interrupted(signum, stream.done, stream.total) from None


@contextlib.contextmanager
def shipped(plan: SweepPlan) -> Iterator[SweepPlan]:
  """`plan` with each case no worker can find by its words shipped to
  them (`ship`: its words then a file that loads it), for the block; the
  files removed after. A plan whose every case is portable passes
  through.

  Raises:
    CaseError: a case that cannot be shipped.
  """
  folders = []
  try:
    cases = []
    for swept in plan.cases:
      if not swept.portable:
        source, folder = ship(swept.case)
        folders.append(folder)
        swept = dataclasses.replace(swept, source=source, portable=True)
      cases.append(swept)
    yield dataclasses.replace(plan, cases=tuple(cases)) if folders else plan
  finally:
    for folder in folders:
      shutil.rmtree(folder, ignore_errors=True)
