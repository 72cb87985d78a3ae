"""The one table of defaults every entry point sweeps with.

The command line (`cli_flags`: each flag's default), the Python API
(`hloprobe.sweep`, `hloprobe.explain`) and the pytest plugin (through the
API) take their defaults from `DEFAULTS`, so one sweep asked the same way
from any of them is the same sweep.

Private in intent: use the package, `hloprobe.api`.
"""

from __future__ import annotations

import dataclasses

from hloprobe.ir import DEFAULT_PRECISIONS
from hloprobe.runtime import RecordCache, usable_cores

__all__ = ["DEFAULTS", "Defaults"]


@dataclasses.dataclass(frozen=True, slots=True)
class Defaults:
  """What a sweep does where the caller does not say.

  Attributes:
    targets: target names: the host CPU only.
    precisions: matmul precision names: the seed report's (bfloat16,
      tensorfloat32, float32).
    batch_sizes: the command line's batch sizes, as its words ("1-9");
      a function from Python defaults to 1, 2 and its example's rows,
      those that exist (its rows are its full size).
    cache_max_mb: the record cache's bound, MiB.
    case_timeout_s: seconds one worker call of a user case may take
      (`sweep.SweepSpec.case_timeout_s`).
    only: the one question `explain` answers alone, or None: every one.
      "invariance": the batch-invariance answer with no accuracy numerics
      (`engine.SweepSpec.numerics` False; `hloprobe explain
      --only=invariance`, `hloprobe.explain(..., only="invariance")`).
    invariance: `explain`'s batch-invariance answer: "answer" (which
      batch sizes give row 0 and an anchor row the same bits), "off"
      (`hloprobe explain --invariance`, `hloprobe.explain(...,
      invariance=...)`); the command line also takes "pin".
  """

  targets: tuple[str, ...] = ("cpu",)
  precisions: tuple[str, ...] = tuple(DEFAULT_PRECISIONS)
  batch_sizes: str = "1-9"
  cache_max_mb: int = RecordCache.DEFAULT_MAX_MB
  case_timeout_s: float = 600.0
  only: str | None = None
  invariance: str = "answer"

  @staticmethod
  def jobs() -> int:
    """Worker processes at once: the cores this process may use
    (`runtime.usable_cores`: its CPU affinity). The Python API took
    min(os.cpu_count(), 64) before; the command line's rule is the one."""
    return usable_cores()

  @staticmethod
  def cache_dir() -> str:
    """The record cache: $XDG_CACHE_HOME/hloprobe or ~/.cache/hloprobe."""
    return RecordCache.default_dir()


DEFAULTS = Defaults()
