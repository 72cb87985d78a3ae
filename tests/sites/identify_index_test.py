"""`identify`'s carrier index (issue 37: a 12-layer model's sites were each
matched against every carrier of every pass dump read, sites x carriers).

The index must give, per site, what the scan of every carrier gave (the
oracle is the scan itself, `identify._matches` and `merged_part_fits` on
each carrier): checked on every recorded compile of both jaxlib releases
(attention, FP8, convolution, merged-dot, control-flow fixtures) and on
every recorded pass dump. And a deep stack's sites are matched looking at
a number of carriers linear in its sites, not their product with the
carriers: counted on a real CPU compile.
"""

from __future__ import annotations

import os
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import recorded
from absl.testing import absltest

from hloprobe.ir import is_attention_target
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.sites import dot_sites, identify
from hloprobe.sites.operand_ancestry import find_carriers
from hloprobe.sites.site_fate import Fate

_SITES_DATA = os.path.join(os.path.dirname(__file__), "testdata")


def _recorded_modules():
  """(label, stablehlo text, HLO texts) of every recorded compile: the
  optimized HLO of tests/testdata/compiles and of testdata/dot_merger, and
  every pass dump of testdata/passes."""
  for name in sorted(os.listdir(recorded.COMPILES)):
    for release in recorded.RELEASES:
      folder = os.path.join(recorded.COMPILES, name, f"jaxlib{release}")
      if os.path.isdir(folder):
        rec = recorded.load(name, release)
        yield f"{name} {release}", rec.stablehlo, [rec.optimized_hlo]
  merger = os.path.join(_SITES_DATA, "dot_merger")
  for hlo in sorted(f for f in os.listdir(merger) if f.endswith(".hlo")):
    stem = hlo.removesuffix(".hlo")
    yield stem, _read(merger, f"{stem}.stablehlo.mlir"), [_read(merger, hlo)]
  passes = os.path.join(_SITES_DATA, "passes")
  for name in sorted(os.listdir(passes)):
    folder = os.path.join(passes, name)
    if not os.path.isdir(folder):
      continue
    dumps = sorted(f for f in os.listdir(folder) if f.startswith("module_"))
    yield (
      name,
      _read(folder, "stablehlo.mlir"),
      [_read(folder, "optimized.hlo")] + [_read(folder, d) for d in dumps],
    )


def _read(folder: str, name: str) -> str:
  with open(os.path.join(folder, name), encoding="utf-8") as f:
    return f.read()


class RecordedIndexTest(absltest.TestCase):
  def test_index_gives_the_scan_of_every_carrier(self):
    modules = matched = merged = attention = 0
    for label, stablehlo, texts in _recorded_modules():
      sites = parse_stablehlo_dots(stablehlo)
      for text in texts:
        carriers = find_carriers(parse_hlo_module(text))
        index = identify._CarrierIndex(carriers)
        modules += 1
        for site in sites:
          scan = [
            i for i, c in enumerate(carriers) if identify._matches(site, c)
          ]
          fits = [
            i
            for i, c in enumerate(carriers)
            if identify.merged_part_fits(site, c)
          ]
          self.assertEqual(index.matching(site), scan, (label, site.index))
          self.assertEqual(index.merged(site), fits, (label, site.index))
          matched += bool(scan)
          merged += bool(fits)
          attention += bool(scan) and is_attention_target(site.op)
        for i, c in enumerate(carriers):
          self.assertEqual(index.position(c), i, label)
    # The fixtures exercise every list the index keeps.
    self.assertGreater(modules, 100)
    self.assertGreater(matched, 100)
    self.assertGreater(merged, 0)
    self.assertGreater(attention, 0)


def _stack(x, ws):
  """x @ w_0 @ w_1 ... with a tanh between: one dot site per weight."""
  for w in ws:
    x = jnp.tanh(x @ w)
  return x


@pytest.mark.compiles
class LinearMatchingTest(absltest.TestCase):
  def test_carriers_looked_at_are_linear_in_sites(self):
    layers = 24
    x = np.ones((4, 32), np.float32)
    ws = [np.full((32, 32), 1.0 / (i + 1), np.float32) for i in range(layers)]
    lowered = jax.jit(_stack).lower(x, ws)
    sites = parse_stablehlo_dots(lowered.as_text(debug_info=True))
    module = parse_hlo_module(lowered.compile().as_text())
    self.assertLen(sites, layers)
    carriers = find_carriers(module)
    self.assertGreaterEqual(len(carriers), layers)
    with (
      mock.patch.object(
        identify, "_matches", wraps=identify._matches
      ) as matches,
      mock.patch.object(
        identify, "merged_part_fits", wraps=identify.merged_part_fits
      ) as fits,
    ):
      fates = dot_sites.map_dot_sites(sites, module)
    # Every site found, each its own dot (the scan's answer: one dot of
    # the site's weight per site).
    self.assertEqual([f.fate for f in fates], [Fate.DOT] * layers)
    self.assertLen({f.carriers for f in fates}, layers)
    # A scan per site looked at sites x carriers (576 here) with each.
    self.assertLessEqual(matches.call_count + fits.call_count, layers)


if __name__ == "__main__":
  absltest.main()
