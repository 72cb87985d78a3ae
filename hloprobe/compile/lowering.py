"""Lowering, compiling and running a case: the only module that compiles one.

The private jaxlib API it needs (`Compiled.runtime_executable().
hlo_modules()`, `jax._src.lib.cuda_path`, the `jax._src.xla_bridge` logger)
comes through `hloprobe.private_api`, the one adapter to it.

Compile-only GPU targets (checked on jaxlib 0.10.2 and 0.12.0.1 with the
jax-cuda12-plugin of the same version, no CUDA driver): the target's GpuTargetConfigProto text goes to
`jax.experimental.topologies.get_topology_desc(name, "cuda",
target_config=TEXT, topology="1x1x1")`; arguments are `ShapeDtypeStruct`s
placed on the topology's device; `.trace(...).lower(lowering_platforms=
("cuda",)).compile(compiler_options=...)` then compiles without a GPU.
A config newer than the installed proto fails with "Failed to parse
GpuTargetConfigProto"; the field protobuf rejected is named only in its log
on stderr, so `placement.load_topology` captures that log, drops the field and tries
again, recording what it dropped. Every GPU compile passes
`xla_gpu_cuda_data_dir` (the nvidia-cuda-nvcc-cu12 wheel, see `toolchain`)
and `xla_dump_to` (a temporary folder) so the kernels' PTX comes back.

Sharded cases (`Case.mesh_shape`, N devices): `placement` gives the
target's first N devices (a compile-only GPU's topology "1x1xN") and each
argument's `NamedSharding`; the output's goes to `jax.jit`.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import logging
import os
import tempfile
import time
from unittest import mock

import jax
import numpy as np

from hloprobe import private_api, startup
from hloprobe.compile import compat, cudnn, placement, toolchain
from hloprobe.compile.autotune_replay import LoadedResults, loaded_results
from hloprobe.compile.cases import Case
from hloprobe.compile.placement import LoadedTopology, load_topology
from hloprobe.compile.targets import Target
from hloprobe.errors import ToolchainError, TraceError, first_line

__all__ = [
  "CompiledCase",
  "LoadedTopology",
  "compile_case",
  "start_backends",
  "load_topology",
  "lower_case",
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
    ptx: the text of each PTX file XLA dumped (GPU targets; empty on CPU).
      For reading instruction flavours, not a stable artifact.
    ptxas: the ptxas that built the kernels (GPU targets), else None.
    dropped_config_fields: target-config fields the installed proto did
      not know and hloprobe removed, e.g. ("GpuDeviceInfoProto.mem_clock_ghz",).
    device_kind: the device XLA compiled for, e.g. "NVIDIA A100-SXM4-40GB".
    compute_capability: that device's, e.g. "8.0", where JAX states it
      (attached CUDA devices); else None.
    xla_log: what XLA wrote to stderr while compiling a GPU target.
    pass_dumps: with `dump_passes`, (file name, HLO text) of every module
      XLA dumped after a pass that changed it, in file-name order.
    compile_notes: what hloprobe changed to get a compile-only target's
      compile through (`compat.deviceless_retry_options`), one sentence
      each; () when nothing was.
    autotune: with `compile_case(..., xla_flags=...)`, the autotune
      results file the compile loaded where it is keyed by the target's
      device (`LoadedResults`: its `selection` and
      `fusion_selections(pass_dumps)` say who chose the gemm fusions);
      else None.
  """

  stablehlo: str
  optimized_hlo: str
  compiled: jax.stages.Compiled
  compile_s: float
  lower_s: float
  ptx: tuple[str, ...] = ()
  ptxas: toolchain.Ptxas | None = None
  dropped_config_fields: tuple[str, ...] = ()
  device_kind: str | None = None
  compute_capability: str | None = None
  xla_log: str = ""
  pass_dumps: tuple[tuple[str, str], ...] = ()
  compile_notes: tuple[str, ...] = ()
  autotune: LoadedResults | None = None

  def run(self, args: tuple) -> tuple[tuple[np.ndarray, ...], float]:
    """Runs the compiled config on `args` (the arguments it was compiled
    for, `Case.inputs_for`); returns its output leaves and the time in s.

    The leaves are numpy arrays in `jax.tree_util.tree_leaves` order. The
    time covers one call, including argument transfer and
    `block_until_ready`. A compile-only target's handle cannot run (XLA
    raises).
    """
    start = time.perf_counter()
    out = self.compiled(*args)
    out = jax.block_until_ready(out)
    run_s = time.perf_counter() - start
    return tuple(np.asarray(x) for x in jax.tree_util.tree_leaves(out)), run_s


