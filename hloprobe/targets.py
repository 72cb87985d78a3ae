"""Targets: where a case is compiled, and whether it can run there.

`cpu` and `gpu` (an attached CUDA GPU) compile and run. Compile-only GPU
targets (added by the target configs shipped in `hloprobe/gpu_specs`)
compile for a GPU this machine does not have.
"""

from __future__ import annotations

import dataclasses

from hloprobe.errors import TargetError

__all__ = ["Target", "BUILTIN_TARGETS", "get_target"]


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
  """A compilation target.

  Attributes:
    name: the name users type (`cpu`, `gpu`, `a100`, ...).
    platform: JAX platform to lower for: "cpu" or "cuda".
    compile_only: True when no such device is attached (no run, no
      autotuning; numerics must be predicted).
    description: one line for `hloprobe targets`.
    config_text: GpuTargetConfigProto text for compile-only targets.
    compute_capability: "8.0"-style string for GPU targets, else None.
  """

  name: str
  platform: str
  compile_only: bool
  description: str
  config_text: str | None = None
  compute_capability: str | None = None


BUILTIN_TARGETS = {
  "cpu": Target("cpu", "cpu", False, "the host CPU (compile and run)"),
  "gpu": Target("gpu", "cuda", False, "an attached CUDA GPU (compile and run)"),
}


def get_target(name: str) -> Target:
  """Looks up a target by name.

  Raises:
    TargetError: the name is unknown.
  """
  if name not in BUILTIN_TARGETS:
    raise TargetError(
      f"unknown target {name!r}; choose from {', '.join(BUILTIN_TARGETS)}"
    )
  return BUILTIN_TARGETS[name]
