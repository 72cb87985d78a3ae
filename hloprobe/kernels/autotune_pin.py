"""The pin: an autotune-results file that gives every gemm fusion one
Triton config for every batch size, and the XLA flags it needs.

Private in intent: use the package, `hloprobe.kernels`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from hloprobe.compile import Target, triton_pin
from hloprobe.errors import TargetError

__all__ = [
  "PIN_FLAGS",
  "REDUCTION_PIN_FLAGS",
  "PinResults",
  "PinnedGemm",
  "pin_flags",
  "pin_gemm_configs",
]

# Split-K is decided by XLA's `splitk-rewriter` HLO pass before the config
# assigner reads autotune results (jaxlib 0.12.0.1), so a results file
# cannot pin it; the flag does (positive: force that split count).
PIN_FLAGS = ("--xla_gpu_experimental_force_split_k=1",)
# The reductions' pin: without XLA's Triton softmax rewriter (pass
# "triton-softmax-rewriter", xla/backends/gpu/transforms/
# softmax_rewriter_triton.cc) the layernorm and softmax of issue 38's model
# become XLA reduction-emitter row reductions (kInput fusions) at every n,
# whose order within a row does not depend on the row count
# (`reduction_rules`), instead of Triton fusions whose tile and num_warps
# the cost model picks per shape. Measured on jaxlib 0.12.0.1, compile-only
# a100, n = 8 and 64 (tests/testdata/kernels/record_pin.py).
REDUCTION_PIN_FLAGS = ("--xla_disable_hlo_passes=triton-softmax-rewriter",)
# Dot strength reduction off: at n = 1 it turns a gemm into a
# multiply+reduce (XLA's column reduction), which the file cannot pin.
_NO_DSR = "dot-strength-reduction"


def pin_flags() -> tuple[str, ...]:
  """The XLA flags a pin file is made and replayed with: `PIN_FLAGS`
  (split-K 1), `REDUCTION_PIN_FLAGS` (the Triton softmax rewriter off) and
  dot strength reduction off, the passes in one
  `--xla_disable_hlo_passes` (XLA keeps the last of a repeated flag:
  xla/debug_options_flags.cc parses flags in order, each setting the
  field; jaxlib 0.10.2 and 0.12.0.1).

  E.g. ("--xla_gpu_experimental_force_split_k=1",
  "--xla_disable_hlo_passes=triton-softmax-rewriter,dot-strength-reduction").
  """
  flags = (*PIN_FLAGS, *REDUCTION_PIN_FLAGS)
  passes = [f.split("=", 1)[1] for f in flags if "disable_hlo_passes" in f]
  others = [f for f in flags if "disable_hlo_passes" not in f]
  passes.append(_NO_DSR)
  return (*others, f"--xla_disable_hlo_passes={','.join(passes)}")


# A nested gemm's K tile, on its dot (`gemm_rules.block_k`).
_BLOCK_K_RE = re.compile(r'dot\(.*backend_config=\{"sizes":\["(\d+)"\]\}')


@dataclasses.dataclass(frozen=True, slots=True)
class PinnedGemm:
  """One gemm fusion of one batch size, and the config the file gives it.

  Attributes:
    batch_size: n.
    fusion: the gemm fusion's name as the config assigner sees it.
    hlo_fingerprint: its autotune key (`compile.GemmFusionKey`).
    block_m, block_n, block_k, num_stages, num_warps: the Triton config.
  """

  batch_size: int
  fusion: str
  hlo_fingerprint: str
  block_m: int
  block_n: int
  block_k: int
  num_stages: int
  num_warps: int


@dataclasses.dataclass(frozen=True, slots=True)
class PinResults:
  """The pin file's text and what it pins.

  Attributes:
    text: an `xla.autotuner.AutotuneCache` text file
      (`compile.triton_pin`), for `--autotune_results`.
    gemms: what it pins, per batch size and fusion.
    xla_flags: the XLA flags to run it with (`PIN_FLAGS` and the caller's
      `extra_flags`).
  """

  text: str
  gemms: tuple[PinnedGemm, ...]
  xla_flags: tuple[str, ...]


def pin_gemm_configs(
  compiled: Mapping[int, object],
  target: Target,
  block_m: int = 16,
  block_n: int = 16,
  block_k: int | None = None,
  num_stages: int = 1,
  num_warps: int = 2,
  extra_flags: tuple[str, ...] = (),
) -> PinResults:
  """Autotune results pinning one Triton config per gemm fusion for every n.

  Args:
    compiled: batch size -> that size's compile for `target` (a
      `compile_case` result: its optimized_hlo, pass_dumps and xla_log),
      made with `dump_passes=True` under `PIN_FLAGS` and every other flag
      the file will be replayed with (e.g. `REDUCTION_PIN_FLAGS`): the gemm
      fusions' keys are taken as they enter XLA's config assigner, and
      other flags change the fusions and with XLA's autotune-cache
      VLOG on (`TF_CPP_VMODULE=autotuner_cache_interface=1` before XLA
      loads: the codegen versions are logged only).
    target: the compile-only GPU target (its config keys the file).
    block_m, block_n, num_stages, num_warps: the config every fusion gets
      (they do not change a row's arithmetic; small tiles compile for
      every n).
    extra_flags: the other XLA flags the compiles were made with and the
      file is to be replayed with (e.g. `REDUCTION_PIN_FLAGS`); they are
      returned in `xla_flags` after `PIN_FLAGS`.
    block_k: the K tile; None: the smallest block_k XLA chose for any gemm
      fusion at any n (read from the optimized HLO), capped at each
      fusion's K.

  Returns:
    The file's text, what it pins (every `__triton_gemm` fusion of every
    n; fusions of equal key share one entry), and the flags.

  Raises:
    TargetError: a compile lacks codegen versions or pass dumps (jaxlib
      0.10.2 has no config-assigner pass), or the target is not
      compile-only.
  """
  if not target.compile_only or target.config_text is None:
    raise TargetError(
      f"target {target.name!r} is not a compile-only GPU target: an "
      "attached GPU autotunes itself"
    )
  if not compiled:
    raise TargetError("no compiled configs to pin")
  if block_k is None:
    found = [
      int(k)
      for c in compiled.values()
      for k in _BLOCK_K_RE.findall(c.optimized_hlo)
    ]
    block_k = min(found) if found else 32
  pin = triton_pin(
    compiled,
    target.config_text,
    block_m,
    block_n,
    block_k,
    num_stages,
    num_warps,
  )
  gemms = [
    PinnedGemm(
      n,
      key.name,
      key.hlo_fingerprint,
      block_m,
      block_n,
      block_k,
      num_stages,
      num_warps,
    )
    for n, key in pin.fusions
  ]
  return PinResults(pin.text, tuple(gemms), PIN_FLAGS + tuple(extra_flags))