def start_backends(platforms: str | None) -> None:
  """Chooses JAX's platforms and starts its backends, without start-up noise.

  Args:
    platforms: a `jax_platforms` value such as "cpu" (compile-only GPU
      targets need no CUDA backend: the plugin still compiles for them), or
      None to leave JAX's own choice (needed for an attached GPU).

  Must run before anything else starts a backend; process-wide by nature,
  so only the command line calls it.
  """
  if platforms is not None:
    jax.config.update("jax_platforms", platforms)
  # Without a GPU, JAX logs the CUDA plugin's failure with a traceback;
  # configs on `gpu` then fail with one line each, which is enough.
  bridge = logging.getLogger(private_api.XLA_BRIDGE_LOGGER)
  level = bridge.level
  bridge.setLevel(logging.CRITICAL)
  try:
    with startup.quiet_startup():
      jax.devices()
  finally:
    bridge.setLevel(level)


def compile_case(
  case: Case,
  args: tuple,
  precision: str,
  target: Target,
  dump_passes: bool = False,
  xla_flags: str | None = None,
) -> CompiledCase:
  """Lowers and compiles `case.fn` on `args` for a target.

  Args:
    case: the case.
    args: concrete or abstract arguments (arrays or pytrees); only shapes and
      dtypes are used.
    precision: a value for `jax.default_matmul_precision`.
    target: where to compile.
    dump_passes: also have XLA dump the module after every pass
      (`xla_dump_to` + `xla_dump_hlo_pass_re=.*` as this compile's own debug
      options, so no other compile is affected) into `pass_dumps`.
    xla_flags: the whole XLA_FLAGS this process's XLA runs under, as the
      caller knows them (a worker's: `engine.CompileRequest.xla_flags`,
      the user's words then the experiment's; XLA reads them once, as the
      process starts: xla/debug_options_flags.cc). Given, the autotune
      results file they load (`--xla_gpu_load_autotune_results_from`,
      `autotune_replay.loaded_results`) is kept in `autotune` where it is
      keyed by the target's device (the passes are then dumped too: the
      fusions' keys are read from the config assigner's input), and they
      decide a compile-only retry (`compat.deviceless_retry_options`).
      None: no autotune results are read, and the retry reads this
      process's environment's XLA_FLAGS (callers outside the sweep engine).

  Raises:
    TargetError: the target's device is not available, or its config cannot
      be loaded.
    ToolchainError: the ptxas XLA found cannot build for the target's GPU,
      or jax found no cuDNN library to trace cuDNN attention with.
    TraceError: the case's function raised while jax traced it.
    Exception: whatever JAX/XLA raise while lowering or compiling.
  """
  loaded = None
  if xla_flags is not None:
    loaded = loaded_results(xla_flags, target)
    dump_passes = dump_passes or loaded is not None
  start = time.perf_counter()
  lowered, devices = lower_case(case, args, precision, target)
  lower_s = time.perf_counter() - start
  device = devices[0]
  stablehlo = compat.stablehlo_text(lowered)
  if target.platform != "cuda":
    compiled, compile_s, extras = _compile_cpu(lowered, dump_passes)
  else:
    compiled, compile_s, extras = _compile_gpu(
      lowered, target, device, dump_passes, len(devices), xla_flags
    )
  optimized = extras.pop("optimized_hlo")
  return CompiledCase(
    stablehlo,
    optimized,
    compiled,
    compile_s,
    lower_s,
    **extras,
    autotune=loaded,
  )


