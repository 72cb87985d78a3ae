"""Batch invariance: which batch sizes give a row the same bits, what
breaks it at each class boundary, and the settings that pin it (issue 38).

The package's face. Its modules, in data-flow order:

  rows             the compared rows (row 0; an anchor row at the first,
                   a middle and the last offset) and their classes of
                   identical bits (`classes_of`)
  runs             a config's rows run in a worker on one compiled
                   executable (`RowsRequest`, `anchor_inputs`)
  kernel_identity  the per-row arithmetic of a compile-only config's
                   kernels (`RowKernel`), the `KernelReader` protocol
                   that `hloprobe.kernels` fills, and the fallback from
                   the dot sites' fates (`site_kernels`)
  answer           each group's `Invariance`: classes, basis (bits run,
                   kernel identity, unknown), boundaries and their causes
  in_workers       every runnable config's rows and every compile-only
                   config's kernels on a sweep's workers
                   (`rows_and_kernels`), and a sweep's answer
                   (`invariance_of_sweep`)
  pin_file         the kernels stage's pinned-gemm autotune-results file,
                   made from compiles in a worker of its own
  pin              the settings that pin a group, searched cheapest first
                   and each verified by a sweep (`search_pins`); a
                   sweep's answer with its pins (`batch_invariance`)

The answer in words and JSON is report's (`report/invariance_words.py`;
a boundary's causes, a kernel's arithmetic and the kernel model's why:
`report/invariance_causes.py`): this package returns records only.
"""

from __future__ import annotations

from hloprobe.invariance.answer import Invariance as Invariance
from hloprobe.invariance.answer import invariance_of as invariance_of
from hloprobe.invariance.in_workers import (
  rows_and_kernels as rows_and_kernels,
)
from hloprobe.invariance.pin import batch_invariance as batch_invariance

__all__ = [
  "Invariance",
  "batch_invariance",
  "invariance_of",
  "rows_and_kernels",
]
