"""Dot sites: each StableHLO dot_general and what XLA made of it.

The stage's interface is the names below (`__all__`): `map_dot_sites`
gives each site's `MappedSite` in an optimized module, `resolve` turns
those into `SiteFate`s (with the arithmetic each site really runs), and
`attribute_passes` names the HLO pass that rewrote each site. Import them
from here; the modules behind them are private in intent:

  dot_sites         site mapping and the fate rules
  site_fate         the records, their words and results.json's site object
  identify          matching a site to the instruction that computes it
  carrier_shapes    a carrier's outputs and K against a site's (one device's share)
  operand_ancestry  operands traced through fusions, loops and branches
  effective         the algorithm a site really runs (PTX or a rule)
  fp8_rewrite       whether the fp8 cuBLASLt rewrite fired at an fp8 site
  fp8_operands      which f8 values a site's operands come from
  collectives       a sharded program's collective adding a site's sums
  passes            which HLO pass changed a site (`--explain_passes`)
  rejection         which sites and pass a rejected compile names
"""

from __future__ import annotations

from hloprobe.sites.dot_sites import map_dot_sites as map_dot_sites
from hloprobe.sites.effective import blas_algorithm as blas_algorithm
from hloprobe.sites.effective import resolve as resolve
from hloprobe.sites.integer_rules import EXACT_INTEGER as EXACT_INTEGER
from hloprobe.sites.passes import PassAttribution as PassAttribution
from hloprobe.sites.passes import attribute_passes as attribute_passes
from hloprobe.sites.rejection import CompileFinding as CompileFinding
from hloprobe.sites.rejection import explain_rejection as explain_rejection
from hloprobe.sites.site_fate import EMITTER_KEYS as EMITTER_KEYS
from hloprobe.sites.site_fate import Fate as Fate
from hloprobe.sites.site_fate import SiteFate as SiteFate
from hloprobe.sites.site_fate import emitter_name as emitter_name
from hloprobe.sites.site_fate import fate_summary as fate_summary

__all__ = [
  "CompileFinding",
  "EMITTER_KEYS",
  "EXACT_INTEGER",
  "Fate",
  "PassAttribution",
  "SiteFate",
  "attribute_passes",
  "blas_algorithm",
  "emitter_name",
  "explain_rejection",
  "fate_summary",
  "map_dot_sites",
  "resolve",
]
