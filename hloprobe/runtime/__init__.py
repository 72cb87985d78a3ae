"""The sweep's machinery, below the stages it drives.

Its modules:

  serve     a worker process's side: `Request` records and the main loop
  process   one worker process: start, call, why it died
  pool      `WorkerPool`: persistent workers per (XLA_FLAGS, lane)
  cache     `RecordCache`: finished records on disk, by key
  timing    `Stopwatch`: exclusive wall seconds per stage
  host      `host_cpu`: the CPU and the ISA XLA compiles for

`clear_caches` empties every per-process memo of the library.
"""

from __future__ import annotations

__all__ = ["clear_caches"]


def clear_caches() -> None:
  """Empties every `functools` cache of hloprobe's library code.

  There are three, each of a value that does not change while a process
  runs: a GPU target config loaded into XLA (`lowering.load_topology`), a
  ptxas binary's version (`toolchain.ptxas_version`) and the hash of
  hloprobe's own source (`cache.source_hash`). Tests that change what they
  depend on (a config file, a PATH, the source) clear them all here. The
  imports are lazy: importing `hloprobe.runtime.host` loads no JAX.
  """
  from hloprobe.compile import lowering, toolchain
  from hloprobe.runtime import cache

  for cached in (
    lowering.load_topology,
    toolchain.ptxas_version,
    cache.source_hash,
  ):
    cached.cache_clear()
