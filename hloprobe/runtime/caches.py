"""One function that empties every per-process memo of the library.

Private in intent: use the package, `hloprobe.runtime`.
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
  from hloprobe.compile import load_topology, ptxas_version
  from hloprobe.runtime import cache

  for cached in (
    load_topology,
    ptxas_version,
    cache.source_hash,
  ):
    cached.cache_clear()