def lower_case(
  case: Case, args: tuple, precision: str, target: Target
) -> tuple[jax.stages.Lowered, list]:
  """Traces and lowers `case.fn` on `args` for a target (no compile).

  Args:
    case, args, precision, target: as `compile_case` takes them.

  Returns:
    (the `jax.stages.Lowered`, the devices its arguments are placed on:
    one, or a sharded case's `device_count`).

  Raises:
    TargetError: the target has fewer devices than the case needs.
    CaseError: the case's `in_specs` do not fit its arguments.
    ToolchainError: jax found no cuDNN library to trace cuDNN attention
      with (`cudnn.missing_cudnn_message`).
    TraceError: the case's function raised while jax traced it.
    Exception: whatever JAX raises while lowering.
  """
  # A program that shards itself (a Mesh it builds, with_sharding_constraint
  # inside jit, jit(in_shardings=...), shard_map) gets its arguments
  # uncommitted, placed as it asks (jax-ml/jax#20694's form); any other
  # keeps them on the target's first device, as before.
  own = 1
  if target.platform == "cpu" or target.compile_only:
    own = placement.own_mesh_devices(case, args)
  devices = placement.devices_for(target, max(own, case.device_count))
  shardings, out_sharding = placement.shardings(case, args, devices)
  if own > 1:  # uncommitted: the program places them on its own mesh
    shardings = (None,) * len(args)
  specs = tuple(
    jax.tree_util.tree_map(
      lambda a, s=s: jax.ShapeDtypeStruct(np.shape(a), a.dtype, sharding=s),
      arg,
    )
    for arg, s in zip(args, shardings)
  )
  jitted = (
    jax.jit(case.fn)
    if out_sharding is None
    else jax.jit(case.fn, out_shardings=out_sharding)
  )
  # A program that builds its own Mesh from `jax.devices()` builds it on
  # the compile-only target's N devices here, as on N GPUs it would.
  own_devices = (
    mock.patch.object(jax, "devices", lambda *a, **k: list(devices))
    if own > 1 and target.platform == "cuda"
    else contextlib.nullcontext()
  )
  with jax.default_matmul_precision(precision), own_devices:
    try:
      return compat.lower(jitted, specs, target.platform), devices
    except (RuntimeError, TraceError) as e:  # no cuDNN for cuDNN attention
      cause = e.__cause__ if isinstance(e, TraceError) else e
      if (missing := cudnn.missing_cudnn_message(cause)) is None:
        raise
      raise ToolchainError(missing) from None


def _pass_dump_options(dump_dir: str) -> dict[str, str]:
  return {"xla_dump_to": dump_dir, "xla_dump_hlo_pass_re": ".*"}


def _read_pass_dumps(dump_dir: str) -> tuple[tuple[str, str], ...]:
  names = sorted(
    n for n in os.listdir(dump_dir) if ".after_" in n and n.endswith(".txt")
  )
  return tuple((n, _read(os.path.join(dump_dir, n))) for n in names)


def _compile_cpu(lowered, dump_passes: bool) -> tuple:
  """(Compiled, compile seconds, CompiledCase fields) of a CPU compile."""
  with tempfile.TemporaryDirectory(prefix="hloprobe-dump-") as dump_dir:
    options = _pass_dump_options(dump_dir) if dump_passes else None
    start = time.perf_counter()
    compiled = lowered.compile(compiler_options=options)
    compile_s = time.perf_counter() - start
    dumps = _read_pass_dumps(dump_dir) if dump_passes else ()
    optimized = compat.optimized_hlo_text(compiled, None)
  return compiled, compile_s, {"pass_dumps": dumps, "optimized_hlo": optimized}


# XLA options that make a GPU compile dump each kernel's PTX into
# `xla_dump_to`. jaxlib 0.10.2 dumps the PTX with `xla_dump_to` alone;
# jaxlib 0.11.2 (seen on an H200 with CUDA 13, 2026-11-30, by
# .ci/gpu-ptx-probe.py) dumps only the HLO unless `xla_dump_emitter_re`
# matches "ptx" (".*", "llvm", "triton", "gpu" and "kernel" were tried too:
# only ".*" and "ptx" give the *.ptx files). An XLA that does not know the
# option compiles without it (`_try_compile`).
_PTX_DUMP_OPTIONS = {"xla_dump_emitter_re": "ptx"}


def _gpu_compiler_options(target: Target, dump_dir: str) -> dict[str, str]:
  """XLA options of a GPU compile: pinned ptxas, target's own, PTX dump.

  The PTX-dump options come last: a target's own `xla_dump_to` or
  `xla_dump_emitter_re` would move or filter the dump the PTX is read from
  (the folder is hloprobe's temporary one, removed after the compile).
  """
  options = {}
  wheel = toolchain.nvcc_wheel_dir()
  if wheel is not None:
    options["xla_gpu_cuda_data_dir"] = wheel
  options.update(target.compiler_options or {})
  options.update({"xla_dump_to": dump_dir, **_PTX_DUMP_OPTIONS})
  return options


