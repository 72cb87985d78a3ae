"""hloprobe: lowered-HLO inspection and fix verification for JAX/XLA matmuls.

The library API, one name per line below; each is imported on first use
(PEP 562), so `import hloprobe` registers no flags, imports no JAX and
touches no file descriptor. The command line (`hloprobe.cli`) is the only
place that silences the CUDA plugin's start-up lines on stderr.

`hloprobe.sweep(f, x, ...)` and `hloprobe.explain(f, x, ...)` are the
Python API (`hloprobe.api`): plain functions. The sweep stage's package
is `hloprobe.engine` (`from hloprobe.engine import SweepSpec`).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# Public name -> the stage face (or top-level module) that exports it.
_WHERE = {
  "CASES": "hloprobe.compile",
  "Case": "hloprobe.compile",
  "get_case": "hloprobe.compile",
  "Experiment": "hloprobe.compile",
  "Target": "hloprobe.compile",
  "get_target": "hloprobe.compile",
  "load_target_config": "hloprobe.compile",
  "Ptxas": "hloprobe.compile",
  "find_ptxas": "hloprobe.compile",
  "GoldenError": "hloprobe.errors",
  "HloParseError": "hloprobe.errors",
  "HloprobeError": "hloprobe.errors",
  "InvalidArgumentError": "hloprobe.errors",
  "CheckResult": "hloprobe.golden",
  "Snapshot": "hloprobe.golden",
  "golden_check": "hloprobe.golden",
  "UpdateResult": "hloprobe.golden",
  "golden_update": "hloprobe.golden",
  "canonical_hlo": "hloprobe.ir",
  "canonical_stablehlo": "hloprobe.ir",
  "parse_hlo_module": "hloprobe.ir",
  "PtxKernel": "hloprobe.ir",
  "parse_ptx": "hloprobe.ir",
  "parse_stablehlo_dots": "hloprobe.ir",
  "ErrorStats": "hloprobe.numerics",
  "emulate_case": "hloprobe.numerics",
  "make_emulator": "hloprobe.numerics",
  "Prediction": "hloprobe.numerics",
  "Predictor": "hloprobe.numerics",
  "TargetExplanation": "hloprobe.report",
  "explain_sweep": "hloprobe.report",
  "render_explanation": "hloprobe.report",
  "SiteFate": "hloprobe.sites",
  "Fate": "hloprobe.sites",
  "map_dot_sites": "hloprobe.sites",
  "Compilation": "hloprobe.records",
  "Config": "hloprobe.records",
  "ConfigResult": "hloprobe.records",
  "Execution": "hloprobe.records",
  "Failure": "hloprobe.records",
  "SweepPlan": "hloprobe.engine",
  "SweepSpec": "hloprobe.engine",
  "plan_sweep": "hloprobe.engine",
  "run_sweep": "hloprobe.engine",
  "Results": "hloprobe.api",
  "sweep": "hloprobe.api",
  "as_case": "hloprobe.api",
  "explain": "hloprobe.api",
  "Verification": "hloprobe.verify",
  "parse_fix": "hloprobe.verify",
  "verify_fix": "hloprobe.verify",
}

__all__ = [
  "CASES",
  "Case",
  "CheckResult",
  "Compilation",
  "Config",
  "ConfigResult",
  "ErrorStats",
  "Execution",
  "Experiment",
  "Failure",
  "Fate",
  "GoldenError",
  "HloParseError",
  "HloprobeError",
  "InvalidArgumentError",
  "Prediction",
  "Predictor",
  "PtxKernel",
  "Ptxas",
  "Results",
  "SiteFate",
  "Snapshot",
  "SweepPlan",
  "SweepSpec",
  "Target",
  "TargetExplanation",
  "UpdateResult",
  "Verification",
  "as_case",
  "canonical_hlo",
  "canonical_stablehlo",
  "emulate_case",
  "explain",
  "explain_sweep",
  "find_ptxas",
  "get_case",
  "get_target",
  "golden_check",
  "golden_update",
  "load_target_config",
  "make_emulator",
  "map_dot_sites",
  "parse_fix",
  "parse_hlo_module",
  "parse_ptx",
  "parse_stablehlo_dots",
  "plan_sweep",
  "render_explanation",
  "run_sweep",
  "sweep",
  "verify_fix",
]


def __getattr__(name: str):
  """Imports `name`'s module on first use; AttributeError for other names."""
  if name not in _WHERE:
    raise AttributeError(f"module 'hloprobe' has no attribute {name!r}")
  return getattr(importlib.import_module(_WHERE[name]), name)


def __dir__() -> list[str]:
  return sorted(__all__)
