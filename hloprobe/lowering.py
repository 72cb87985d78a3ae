"""Lowering, compiling and running: the only module that calls jax.jit.

It is also hloprobe's one adapter to private or unstable jaxlib API
(`Compiled.runtime_executable().hlo_modules()`), used behind `hasattr`
guards.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jaxlib
import numpy as np

from hloprobe.cases import Case
from hloprobe.errors import TargetError
from hloprobe.targets import Target

__all__ = [
  "CompiledCase",
  "compile_case",
  "float64_reference",
  "run_compiled",
  "versions",
  "xla_instruction_counts",
]


@dataclasses.dataclass(frozen=True)
class CompiledCase:
  """The texts and handle of one compiled config.

  Attributes:
    stablehlo: StableHLO MLIR text with debug locations.
    optimized_hlo: optimized HLO text (`Compiled.as_text()`).
    compiled: the `jax.stages.Compiled` handle.
    compile_s: wall time of `Lowered.compile()`, in seconds.
    lower_s: wall time of trace + lower, in seconds.
  """

  stablehlo: str
  optimized_hlo: str
  compiled: jax.stages.Compiled
  compile_s: float
  lower_s: float


def versions() -> dict[str, str]:
  """jax and jaxlib versions of this process."""
  return {"jax": jax.__version__, "jaxlib": jaxlib.__version__}


def _device_for(target: Target):
  """The device a target's arguments are placed on."""
  if target.platform == "cpu":
    return jax.devices("cpu")[0]
  try:
    return jax.devices("cuda")[0]
  except RuntimeError as e:
    raise TargetError(f"target {target.name!r}: no CUDA device attached ({e})") from e


def compile_case(case: Case, args: tuple, precision: str, target: Target) -> CompiledCase:
  """Lowers and compiles `case.fn` on `args` for a target.

  Args:
    case: the case.
    args: concrete or abstract arguments (arrays or pytrees); only shapes and
      dtypes are used.
    precision: a value for `jax.default_matmul_precision`.
    target: where to compile.

  Raises:
    TargetError: the target's device is not available.
    Exception: whatever JAX/XLA raise while lowering or compiling.
  """
  device = _device_for(target)
  sharding = jax.sharding.SingleDeviceSharding(device)
  specs = jax.tree_util.tree_map(
    lambda a: jax.ShapeDtypeStruct(np.shape(a), a.dtype, sharding=sharding),
    args,
  )
  start = time.perf_counter()
  with jax.default_matmul_precision(precision):
    lowered = jax.jit(case.fn).trace(*specs).lower(
      lowering_platforms=(target.platform,)
    )
  lower_s = time.perf_counter() - start
  stablehlo = lowered.as_text(debug_info=True)
  start = time.perf_counter()
  compiled = lowered.compile()
  compile_s = time.perf_counter() - start
  return CompiledCase(stablehlo, compiled.as_text(), compiled, compile_s, lower_s)


def run_compiled(compiled: CompiledCase, args: tuple) -> tuple[np.ndarray, float]:
  """Runs a compiled config; returns its first output and the time in seconds.

  The time covers one call, including argument transfer and
  `block_until_ready`.
  """
  start = time.perf_counter()
  out = compiled.compiled(*args)
  out = jax.block_until_ready(out)
  run_s = time.perf_counter() - start
  first = jax.tree_util.tree_leaves(out)[0]
  return np.asarray(first), run_s


def float64_reference(case: Case, args: tuple) -> np.ndarray:
  """The case's first output computed in float64 on the CPU.

  Every floating input is cast to f64 and the function is run under
  `jax.enable_x64` at HIGHEST precision; returns an f64 numpy array.
  """
  with jax.enable_x64(True), jax.default_matmul_precision("highest"):
    args64 = jax.tree_util.tree_map(
      lambda a: np.asarray(a, np.float64)
      if np.issubdtype(np.asarray(a).dtype, np.floating)
      else np.asarray(a),
      args,
    )
    out = jax.jit(case.fn)(*jax.device_put(args64, jax.devices("cpu")[0]))
    return np.asarray(jax.tree_util.tree_leaves(out)[0], np.float64)


def xla_instruction_counts(compiled: CompiledCase) -> dict[str, int] | None:
  """Instruction count per computation, as XLA's own HloModule reports it.

  Uses jaxlib's private `runtime_executable().hlo_modules()`; returns None
  where this jaxlib does not offer it. For testing the text parser.
  """
  exe = compiled.compiled.runtime_executable()
  if not hasattr(exe, "hlo_modules"):
    return None
  module = exe.hlo_modules()[0]
  if not hasattr(module, "computations"):
    return None
  return {c.name: len(c.instructions()) for c in module.computations()}
