"""The `--timings` table: where a sweep's wall time went, per config.

One row per config with the exclusive seconds of each stage
(`timing.STAGES`, recorded in `ConfigResult.timings`), then a row of
stage sums over the whole sweep. A config whose record came from the
cache shows only its "cache" time.

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

from hloprobe.records import ConfigResult
from hloprobe.report import tables
from hloprobe.runtime import Stopwatch

__all__ = ["render_timings", "stage_sums"]


def stage_sums(results: list[ConfigResult]) -> dict[str, float]:
  """Stage name -> seconds summed over `results`, in `timing.STAGES` order."""
  watch = Stopwatch()
  for r in results:
    for stage, seconds in r.timings.items():
      watch.add(stage, seconds)
  return watch.seconds()


def render_timings(results: list[ConfigResult], fmt: str = "table") -> str:
  """A table of per-config stage seconds and the sweep's sums.

  Args:
    results: a sweep's records.
    fmt: "markdown" for a GitHub table, else plain.

  Returns:
    The table text; columns are the stages any config spent time in, then
    "total" (seconds, 2 decimals).
  """
  sums = stage_sums(results)
  stages = list(sums)
  rows = []
  for r in results:
    cells = [f"{r.timings[s]:.2f}" if s in r.timings else "" for s in stages]
    total = sum(r.timings.values())
    c = r.config
    rows.append(
      [
        c.experiment,
        c.case,
        c.target.name,
        str(c.n),
        c.precision,
        *cells,
        f"{total:.2f}",
      ]
    )
  rows.append(
    [
      "all",
      "",
      "",
      "",
      "",
      *(f"{sums[s]:.2f}" for s in stages),
      f"{sum(sums.values()):.2f}",
    ]
  )
  headers = ["experiment", "case", "target", "n", "precision", *stages]
  return tables.table(rows, [*headers, "total"], fmt)
