"""`runtime.clear_caches` empties every functools cache of the library."""

from __future__ import annotations

import functools
import os
import re

import testutil
from absl.testing import absltest

from hloprobe.compile import lowering, toolchain
from hloprobe.runtime import cache
from hloprobe.runtime.caches import clear_caches

_CACHED = (lowering.load_topology, toolchain.ptxas_version, cache.source_hash)


class ClearCachesTest(absltest.TestCase):
  def test_every_cache_is_emptied(self):
    cache.source_hash()
    toolchain.ptxas_version("/no/such/ptxas")
    self.assertGreater(cache.source_hash.cache_info().currsize, 0)
    clear_caches()
    self.assertEqual([f.cache_info().currsize for f in _CACHED], [0, 0, 0])

  def test_it_knows_every_cache_of_the_library(self):
    # A new functools cache in library code must be cleared there too.
    found = set()
    package = os.path.join(testutil.ROOT, "hloprobe")
    for dirpath, _, files in os.walk(package):
      for name in files:
        if name.endswith(".py"):
          with open(os.path.join(dirpath, name), encoding="utf-8") as f:
            text = f.read()
          found |= set(
            re.findall(
              r"@functools\.(?:lru_)?cache\b.*\ndef (\w+)", text, re.MULTILINE
            )
          )
    self.assertEqual(found, {f.__name__ for f in _CACHED})
    self.assertTrue(
      all(isinstance(f, functools._lru_cache_wrapper) for f in _CACHED)
    )


if __name__ == "__main__":
  absltest.main()
