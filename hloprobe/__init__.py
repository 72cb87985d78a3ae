"""hloprobe: lowered-HLO inspection and fix verification for JAX/XLA matmuls.

The library API, one name per line. Importing it registers no flags and
starts no JAX backend.
"""

from __future__ import annotations

from hloprobe.canonical import canonical_hlo as canonical_hlo
from hloprobe.canonical import canonical_stablehlo as canonical_stablehlo
from hloprobe.cases import Case as Case
from hloprobe.cases import get_case as get_case
from hloprobe.dot_sites import DotFate as DotFate
from hloprobe.dot_sites import Fate as Fate
from hloprobe.dot_sites import map_dot_sites as map_dot_sites
from hloprobe.errors import GoldenError as GoldenError
from hloprobe.errors import HloParseError as HloParseError
from hloprobe.errors import HloprobeError as HloprobeError
from hloprobe.golden import Snapshot as Snapshot
from hloprobe.golden_diff import CheckResult as CheckResult
from hloprobe.hlo_parse import parse_hlo_module as parse_hlo_module
from hloprobe.numerics import ErrorStats as ErrorStats
from hloprobe.stablehlo_parse import parse_stablehlo_dots as parse_stablehlo_dots
from hloprobe.sweep import ConfigResult as ConfigResult
from hloprobe.sweep import SweepSpec as SweepSpec
from hloprobe.sweep import run_sweep as run_sweep
from hloprobe.targets import Target as Target
from hloprobe.targets import get_target as get_target

__version__ = "0.1.0"

__all__ = [
  "Case",
  "CheckResult",
  "ConfigResult",
  "DotFate",
  "ErrorStats",
  "Fate",
  "GoldenError",
  "HloParseError",
  "HloprobeError",
  "Snapshot",
  "SweepSpec",
  "Target",
  "canonical_hlo",
  "canonical_stablehlo",
  "get_case",
  "get_target",
  "map_dot_sites",
  "parse_hlo_module",
  "parse_stablehlo_dots",
  "run_sweep",
]
