"""hloprobe: lowered-HLO inspection and fix verification for JAX/XLA matmuls.

The Python API, one name per line below (what a user calls: the sweep
and its explanation, cases and targets, the fix check, the goldens, the
errors); each is imported on first use (PEP 562), so `import hloprobe`
registers no flags, imports no JAX and touches no file descriptor. The
stages' own faces (`hloprobe.ir`, `hloprobe.compile`, ...) export what
other stages call. The command line (`hloprobe.cli`) is the only
place that silences the CUDA plugin's start-up lines on stderr.

`hloprobe.sweep(f, x, ...)` and `hloprobe.explain(f, x, ...)` are the
Python API (`hloprobe.api`): plain functions. The sweep stage's package
is `hloprobe.engine` (`from hloprobe.engine import SweepSpec`).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# Public name -> the stage face (or top-level module) that exports it, or
# the module behind a face defining a name only the Python API exports.
_WHERE = {
  "Results": "hloprobe.api.results",
  "as_case": "hloprobe.api.calls",
  "explain": "hloprobe.api.calls",
  "sweep": "hloprobe.api.calls",
  "CASES": "hloprobe.compile",
  "Case": "hloprobe.compile",
  "get_case": "hloprobe.compile",
  "get_target": "hloprobe.compile",
  "SweepSpec": "hloprobe.engine",
  "Verification": "hloprobe.verify.outcome",
  "verify_fix": "hloprobe.verify",
  "golden_check": "hloprobe.golden.snapshot",
  "golden_update": "hloprobe.golden.update",
  "HloprobeError": "hloprobe.errors",
  "InvalidArgumentError": "hloprobe.errors",
}

__all__ = [
  "CASES",
  "Case",
  "HloprobeError",
  "InvalidArgumentError",
  "Results",
  "SweepSpec",
  "Verification",
  "as_case",
  "explain",
  "get_case",
  "get_target",
  "golden_check",
  "golden_update",
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
