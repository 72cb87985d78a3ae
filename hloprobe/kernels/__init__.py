"""Kernels: the per-row arithmetic of every kernel that computes an output
row, read from one compiled config (optimized HLO with its backend
configs, and the PTX where hloprobe has it), for the batch-invariance
question (issue 38): two configs whose every row-computing kernel has the
same `signature` compute the same bits for a row.

The stage's interface is the names below (`__all__`):

  read_kernels      one compiled config -> its `KernelRecord`s
  compare_kernels   two configs' records -> the `KernelDifference`s (the
                    kernels whose per-row arithmetic differs)
  kernel_classes    batch size -> records, for many sizes -> the classes of
                    sizes whose kernels all have equal signatures
  pin_gemm_configs  the autotune-results file that pins one Triton gemm
                    config per gemm fusion for every batch size (same
                    block_k, split-K 1), with the XLA flags it needs
  PIN_FLAGS         the flags it needs (split-K 1)
  REDUCTION_PIN_FLAGS  the flags that make the Triton softmax / layernorm
                    fusions XLA row reductions, independent of the row count

The modules behind it are private in intent:

  records           KernelRecord, KernelDifference, Role, RowCount
  normalise         the row-count normalisation of computations and PTX
  gemm_rules        contractions: Triton gemm tiles, split-K, strength
                    reduction, the mma/wgmma instruction, library calls
  reduction_rules   reductions: XLA's reduction emitter and Triton
                    block-level (softmax / normalization) fusions
  kernel_reader     read_kernels (walks the ENTRY computation)
  differences       compare_kernels, kernel_classes
  autotune_pin      pin_gemm_configs

Stage: above `sites` (reads `ir` records and `sites`' kernel-emitter
names; compiles nothing but `autotune_pin`, which takes compiled configs),
below `numerics`.
"""

from __future__ import annotations

from hloprobe.kernels.autotune_pin import PIN_FLAGS as PIN_FLAGS
from hloprobe.kernels.autotune_pin import (
  REDUCTION_PIN_FLAGS as REDUCTION_PIN_FLAGS,
)
from hloprobe.kernels.autotune_pin import PinnedGemm as PinnedGemm
from hloprobe.kernels.autotune_pin import PinResults as PinResults
from hloprobe.kernels.autotune_pin import pin_gemm_configs as pin_gemm_configs
from hloprobe.kernels.differences import compare_kernels as compare_kernels
from hloprobe.kernels.differences import kernel_classes as kernel_classes
from hloprobe.kernels.kernel_reader import read_kernels as read_kernels
from hloprobe.kernels.records import KernelDifference as KernelDifference
from hloprobe.kernels.records import KernelRecord as KernelRecord
from hloprobe.kernels.records import Role as Role
from hloprobe.kernels.records import RowCount as RowCount

__all__ = [
  "KernelDifference",
  "KernelRecord",
  "PIN_FLAGS",
  "PinResults",
  "PinnedGemm",
  "REDUCTION_PIN_FLAGS",
  "Role",
  "RowCount",
  "compare_kernels",
  "kernel_classes",
  "pin_gemm_configs",
  "read_kernels",
]
