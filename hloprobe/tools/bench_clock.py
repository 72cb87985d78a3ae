"""What every benchmark of `hloprobe.tools` shares: a timed run's `Clock`
(wall and CPU seconds), one whole `hloprobe` process timed (`cli`), and
one ratio printed with its goal (`report`). `bench` and the other bench_*
tools import it; it imports none of them.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import subprocess
import sys
import time

__all__ = ["ENV", "Clock", "children_cpu", "cli", "report"]

# Compile-only GPU targets without a CUDA driver (as the command line does).
ENV = {"JAX_PLATFORMS": "cpu", "JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1"}


@dataclasses.dataclass(frozen=True)
class Clock:
  """One timed run: wall seconds, and the CPU seconds (user + system) of
  the process and every process it waited for, or None if not measured."""

  wall: float
  cpu: float | None = None

  def cores(self) -> str:
    """How many cores the run kept busy on average, e.g. "1.8 cores"."""
    return "" if self.cpu is None else f"{self.cpu / self.wall:.1f} cores"


def children_cpu() -> float:
  """CPU seconds (user + system) of this process's waited-for children."""
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


def cli(*args: str) -> Clock:
  """One whole `hloprobe` process: wall and CPU seconds (its workers in)."""
  start, cpu = time.perf_counter(), children_cpu()
  subprocess.run(
    [sys.executable, "-m", "hloprobe", *args],
    capture_output=True,
    check=True,
    env=dict(os.environ, **ENV),
  )
  return Clock(time.perf_counter() - start, children_cpu() - cpu)


def report(
  what: str, ratio: float, goal: str | None, ok: bool, detail: str
) -> None:
  """Prints one ratio with its goal (None: a figure with no goal)."""
  verdict = "met" if ok else "NOT met"
  judged = f"goal {goal}: {verdict}" if goal else "no goal"
  print(f"{what}: {ratio:.2f}x  ({judged}; {detail})", flush=True)
