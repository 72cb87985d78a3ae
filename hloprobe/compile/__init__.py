"""Compiling cases for targets: what goes into XLA and what comes out.

cases (the matmul programs; the built-ins a read-only mapping), targets
(CPU and compile-only GPUs from GpuTargetConfigProto files in gpu_specs/),
experiments (XLA flag sets), toolchain (ptxas), lowering (compiles and runs
a case: StableHLO, optimized HLO, PTX; the one adapter to private jaxlib
API). Worker processes, the record cache, the stopwatch and host detection
are `hloprobe.runtime`.
"""

from __future__ import annotations

__all__: list[str] = []
