"""Comparing two configs' kernels: which kernels' per-row arithmetic
differs (the class boundaries the invariance stage prints).

Private in intent: use the package, `hloprobe.kernels`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hloprobe.kernels.records import KernelDifference, KernelRecord

__all__ = ["compare_kernels", "kernel_classes"]


def compare_kernels(
  a: Sequence[KernelRecord], b: Sequence[KernelRecord]
) -> tuple[KernelDifference, ...]:
  """The kernels whose per-row arithmetic differs between two configs.

  Kernels are matched by what they compute (role and source ops/lines),
  in schedule order; a kernel without a counterpart (XLA fused or split
  the work differently, e.g. strength reduction at n = 1) is a difference
  with the other side None. Matched kernels differ where their
  `signature`s do; the differing `arithmetic` fields are named.

  Args:
    a, b: `read_kernels` of two configs (e.g. two batch sizes of one
      program, target and precision).

  Returns:
    The differences, in a's order then b's unmatched; () when every
    row-computing kernel has an equal signature: then the two configs
    compute the same bits for a row (kernel identity).
  """
  raise NotImplementedError("compare_kernels: milestone 1 interface only")


def kernel_classes(
  configs: Mapping[int, Sequence[KernelRecord]],
) -> tuple[tuple[int, ...], ...]:
  """Batch sizes grouped into classes of kernel identity.

  Args:
    configs: batch size -> `read_kernels` of that size's config.

  Returns:
    The classes, each a sorted tuple of batch sizes whose kernels have
    pairwise no `compare_kernels` difference; classes in order of their
    smallest size. Within a class a row's bits are the same for every size.
  """
  raise NotImplementedError("kernel_classes: milestone 1 interface only")
