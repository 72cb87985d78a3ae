"""hloprobe: lowered-HLO inspection and fix verification for JAX/XLA matmuls.

The library API, one name per line below; each is imported on first use
(PEP 562), so `import hloprobe` registers no flags, imports no JAX and
touches no file descriptor. The command line (`hloprobe.cli`) is the only
place that silences the CUDA plugin's start-up lines on stderr.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# Public name -> the module that defines it.
_WHERE = {
  "Case": "hloprobe.compile.cases",
  "get_case": "hloprobe.compile.cases",
  "Experiment": "hloprobe.compile.experiments",
  "Target": "hloprobe.compile.targets",
  "get_target": "hloprobe.compile.targets",
  "load_target_config": "hloprobe.compile.targets",
  "Ptxas": "hloprobe.compile.toolchain",
  "find_ptxas": "hloprobe.compile.toolchain",
  "GoldenError": "hloprobe.errors",
  "HloParseError": "hloprobe.errors",
  "HloprobeError": "hloprobe.errors",
  "InvalidArgumentError": "hloprobe.errors",
  "CheckResult": "hloprobe.golden.diff",
  "Snapshot": "hloprobe.golden.snapshot",
  "golden_check": "hloprobe.golden.snapshot",
  "UpdateResult": "hloprobe.golden.update",
  "golden_update": "hloprobe.golden.update",
  "canonical_hlo": "hloprobe.ir.canonical",
  "canonical_stablehlo": "hloprobe.ir.canonical",
  "parse_hlo_module": "hloprobe.ir.hlo",
  "PtxKernel": "hloprobe.ir.ptx",
  "parse_ptx": "hloprobe.ir.ptx",
  "parse_stablehlo_dots": "hloprobe.ir.stablehlo",
  "ErrorStats": "hloprobe.numerics.accuracy",
  "emulate_case": "hloprobe.numerics.emulate",
  "make_emulator": "hloprobe.numerics.emulate",
  "Prediction": "hloprobe.numerics.predict",
  "Predictor": "hloprobe.numerics.predict",
  "TargetExplanation": "hloprobe.report.explain",
  "explain_sweep": "hloprobe.report.explain",
  "render_explanation": "hloprobe.report.explain_text",
  "SiteFate": "hloprobe.sites.dot_sites",
  "Fate": "hloprobe.sites.dot_sites",
  "map_dot_sites": "hloprobe.sites.dot_sites",
  "Compilation": "hloprobe.records",
  "Config": "hloprobe.records",
  "ConfigResult": "hloprobe.records",
  "Execution": "hloprobe.records",
  "Failure": "hloprobe.records",
  "SweepPlan": "hloprobe.sweep",
  "SweepSpec": "hloprobe.sweep",
  "plan_sweep": "hloprobe.sweep",
  "run_sweep": "hloprobe.sweep",
  "Verification": "hloprobe.verify",
  "parse_fix": "hloprobe.verify",
  "verify_fix": "hloprobe.verify",
}

__all__ = [
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
  "SiteFate",
  "Snapshot",
  "SweepPlan",
  "SweepSpec",
  "Target",
  "TargetExplanation",
  "UpdateResult",
  "Verification",
  "canonical_hlo",
  "canonical_stablehlo",
  "emulate_case",
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
  "verify_fix",
]


def __getattr__(name: str):
  """Imports `name`'s module on first use; AttributeError for other names."""
  if name not in _WHERE:
    raise AttributeError(f"module 'hloprobe' has no attribute {name!r}")
  return getattr(importlib.import_module(_WHERE[name]), name)


def __dir__() -> list[str]:
  return sorted(__all__)
