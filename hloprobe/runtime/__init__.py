"""The sweep's machinery, below the stages it drives.

Its modules:

  serve     a worker process's side: `Request` records and the main loop
  process   one worker process: start, call, why it died
  pool      `WorkerPool`: persistent workers per (XLA_FLAGS, lane)
  cache     `RecordCache`: finished records on disk, by key
  caches    `clear_caches`: every per-process memo emptied
  timing    `Stopwatch`: exclusive wall seconds per stage
  host      `host_cpu`: the CPU and the ISA XLA compiles for

`clear_caches` empties every per-process memo of the library.
"""

from __future__ import annotations

from hloprobe.runtime.cache import DEFAULT_MAX_MB as DEFAULT_MAX_MB
from hloprobe.runtime.cache import RecordCache as RecordCache
from hloprobe.runtime.cache import Warn as Warn
from hloprobe.runtime.cache import case_fingerprint as case_fingerprint
from hloprobe.runtime.cache import config_key as config_key
from hloprobe.runtime.cache import default_cache_dir as default_cache_dir
from hloprobe.runtime.cache import log_warning as log_warning
from hloprobe.runtime.caches import clear_caches as clear_caches
from hloprobe.runtime.host import HostCpu as HostCpu
from hloprobe.runtime.host import host_cpu as host_cpu
from hloprobe.runtime.host import usable_cores as usable_cores
from hloprobe.runtime.pool import WorkerPool as WorkerPool
from hloprobe.runtime.pool import (
  check_environment_xla_flags as check_environment_xla_flags,
)
from hloprobe.runtime.pool import worker_xla_flags as worker_xla_flags
from hloprobe.runtime.process import WorkerError as WorkerError
from hloprobe.runtime.serve import Request as Request
from hloprobe.runtime.serve import note_stage as note_stage
from hloprobe.runtime.timing import Stopwatch as Stopwatch
from hloprobe.runtime.timing import null_stage as null_stage

__all__ = [
  "DEFAULT_MAX_MB",
  "HostCpu",
  "RecordCache",
  "Request",
  "Stopwatch",
  "Warn",
  "WorkerError",
  "WorkerPool",
  "case_fingerprint",
  "check_environment_xla_flags",
  "clear_caches",
  "config_key",
  "default_cache_dir",
  "host_cpu",
  "log_warning",
  "note_stage",
  "null_stage",
  "usable_cores",
  "worker_xla_flags",
]
