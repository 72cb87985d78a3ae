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


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Dropped:
  """The SIGINT/SIGTERM handler once one of them was raised as an
  `Interrupted`: later signals are dropped (the clean-up, e.g. ending
  worker processes, is not interrupted again) and the first's number is
  kept, for `Interrupted.after`."""

  def __init__(self, signum: int):
    self.signum = signum

  def __call__(self, signum, frame) -> None:
    del signum, frame


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

  @classmethod
  def raise_for(cls, signum: int) -> None:
    """For a SIGINT/SIGTERM handler: raises `Interrupted(signum)`, and from
    then on both signals are dropped by a handler that keeps `signum` (for
    `after`).

    Raises:
      Interrupted: always.
    """
    for s in _SIGNALS:
      signal.signal(s, _Dropped(signum))
    raise cls(signum)

  @classmethod
  def after(
    cls, e: BaseException, done=None, total: int = 0
  ) -> Interrupted | None:
    """The interrupt behind `e`, carrying `done` of `total` configs: `e`'s
    signal when it is a KeyboardInterrupt (SIGINT when it names none);
    when `raise_for` ran before `e`, its signal, for C code may have
    swallowed the `Interrupted` the handler raised and raised another
    exception instead; else None (`e` is no interrupt).

    The handler runs between any two bytecodes, also inside Python code
    that C code calls: matplotlib 3.10's Agg renderer converts a path's
    transform with `py::array_t<double>::ensure`, which clears the
    `Interrupted` and raises "ValueError: Invalid affine transformation
    matrix" (seen on a SIGTERM while `sweep` wrote its HTML page's plot,
    2026-12-06).
    """
    if isinstance(e, KeyboardInterrupt):
      return cls(getattr(e, "signum", signal.SIGINT), done, total)
    handler = signal.getsignal(signal.SIGINT)
    if isinstance(handler, _Dropped):
      return cls(handler.signum, done, total)
    return None


def run(
  plan: SweepPlan,
  *,
  output_dir: str | None = None,
  overwrite: bool = False,
  pool=None,
  progress: Callable[[SweepProgress], None] | None = None,
  lanes_done: Callable[[Callable[[int], tuple | None]], None] | None = None,
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
    lanes_done: called once the sweep's workers are free, with case index
      -> its inputs as they were sent (`engine.run_sweep`'s), or None.

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
      return tuple(
        run_sweep(plan, progress, stream.add, pool=pool, lanes_done=lanes_done)
      )
  except BaseException as e:
    if (stop := Interrupted.after(e, stream.done, stream.total)) is None:
      raise
    raise stop from None


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
