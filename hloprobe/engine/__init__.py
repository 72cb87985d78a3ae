"""The sweep stage (the engine behind `hloprobe.sweep`, `hloprobe sweep`
and every command that sweeps): every (case, target, precision, batch
size) config, in order.

Its modules, in data-flow order:

  spec      what to sweep, in words (`SweepSpec`), and batch sizes
  shard     `--shard`: a deterministic, balanced part of a plan's
            configs (`spec_from_words`' `shard`), the plan's fingerprint
  plan      the words resolved once into records (`plan_sweep`,
            `spec_from_words` give a `SweepPlan`)
  compiled  one config's work in a worker (`CompileRequest`), whose
            `CompiledConfig` comes back
  measure   the main process's part: errors against float64, prediction,
            batch consistency; `run_config` does one config here;
            `check_shards`: merged shards are a plan's, whole
  executor  `worker_pool`: the workers, local or on a Ray cluster
            (--executor)
  engine    `run_sweep`: the lanes of worker processes, the cache, order
"""

from __future__ import annotations

from hloprobe.engine.compiled import KEPT as KEPT
from hloprobe.engine.engine import SweepProgress as SweepProgress
from hloprobe.engine.engine import run_sweep as run_sweep
from hloprobe.engine.executor import worker_pool as worker_pool
from hloprobe.engine.measure import check_shards as check_shards
from hloprobe.engine.plan import PlannedConfig as PlannedConfig
from hloprobe.engine.plan import SweepPlan as SweepPlan
from hloprobe.engine.plan import SweptCase as SweptCase
from hloprobe.engine.plan import plan_sweep as plan_sweep
from hloprobe.engine.plan import spec_from_words as spec_from_words
from hloprobe.engine.spec import EXECUTORS as EXECUTORS
from hloprobe.engine.spec import SweepSpec as SweepSpec
from hloprobe.engine.spec import parse_batch_sizes as parse_batch_sizes

__all__ = [
  "EXECUTORS",
  "KEPT",
  "PlannedConfig",
  "SweepPlan",
  "SweepProgress",
  "SweepSpec",
  "SweptCase",
  "check_shards",
  "parse_batch_sizes",
  "plan_sweep",
  "run_sweep",
  "spec_from_words",
  "worker_pool",
]
