"""The sweep's machinery, below the stages it drives.

Its modules:

  serve     a worker process's side: `Request` records and the main loop
  process   one worker process: start, call, why it died
  forked    workers forked from a server that imported jax once
  pool      `WorkerPool`: persistent workers per (XLA_FLAGS, lane)
  ray_pool  `RayPool`: the same on a Ray cluster (`--executor=ray`), one
            actor per (XLA_FLAGS, lane), each with a worker of its own
  ray_watchdog  kills a local Ray cluster when its owner ends (SIGKILL too)
  cache     `RecordCache`: finished records on disk, by key
  relocate  a record's source paths stored relative (to the case's
            folder, hloprobe's package and checkout), resolved on read
  record_file  a record's file: JSON and numpy bytes, never a pickle
  timing    `Stopwatch`: exclusive wall seconds per stage
  host      `HostCpu.of`: the CPU and the ISA XLA compiles for

The interface is `__all__`; the modules behind it are private in intent.
The record cache's names (and `record_file`'s) load on first use (PEP 562
`__getattr__`): the cache imports jax, and a worker process starts (`serve`, through this
face) before it loads JAX, so an interrupted start ends at once.
"""

from __future__ import annotations

from hloprobe.runtime.host import HostCpu as HostCpu
from hloprobe.runtime.host import usable_cores as usable_cores
from hloprobe.runtime.pool import WorkerPool as WorkerPool
from hloprobe.runtime.ray_pool import RayPool as RayPool
from hloprobe.runtime.serve import Request as Request
from hloprobe.runtime.timing import Stopwatch as Stopwatch
from hloprobe.runtime.worker_error import WorkerError as WorkerError

__all__ = [
  "CaseKey",
  "HostCpu",
  "RayPool",
  "RecordCache",
  "RecordFileError",
  "Request",
  "Stopwatch",
  "Warn",
  "WorkerError",
  "WorkerPool",
  "dump_record",
  "load_record",
  "log_warning",
  "source_hash",
  "usable_cores",
]

_CACHE_NAMES = (
  "RecordCache",
  "Warn",
  "CaseKey",
  "log_warning",
  "source_hash",
)

_RECORD_FILE_NAMES = ("RecordFileError", "dump_record", "load_record")


def __getattr__(name: str):
  """The record cache's names, on first use (see the docstring)."""
  if name in _CACHE_NAMES:
    from hloprobe.runtime import cache

    return getattr(cache, name)
  if name in _RECORD_FILE_NAMES:
    from hloprobe.runtime import record_file

    return getattr(record_file, name)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
