"""Compiling cases for targets: what goes into XLA and what comes out.

cases (the matmul programs; the built-ins a read-only mapping), targets
(CPU and compile-only GPUs from GpuTargetConfigProto files in gpu_specs/),
experiments (XLA flag sets), toolchain (ptxas), placement (compile-only
topologies, device lists, a sharded case's mesh and shardings), lowering
(compiles and runs a case: StableHLO, optimized HLO, PTX), autotune
(autotune results for compile-only targets: keys, files), rejections (a config XLA rejected, compiled again with its passes
dumped). Worker processes, the record cache, the stopwatch and host detection
are `hloprobe.runtime`.
"""

from __future__ import annotations

from hloprobe.compile.autotune import triton_pin as triton_pin
from hloprobe.compile.autotune_replay import selection_note as selection_note
from hloprobe.compile.autotune_replay import (
  sweep_experiments as sweep_experiments,
)
from hloprobe.compile.builtin_cases import CASES as CASES
from hloprobe.compile.case_model import Case as Case
from hloprobe.compile.case_model import ReportedError as ReportedError
from hloprobe.compile.cases import absolute_case_word as absolute_case_word
from hloprobe.compile.cases import get_case as get_case
from hloprobe.compile.cases import resolvable_elsewhere as resolvable_elsewhere
from hloprobe.compile.compat import JAXPR_API as JAXPR_API
from hloprobe.compile.compat import jaxlib_release as jaxlib_release
from hloprobe.compile.cudnn import (
  missing_cudnn_message as missing_cudnn_message,
)
from hloprobe.compile.experiments import BASELINE as BASELINE
from hloprobe.compile.experiments import (
  BUILTIN_EXPERIMENTS as BUILTIN_EXPERIMENTS,
)
from hloprobe.compile.experiments import Experiment as Experiment
from hloprobe.compile.int_dots import INT32_DOTS_FIX as INT32_DOTS_FIX
from hloprobe.compile.lowering import compile_case as compile_case
from hloprobe.compile.lowering import start_backends as start_backends
from hloprobe.compile.module_case import is_module_case as is_module_case
from hloprobe.compile.module_files import (
  optimized_module as optimized_module,
)
from hloprobe.compile.module_files import (
  unknown_custom_calls as unknown_custom_calls,
)
from hloprobe.compile.placement import load_topology as load_topology
from hloprobe.compile.rejections import Rejection as Rejection
from hloprobe.compile.rejections import missing_lowering as missing_lowering
from hloprobe.compile.targets import Target as Target
from hloprobe.compile.targets import get_target as get_target
from hloprobe.compile.targets import is_config_path as is_config_path
from hloprobe.compile.targets import target_listing as target_listing

__all__ = [
  "BASELINE",
  "BUILTIN_EXPERIMENTS",
  "CASES",
  "Case",
  "Experiment",
  "INT32_DOTS_FIX",
  "JAXPR_API",
  "Rejection",
  "ReportedError",
  "Target",
  "absolute_case_word",
  "compile_case",
  "get_case",
  "get_target",
  "is_config_path",
  "is_module_case",
  "jaxlib_release",
  "load_topology",
  "missing_cudnn_message",
  "missing_lowering",
  "optimized_module",
  "resolvable_elsewhere",
  "selection_note",
  "start_backends",
  "sweep_experiments",
  "target_listing",
  "triton_pin",
]
