"""Kernels: the per-row arithmetic of every kernel that computes an output
row, read from one compiled config (optimized HLO with its backend
configs, and the PTX where hloprobe has it), for the batch-invariance
question (issue 38): two configs whose every row-computing kernel has the
same `signature` compute the same bits for a row.

The stage's interface is the names below (`__all__`):

  read_kernels      one compiled config -> its `KernelRecord`s (each with
                    the output leaves it reaches; `target=` gives a
                    compile-only target's SM count)
  compare_kernels   two configs' records -> the `KernelDifference`s (the
                    kernels whose per-row arithmetic differs)
  kernel_classes    batch size -> records, for many sizes -> the classes of
                    sizes whose kernels all have equal signatures
  pin_gemm_configs  the autotune-results file that pins one Triton gemm
                    config per gemm fusion for every batch size (same
                    block_k, split-K 1), with the XLA flags it needs
  pin_flags         the XLA flags the file is made and replayed with:
                    split-K 1 (`autotune_pin.PIN_FLAGS`), the Triton
                    softmax / layernorm fusions as XLA row reductions,
                    independent of the row count (`REDUCTION_PIN_FLAGS`),
                    and dot strength reduction off

The modules behind it are private in intent:

  records           KernelRecord, KernelDifference, Role, RowCount,
                    RowCountWhy (the rule behind a RowCount, as data)
  normalise         the row-count normalisation of computations and PTX
  gemm_rules        contractions: Triton gemm tiles, split-K, strength
                    reduction, the mma/wgmma instruction, library calls
  reduction_rules   reductions: XLA's reduction emitter and Triton
                    block-level (softmax / normalization) fusions
  kernel_reader     read_kernels (walks the ENTRY computation)
  fp_contract       the multiplies feeding an add or subtract in a kernel
                    (`KernelRecord.contractible`: a possible fma)
  differences       compare_kernels, kernel_classes
  autotune_pin      pin_gemm_configs

Typical use (one program, target and precision, several batch sizes):

  from hloprobe import compile, kernels
  c = compile.compile_case(case, args_n, precision, target)
  records[n] = kernels.read_kernels(
      c.optimized_hlo, n, c.ptx, target=target)
  classes = kernels.kernel_classes(records)      # ((1,), (2, 8), (64,))
  for d in kernels.compare_kernels(records[8], records[64]):
    d.fields  # (("split_k", "1", "2"), ...): the differing arithmetic
              # (`hloprobe.report` words it: "... split_k 1 -> 2")

Measured on issue 38's model (tests/testdata/kernels; compile-only a100,
float32): classes (1,) (2, 8) (64,) on jaxlib 0.12.0.1 and 0.10.2; n = 1
is dot strength reduction (multiply+reduce, XLA's column reduction) and
XLA row reductions for the layernorm; n = 64 is block_k 64 -> 128 at both
gemms, split-K 2 at the second, num_warps 2 -> 4 in the Triton softmax and
another float dataflow in the Triton layernorm (output tile 1x32 ->
1x256). The pin file with `PIN_FLAGS` makes both gemms sign equal for
every n = 2..64; with `REDUCTION_PIN_FLAGS` too, the layernorm and
softmax are XLA row reductions and the kernels sign equal within two
classes over n = 2..64 (2, 3 and n divisible by 4; the others); checked at
n = 8 against 9, they differ only in the softmax sum kernel's PTX float
dataflow (it loads the row maximum again instead of keeping it in a
register), which the signature cannot prove equal (`compare_kernels`
says so: every rule field equal, same bits likely, not proven).

Stage: above `sites` (reads `ir` records and `sites`' kernel-emitter
names; compiles nothing but `autotune_pin`, which takes compiled configs),
below `numerics`.
"""

from __future__ import annotations

from hloprobe.kernels.autotune_pin import pin_flags as pin_flags
from hloprobe.kernels.autotune_pin import pin_gemm_configs as pin_gemm_configs
from hloprobe.kernels.differences import compare_kernels as compare_kernels
from hloprobe.kernels.kernel_reader import read_kernels as read_kernels

__all__ = [
  "compare_kernels",
  "pin_flags",
  "pin_gemm_configs",
  "read_kernels",
]
