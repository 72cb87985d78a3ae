"""The sweep: every (case, target, precision, batch size) config, in order.

Its modules, in data-flow order:

  spec      what to sweep (`SweepSpec`), batch sizes, the names' checks
  compiled  one config's work in a worker (`compile_and_run`), whose
            `CompiledConfig` comes back
  measure   the main process's part: errors against float64, prediction,
            batch consistency; `run_config` does one config here
  engine    `run_sweep`: the lanes of worker processes, the cache, order
"""

from __future__ import annotations

from hloprobe.sweep.compiled import CompiledConfig as CompiledConfig
from hloprobe.sweep.compiled import compile_and_run as compile_and_run
from hloprobe.sweep.compiled import load_target as load_target
from hloprobe.sweep.engine import SweepProgress as SweepProgress
from hloprobe.sweep.engine import run_sweep as run_sweep
from hloprobe.sweep.measure import run_config as run_config
from hloprobe.sweep.spec import MAX_BATCH_SIZE as MAX_BATCH_SIZE
from hloprobe.sweep.spec import MAX_BATCH_SIZES as MAX_BATCH_SIZES
from hloprobe.sweep.spec import SweepSpec as SweepSpec
from hloprobe.sweep.spec import parse_batch_sizes as parse_batch_sizes
from hloprobe.sweep.spec import spec_from_words as spec_from_words

__all__ = [
  "MAX_BATCH_SIZE",
  "MAX_BATCH_SIZES",
  "CompiledConfig",
  "SweepProgress",
  "SweepSpec",
  "compile_and_run",
  "load_target",
  "parse_batch_sizes",
  "run_config",
  "run_sweep",
  "spec_from_words",
]
