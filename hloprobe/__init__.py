"""hloprobe: lowered-HLO inspection and fix verification for JAX/XLA matmuls.

The library API, one name per line. Importing it registers no flags and
starts no JAX backend.
"""

from __future__ import annotations

from hloprobe.compile import toolchain as _toolchain

# Importing jax loads the CUDA plugin, whose libraries each log "Could not
# find cuda drivers" on a machine without one; see toolchain.quiet_startup.
with _toolchain.quiet_startup():
  import jax as _jax  # noqa: F401

from hloprobe.compile.cases import Case as Case
from hloprobe.compile.cases import get_case as get_case
from hloprobe.compile.experiments import Experiment as Experiment
from hloprobe.compile.targets import Target as Target
from hloprobe.compile.targets import get_target as get_target
from hloprobe.compile.targets import load_target_config as load_target_config
from hloprobe.compile.toolchain import Ptxas as Ptxas
from hloprobe.compile.toolchain import find_ptxas as find_ptxas
from hloprobe.errors import GoldenError as GoldenError
from hloprobe.errors import HloParseError as HloParseError
from hloprobe.errors import HloprobeError as HloprobeError
from hloprobe.golden.diff import CheckResult as CheckResult
from hloprobe.golden.snapshot import Snapshot as Snapshot
from hloprobe.ir.canonical import canonical_hlo as canonical_hlo
from hloprobe.ir.canonical import canonical_stablehlo as canonical_stablehlo
from hloprobe.ir.hlo import parse_hlo_module as parse_hlo_module
from hloprobe.ir.ptx import PtxKernel as PtxKernel
from hloprobe.ir.ptx import parse_ptx as parse_ptx
from hloprobe.ir.stablehlo import (
  parse_stablehlo_dots as parse_stablehlo_dots,
)
from hloprobe.numerics.accuracy import ErrorStats as ErrorStats
from hloprobe.numerics.emulate import emulate_case as emulate_case
from hloprobe.numerics.emulate import make_emulator as make_emulator
from hloprobe.numerics.predict import Prediction as Prediction
from hloprobe.numerics.predict import Predictor as Predictor
from hloprobe.report.explain_text import (
  render_explanation as render_explanation,
)
from hloprobe.sites.dot_sites import DotFate as DotFate
from hloprobe.sites.dot_sites import Fate as Fate
from hloprobe.sites.dot_sites import map_dot_sites as map_dot_sites
from hloprobe.sweep import ConfigResult as ConfigResult
from hloprobe.sweep import SweepSpec as SweepSpec
from hloprobe.sweep import run_sweep as run_sweep
from hloprobe.verify import Verification as Verification
from hloprobe.verify import parse_fix as parse_fix

__version__ = "0.1.0"

__all__ = [
  "Case",
  "CheckResult",
  "ConfigResult",
  "DotFate",
  "ErrorStats",
  "Experiment",
  "Fate",
  "GoldenError",
  "HloParseError",
  "HloprobeError",
  "Prediction",
  "Predictor",
  "PtxKernel",
  "Ptxas",
  "Snapshot",
  "SweepSpec",
  "Target",
  "Verification",
  "_toolchain",
  "canonical_hlo",
  "canonical_stablehlo",
  "emulate_case",
  "find_ptxas",
  "get_case",
  "get_target",
  "load_target_config",
  "make_emulator",
  "map_dot_sites",
  "parse_fix",
  "parse_hlo_module",
  "parse_ptx",
  "parse_stablehlo_dots",
  "render_explanation",
  "run_sweep",
]
