"""The sweep: every (case, target, precision, batch size) config, in order.

Its modules, in data-flow order:

  spec      what to sweep, in words (`SweepSpec`), and batch sizes
  shard     `--shard`: a deterministic, balanced part of a plan's
            configs (`Shard`, `parse_shard`), the plan's fingerprint
  plan      the words resolved once into records (`plan_sweep`,
            `spec_from_words` give a `SweepPlan`)
  compiled  one config's work in a worker (`CompileRequest`), whose
            `CompiledConfig` comes back
  measure   the main process's part: errors against float64, prediction,
            batch consistency; `run_config` does one config here
  executor  `worker_pool`: the workers, local or on a Ray cluster
            (--executor)
  engine    `run_sweep`: the lanes of worker processes, the cache, order
"""

from __future__ import annotations

from hloprobe.sweep.compiled import KEPT as KEPT
from hloprobe.sweep.compiled import CompiledConfig as CompiledConfig
from hloprobe.sweep.compiled import CompileRequest as CompileRequest
from hloprobe.sweep.compiled import LoadTargetRequest as LoadTargetRequest
from hloprobe.sweep.engine import SweepProgress as SweepProgress
from hloprobe.sweep.engine import run_sweep as run_sweep
from hloprobe.sweep.executor import worker_pool as worker_pool
from hloprobe.sweep.measure import run_config as run_config
from hloprobe.sweep.measure import (
  with_batch_consistency as with_batch_consistency,
)
from hloprobe.sweep.measure import (
  without_batch_consistency as without_batch_consistency,
)
from hloprobe.sweep.plan import PlannedConfig as PlannedConfig
from hloprobe.sweep.plan import SweepPlan as SweepPlan
from hloprobe.sweep.plan import SweptCase as SweptCase
from hloprobe.sweep.plan import plan_sweep as plan_sweep
from hloprobe.sweep.plan import spec_from_words as spec_from_words
from hloprobe.sweep.shard import Shard as Shard
from hloprobe.sweep.shard import parse_shard as parse_shard
from hloprobe.sweep.shard import shard_identity as shard_identity
from hloprobe.sweep.spec import EXECUTORS as EXECUTORS
from hloprobe.sweep.spec import MAX_BATCH_SIZE as MAX_BATCH_SIZE
from hloprobe.sweep.spec import MAX_BATCH_SIZES as MAX_BATCH_SIZES
from hloprobe.sweep.spec import SweepSpec as SweepSpec
from hloprobe.sweep.spec import check_nonempty as check_nonempty
from hloprobe.sweep.spec import parse_batch_sizes as parse_batch_sizes

__all__ = [
  "CompileRequest",
  "CompiledConfig",
  "EXECUTORS",
  "KEPT",
  "LoadTargetRequest",
  "MAX_BATCH_SIZE",
  "MAX_BATCH_SIZES",
  "PlannedConfig",
  "Shard",
  "SweepPlan",
  "SweepProgress",
  "SweepSpec",
  "SweptCase",
  "check_nonempty",
  "parse_batch_sizes",
  "parse_shard",
  "plan_sweep",
  "run_config",
  "run_sweep",
  "shard_identity",
  "spec_from_words",
  "with_batch_consistency",
  "without_batch_consistency",
  "worker_pool",
]
