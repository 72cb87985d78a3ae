"""Compiling cases for targets: what goes into XLA and what comes out.

cases (the matmul programs), targets (CPU and compile-only GPUs from
GpuTargetConfigProto files in gpu_specs/), experiments (XLA flag sets),
toolchain (ptxas), host (the CPU and the ISA XLA compiles for), lowering (compiles and runs a case: StableHLO, optimized
HLO, PTX; the one adapter to private jaxlib API), worker (a compile in a
fresh process).
"""

from __future__ import annotations

__all__: list[str] = []
