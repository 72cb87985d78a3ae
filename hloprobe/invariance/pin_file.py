"""The pinned-gemm autotune-results file (issue 38 item 4): one Triton
config per gemm fusion for every batch size of a compile-only GPU group
(the same block_k, split-K 1), written by the kernels stage's
`pin_gemm_configs` from compiles made in a worker of their own, then
replayed by the pin search through XLA's
`--xla_gpu_load_autotune_results_from` (as `--autotune_results` does).

The compiles run with the kernels stage's `pin_flags()` (split-K forced
to 1, the Triton softmax rewriter and dot strength reduction off): the
flags the file is replayed with, since they
change the gemm fusions it is keyed by; and with XLA's autotune-cache
VLOG on (`TF_CPP_VMODULE=autotuner_cache_interface=1`, read when XLA
loads: the workers of this file start with it), which logs the codegen
versions the file must name.

A user case's inputs (`path.py:factory`) are made in the worker that
loaded it (`in_workers.case_inputs`), never in this process; the file's
own worker loads the case again by its words, as the sweep's compile
workers do.

The file has a stable name, derived from what it pins (`pin_file_name`:
the case, target and precision, and a hash of the group's configs' cache
keys under the pin's flags, `runtime.CaseKey.config_key`), so the
`verify` command printed beside it finds it again; it is written whole
(a temporary file renamed, `ir.write_whole`) into the folder explain
gives (`--output_dir`/pins, else pins/ under the record cache's folder).

Private in intent: use the package, `hloprobe.invariance`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from collections.abc import Callable

from hloprobe.compile import compile_case, get_case
from hloprobe.engine import SweepPlan, SweptCase, worker_pool
from hloprobe.errors import first_line
from hloprobe.ir import write_whole
from hloprobe.records import RECORD_VERSION, Config
from hloprobe.runtime import Request

__all__ = ["PinFileRequest", "pin_file_name", "write_pin_file"]

_VLOG = {
  "TF_CPP_VMODULE": "autotuner_cache_interface=1",
  "TF_CPP_MIN_LOG_LEVEL": "0",
}


@dataclasses.dataclass(frozen=True)
class PinFileRequest(Request):
  """Compiles a group's configs (every n) and returns the pin file's text
  (`kernels.pin_gemm_configs`) and its key (`_file_key`), in a worker
  started with the VLOG on and the pin's flags.

  Attributes:
    configs: the group's configs, one per batch size.
    case_source: the case's words; the case is loaded here by them.
    full_inputs: the case's full inputs, made where the case may run
      (a user case's in the worker that loaded it); None for a sized case.
    inputs: the sweep's --inputs, or None.
    search_path: the sweep process's `sys.path`; its entries this worker
      lacks go in front of its own (a `module:factory` case is found).
  """

  configs: tuple[Config, ...]
  case_source: str
  full_inputs: tuple | None
  inputs: str | None = None
  search_path: tuple[str, ...] = ()

  def run(self, memo: dict) -> tuple[str, str]:
    from hloprobe import kernels

    sys.path[:0] = [p for p in self.search_path if p not in sys.path]
    case = get_case(self.case_source, self.inputs)
    full = SweptCase.resolved_inputs(self.full_inputs)
    compiled = {}
    for c in self.configs:
      Request.note_stage("compile")
      args = case.inputs_for(full, c.n)
      compiled[c.n] = compile_case(
        case, args, c.precision.jax_name, c.target, dump_passes=True
      )
    text = kernels.pin_gemm_configs(compiled, self.configs[0].target).text
    return text, _file_key(case, full, self.configs)


def _file_key(case, full_inputs: tuple | None, configs) -> str:
  """16 hex digits of sha256 over the group's configs' record-cache keys
  (`runtime.CaseKey.config_key`, under this worker's XLA_FLAGS: the
  pin's): another jax, hloprobe, case program, inputs, target, precision,
  batch sizes or flag set gives another name; the same group the same."""
  from hloprobe.runtime import CaseKey

  case_key = CaseKey.of(case, full_inputs)
  largest = max(c.n for c in configs)
  keys = [
    case_key.config_key(
      c.target,
      c.precision,
      c.n,
      largest,
      True,
      record_version=RECORD_VERSION,
      numerics=False,
    )
    for c in sorted(configs, key=lambda c: c.n)
  ]
  return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]


def pin_file_name(case: str, target: str, precision: str, key: str) -> str:
  """The pin file's name: "pin-<case>-<target>-<precision>-<key>.textproto"
  (`key`: `_file_key`'s 16 hex digits), every character but letters,
  digits, "_", "." and "-" written "_" (a target may be a config path)."""
  safe = lambda w: "".join(
    ch if ch.isalnum() or ch in "_.-" else "_" for ch in w
  )
  return f"pin-{safe(case)}-{safe(target)}-{safe(precision)}-{key}.textproto"


def write_pin_file(
  plan: SweepPlan,
  case: str,
  target: str,
  precision: str,
  folder: str,
  full_inputs: Callable[[int], tuple | None],
) -> tuple[str | None, str]:
  """Writes the pin file of one group into `folder` (made if missing), whole,
  under its stable name (`pin_file_name`); a file of that name already
  there (the same group pinned before) is replaced whole.

  Args:
    plan: the sweep's plan.
    case, target, precision: the group (names).
    folder: where the file goes.
    full_inputs: case index -> that case's full inputs
      (`in_workers.case_inputs`: a user case's made in the worker that
      loaded it).

  Returns (its path, "") or (None, why not: one line).
  """
  from hloprobe import kernels

  flags = kernels.pin_flags()
  configs = tuple(
    c
    for c in plan.configs()
    if c.config.case == case
    and c.config.target.name == target
    and str(c.config.precision) == precision
    and c.experiment.name == "baseline"
  )
  if not configs or not configs[0].config.target.compile_only:
    return None, "a pin file is for a compile-only GPU target"
  swept = configs[0].case
  try:  # a user case's made in the worker that loaded it
    full = full_inputs(configs[0].case_index)
  except Exception as e:  # the candidate is then not tried, saying why
    return None, first_line(e)
  saved = {k: os.environ.get(k) for k in _VLOG}
  os.environ.update(_VLOG)  # read by the workers as they start
  try:
    with worker_pool(plan) as pool:
      text, key = pool.call(
        PinFileRequest(
          tuple(c.config for c in configs),
          swept.source,
          full,
          plan.inputs,
          tuple(sys.path),
        ),
        " ".join(flags),
      )
  except Exception as e:  # the candidate is then not tried, saying why
    return None, first_line(e)
  finally:
    for k, v in saved.items():
      if v is None:
        os.environ.pop(k, None)
      else:
        os.environ[k] = v
  path = os.path.abspath(
    os.path.join(folder, pin_file_name(case, target, precision, key))
  )
  data = text.encode("utf-8")
  try:
    os.makedirs(folder, exist_ok=True)
    write_whole(path, lambda f: f.write(data))
  except OSError as e:
    return None, f"cannot write {path}: {e.strerror or e}"
  return path, ""