def _compile_gpu(
  lowered,
  target: Target,
  device,
  dump_passes: bool,
  devices: int = 1,
  xla_flags: str | None = None,
) -> tuple:
  """Compiles for CUDA with the PTX dumped; ptxas failures name the ptxas.
  `xla_flags`: as `compile_case` takes them.

  Returns (Compiled, compile seconds, CompiledCase fields).
  """
  with tempfile.TemporaryDirectory(prefix="hloprobe-dump-") as dump_dir:
    options = _gpu_compiler_options(target, dump_dir)
    if dump_passes:
      options.update(_pass_dump_options(dump_dir))
    cuda_dir = options.get("xla_gpu_cuda_data_dir", private_api.cuda_path())
    ptxas = toolchain.find_ptxas(cuda_dir)
    start = time.perf_counter()
    with startup.captured_stderr() as log:
      compiled, error, notes = _try_compile(
        lowered, options, target.compile_only, xla_flags
      )
    compile_s = time.perf_counter() - start
    if error is not None:
      wrapped = _compile_error(target, ptxas, error, log[0])
      if wrapped is error:
        raise error
      raise wrapped from error
    optimized = compat.optimized_hlo_text(compiled, dump_dir)
    ptx_files = sorted(glob.glob(os.path.join(dump_dir, "*.ptx")))
    ptx = tuple(_read(p) for p in ptx_files)
    dumps = _read_pass_dumps(dump_dir) if dump_passes else ()
  loaded = None
  if target.compile_only:
    loaded = load_topology(target.name, target.config_text, devices)
  return (
    compiled,
    compile_s,
    {
      "ptx": ptx,
      "ptxas": ptxas,
      "dropped_config_fields": loaded.dropped_fields if loaded else (),
      "device_kind": getattr(device, "device_kind", None),
      "compute_capability": getattr(device, "compute_capability", None),
      "xla_log": startup.filter_startup_noise(log[0]),
      "pass_dumps": dumps,
      "optimized_hlo": optimized,
      "compile_notes": notes,
    },
  )


def _try_compile(
  lowered, options: dict, deviceless: bool, xla_flags: str | None = None
) -> tuple:
  """(Compiled, None, notes), or (None, the JaxRuntimeError, notes).

  Asked again, at most once each: a compile-only target's compile that
  XLA cannot do without a device, with the options
  `compat.deviceless_retry_options` gives for `xla_flags` (None: this
  process's environment's; its sentence goes into `notes`); and an XLA that does not know one of `_PTX_DUMP_OPTIONS`
  (`compat.unknown_compile_option`), without it.
  """
  notes: list[str] = []
  if xla_flags is None:
    xla_flags = os.environ.get("XLA_FLAGS", "")
  while True:
    try:
      return lowered.compile(compiler_options=options), None, tuple(notes)
    except compat.runtime_error_type() as e:
      retry = (
        compat.deviceless_retry_options(e, xla_flags)
        if deviceless and not notes
        else None
      )
      unknown = compat.unknown_compile_option(e)
      if retry is not None:
        options = {**options, **retry[0]}
        notes.append(retry[1])
      elif unknown in _PTX_DUMP_OPTIONS and unknown in options:
        options = {k: v for k, v in options.items() if k != unknown}
      else:
        return None, e, tuple(notes)


def _read(path: str) -> str:
  with open(path, encoding="utf-8", errors="replace") as f:
    return f.read()


def _compile_error(
  target: Target, ptxas, error: BaseException, log: str
) -> Exception:
  """A one-line error; ptxas failures become ToolchainError naming it."""
  text = first_line(error, with_type=False).rstrip(".")
  if "ptxas" not in text and "ptxas" not in log:
    return error
  sm = f"sm_{(target.compute_capability or '?').replace('.', '')}"
  return ToolchainError(
    f"target {target.name!r} ({sm}): ptxas {ptxas or 'not found'} cannot "
    f"build its kernels: {text}. hloprobe uses the nvidia-cuda-nvcc-cu12 "
    "wheel's ptxas when it is installed"
  )


def xla_instruction_counts(compiled: CompiledCase) -> dict[str, int] | None:
  """Instruction count per computation, as XLA's own HloModule reports it.

  Uses jaxlib's private `runtime_executable().hlo_modules()`
  (`private_api.xla_instruction_counts`); returns None where this jaxlib
  does not offer it. For testing the text parser.
  """
  return private_api.xla_instruction_counts(compiled.compiled)
