"""Comparing two configs' kernels: which kernels' per-row arithmetic
differs (the class boundaries the invariance stage prints).

Matching: kernels are matched by what they compute, their key (role and
source lines, else role and ops), first in order among equal keys; what
is left is paired in order within a role; what is still left has no
counterpart. Kernel identity (issue 38 item 3): when every row-computing
kernel of two configs is matched with an equal `signature`, the two
configs compute the same bits for a row, because a kernel's signature holds
everything that decides a row's arithmetic (`KernelRecord.arithmetic`:
the fused computation normalised for the row count, the contraction's K
order, the reduction's order, the PTX) and the kernels read the same
values in the same dataflow (the computation digests name their inputs by
producer).

Private in intent: use the package, `hloprobe.kernels`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hloprobe.kernels.records import KernelDifference, KernelRecord

__all__ = ["compare_kernels", "kernel_classes"]


def _key(r: KernelRecord) -> tuple:
  return (r.role, r.source or r.ops)


def _match(
  a: Sequence[KernelRecord], b: Sequence[KernelRecord]
) -> list[tuple[KernelRecord | None, KernelRecord | None]]:
  pairs: list[list] = [[x, None] for x in a]
  free = list(range(len(b)))
  for p in pairs:  # same key, in order
    for j in free:
      if _key(b[j]) == _key(p[0]):
        p[1] = b[j]
        free.remove(j)
        break
  for p in pairs:  # same role, in order
    if p[1] is None:
      for j in free:
        if b[j].role == p[0].role:
          p[1] = b[j]
          free.remove(j)
          break
  return [tuple(p) for p in pairs] + [(None, b[j]) for j in free]


def compare_kernels(
  a: Sequence[KernelRecord], b: Sequence[KernelRecord]
) -> tuple[KernelDifference, ...]:
  """The kernels whose per-row arithmetic differs between two configs.

  Kernels are matched by what they compute (role and source lines), in
  schedule order (module docstring); a kernel without a counterpart (XLA
  fused or split the work differently, e.g. strength reduction at n = 1)
  is a difference with the other side None. Matched kernels differ where
  their `signature`s do; the differing `arithmetic` fields and `config`
  values are named (report words them).

  Args:
    a, b: `read_kernels` of two configs (e.g. two batch sizes of one
      program, target and precision).

  Returns:
    The differences, in a's order then b's unmatched; () when every
    row-computing kernel has an equal signature: then the two configs
    compute the same bits for a row (kernel identity).
  """
  out = []
  for x, y in _match(a, b):
    if x is None or y is None:
      out.append(KernelDifference(x, y, ()))
      continue
    if x.signature == y.signature:
      continue
    fx, fy = dict(x.arithmetic), dict(y.arithmetic)
    fields = tuple(
      (k, fx.get(k, "-"), fy.get(k, "-"))
      for k in sorted(set(fx) | set(fy))
      if fx.get(k) != fy.get(k)
    )
    cx, cy = dict(x.config), dict(y.config)
    config = tuple(
      (k, cx.get(k, "-"), cy.get(k, "-"))
      for k in sorted(set(cx) | set(cy))
      if cx.get(k) != cy.get(k) and k != "ptx"
    )
    out.append(KernelDifference(x, y, fields, config))
  return tuple(out)


def kernel_classes(
  configs: Mapping[int, Sequence[KernelRecord]],
) -> tuple[tuple[int, ...], ...]:
  """Batch sizes grouped into classes of kernel identity.

  Args:
    configs: batch size -> `read_kernels` of that size's config.

  Returns:
    The classes, each a sorted tuple of batch sizes whose kernels have no
    `compare_kernels` difference with the class's smallest size; classes
    in order of their smallest size. Within a class a row's bits are the
    same for every size (kernel identity). Signature equality is an
    equivalence, so the grouping does not depend on the order.
  """
  classes: list[list[int]] = []
  for n in sorted(configs):
    for c in classes:
      if not compare_kernels(configs[c[0]], configs[n]):
        c.append(n)
        break
    else:
      classes.append([n])
  return tuple(tuple(c) for c in classes)
