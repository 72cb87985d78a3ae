"""`read_kernels`: every row-computing kernel of one compiled config.

Private in intent: use the package, `hloprobe.kernels`.
"""

from __future__ import annotations

from collections.abc import Sequence

from hloprobe.ir import HloModule
from hloprobe.kernels.records import KernelRecord

__all__ = ["read_kernels"]


def read_kernels(
  optimized_hlo: str | HloModule,
  row_count: int,
  ptx: Sequence[str] = (),
  platform: str = "cuda",
) -> tuple[KernelRecord, ...]:
  """The kernels of one compiled config that compute output rows.

  Walks the ENTRY computation in XLA's schedule order and makes one
  `KernelRecord` per instruction that launches arithmetic: fusions (Triton
  gemm, Triton block-level, XLA's reduction / loop emitters), gemm and
  other library custom calls, lone dots / reduces / reduce-windows /
  elementwise ops, and collectives that add partial sums (sharded
  programs). Instructions that only move or relabel values (parameter,
  constant, bitcast, copy, reshape, transpose, tuple, get-tuple-element,
  slice, broadcast, ...) make none: they do not change a row's bits.

  Args:
    optimized_hlo: the optimized HLO text (`CompiledCase.optimized_hlo`,
      `Compiled.as_text()`) or its parsed `HloModule`, backend configs
      included.
    row_count: the batch size n the config was compiled for (the number
      of rows of the batched output); > 0. Shapes' dimensions equal to n are
      written "N" in signatures (a dimension XLA dropped at n = 1 stays
      dropped: an n = 1 kernel of another rank signs differently).
    ptx: the PTX files of that compile (`CompiledCase.ptx`; empty on CPU,
      or where XLA dumped none: jaxlib 0.12 needs `xla_dump_emitter_re`).
      Without a kernel's PTX, its instruction and `ptx` fields read
      "not read: no PTX for <kernel>".
    platform: "cuda" (rules of XLA:GPU) or "cpu" (XLA:CPU: fusions are
      read from the HLO alone; no tiling is known).

  Returns:
    The records, in schedule order.

  Raises:
    ValueError: row_count < 1.
    HloParseError: the text is not an HLO module.
  """
  raise NotImplementedError("read_kernels: milestone 1 interface only")
