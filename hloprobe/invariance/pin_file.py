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

Private in intent: use the package, `hloprobe.invariance`.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile

from hloprobe.compile import compile_case, get_case
from hloprobe.engine import SweepPlan, worker_pool
from hloprobe.errors import first_line
from hloprobe.records import Config
from hloprobe.runtime import Request

__all__ = ["PinFileRequest", "write_pin_file"]

_VLOG = {
  "TF_CPP_VMODULE": "autotuner_cache_interface=1",
  "TF_CPP_MIN_LOG_LEVEL": "0",
}


@dataclasses.dataclass(frozen=True)
class PinFileRequest(Request):
  """Compiles a group's configs (every n) and returns the pin file's text
  (`kernels.pin_gemm_configs`), in a worker started with the VLOG on."""

  configs: tuple[Config, ...]
  case_source: str
  full_inputs: tuple | None
  inputs: str | None = None

  def run(self, memo: dict) -> str:
    from hloprobe import kernels

    case = get_case(self.case_source, self.inputs)
    compiled = {}
    for c in self.configs:
      Request.note_stage("compile")
      args = case.inputs_for(self.full_inputs, c.n)
      compiled[c.n] = compile_case(
        case, args, c.precision.jax_name, c.target, dump_passes=True
      )
    return kernels.pin_gemm_configs(compiled, self.configs[0].target).text


def write_pin_file(
  plan: SweepPlan, case: str, target: str, precision: str, folder: str
) -> tuple[str | None, str]:
  """Writes the pin file of one group into `folder` (made if missing).

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
  saved = {k: os.environ.get(k) for k in _VLOG}
  os.environ.update(_VLOG)  # read by the workers as they start
  try:
    with worker_pool(plan) as pool:
      text = pool.call(
        PinFileRequest(
          tuple(c.config for c in configs),
          swept.source,
          swept.case.full_inputs(),
          plan.inputs,
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
  os.makedirs(folder, exist_ok=True)
  fd, path = tempfile.mkstemp(
    prefix=f"pin-{case}-{target}-", suffix=".textproto", dir=folder
  )
  with os.fdopen(fd, "w", encoding="utf-8") as f:  # a fresh file, whole
    f.write(text)
  return path, ""
