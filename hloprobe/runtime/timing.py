"""Per-stage wall-clock timers of a sweep (`hloprobe sweep --timings`).

A `Stopwatch` sums the seconds spent in named stages. Stages nest: time
spent in an inner stage is charged to the inner one only (exclusive
times), so an emulation run while measuring the noise floor counts as
"emulation", and the stage sums add up to the time measured.

Stage names used by the sweep, in table order: `STAGES`.

Private in intent: use the package, `hloprobe.runtime`.
"""

from __future__ import annotations

import contextlib
import time

__all__ = ["STAGES", "Stopwatch", "null_stage"]

# Stages of one config, in the order the `--timings` table shows them:
#   cache       looking up / storing the config's record (--cache_dir)
#   inputs      the case's make_inputs (charged to its first config)
#   reference   float64 reference (charged to the case's first config)
#   lower       trace + lower to StableHLO
#   compile     XLA compile, PTX and pass dumps read back
#   parse       StableHLO, optimized HLO and PTX text parsed
#   sites       dot-site mapping and effective algorithms
#   passes      pass attribution (--explain_passes)
#   run         running the compiled config (CPU targets)
#   emulation   emulator traces, compiles and runs
#   noise floor f32 spread over summation orders (its emulations excluded)
#   attribution per-site shares, bands and best candidate (idem)
#   predict     the rest of the prediction
STAGES = (
  "cache",
  "inputs",
  "reference",
  "lower",
  "compile",
  "parse",
  "sites",
  "passes",
  "run",
  "emulation",
  "noise floor",
  "attribution",
  "predict",
)


class Stopwatch:
  """Sums exclusive wall seconds per stage name.

  Use `with watch.stage("parse"): ...`; `add` charges seconds measured
  elsewhere (e.g. `CompiledCase.lower_s`). Not thread-safe: one per config
  or per sweep.
  """

  def __init__(self):
    self._seconds: dict[str, float] = {}
    self._stack: list[list] = []  # [name, start, seconds in inner stages]

  def add(self, name: str, seconds: float) -> None:
    """Charges `seconds` to stage `name` (and takes them from the parent)."""
    self._seconds[name] = self._seconds.get(name, 0.0) + seconds
    if self._stack:
      self._stack[-1][2] += seconds

  @contextlib.contextmanager
  def stage(self, name: str):
    """Times the body as stage `name`, minus the inner stages' time."""
    frame = [name, time.perf_counter(), 0.0]
    self._stack.append(frame)
    try:
      yield
    finally:
      self._stack.pop()
      total = time.perf_counter() - frame[1]
      self._seconds[name] = self._seconds.get(name, 0.0) + total - frame[2]
      if self._stack:
        self._stack[-1][2] += total

  def seconds(self) -> dict[str, float]:
    """Stage name -> exclusive seconds, in `STAGES` order, then others."""
    order = {s: i for i, s in enumerate(STAGES)}
    names = sorted(self._seconds, key=lambda s: (order.get(s, len(order)), s))
    return {s: self._seconds[s] for s in names}


def null_stage(_name: str):
  """A `Stopwatch.stage` stand-in that times nothing."""
  return contextlib.nullcontext()
