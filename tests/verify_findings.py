"""Findings made by hand (`verify.Finding` of the seed on a compile-only
target, a distance `ratio` beyond an f32 noise floor of 1e-4), shared by
tests/verify/findings_test.py and tests/verify/candidates_test.py; and
batch-invariance answers made by hand (`group`: an `invariance.Invariance`
record), shared by the report and invariance tests."""

from __future__ import annotations

import math

from hloprobe import invariance, verify
from hloprobe.invariance.answer import (
  Boundary,
  SiteChange,
  SiteChanges,
  SiteMade,
)
from hloprobe.invariance.rows import ROW0, RowClasses
from hloprobe.kernels.records import (
  KernelDifference,
  KernelRecord,
  Role,
  RowCount,
  RowCountRule,
  RowCountWhy,
)
from hloprobe.sites import Fate
from hloprobe.verify.findings import Said


def finding(ratio, target="a100", kind="row 0", what="unexplained", **kw):
  """A finding whose `what` is these words (`verify.Said.text`)."""
  error = None if ratio is None or math.isinf(ratio) else ratio * 1e-4
  return verify.Finding(
    kind,
    "seed_mlp",
    target,
    "baseline",
    True,
    ("bfloat16",),
    (2, 3, 4, 9),
    Said(text=what),
    error_abs=error,
    floor_abs=1e-4,
    floor_dtype="float32",
    ratio=ratio,
    source="predicted",
    **kw,
  )


def group(
  classes=((1,), (2,)),
  boundaries=(),
  *,
  case: str = "m",
  target: str = "a100",
  precision: str = "float32",
  basis: str = "kernel identity",
  invariant: bool | None = False,
  rows=None,
  sizes=None,
  **fields,
) -> invariance.Invariance:
  """A hand-made batch-invariance answer of `case`'s baseline on `target`
  under `precision`: row 0's `classes` of batch sizes (or `rows`, its
  `RowClasses`; () for none), `boundaries`, `basis` and `invariant`;
  `sizes` every size in the rows unless given; other `fields` as
  `Invariance`'s (kernels, why, mixed, ...)."""
  if rows is None:
    rows = (RowClasses(ROW0, tuple(classes)),) if classes else ()
  if sizes is None:
    sizes = tuple(sorted({n for r in rows for c in r.classes for n in c}))
  return invariance.Invariance(
    case,
    target,
    precision,
    "baseline",
    basis,
    tuple(rows),
    tuple(boundaries),
    invariant=invariant,
    sizes=tuple(sizes),
    **fields,
  )


def split_group(case: str, precision: str) -> invariance.Invariance:
  """A hand-made bitwise answer: `case`'s row 0 on the a100 under
  `precision` differs between n = 1 and n = 2 (kernel identity), at one
  boundary named by sites 0-1's Triton gemms (multiply+reduce at n = 1)
  and one other kernel's difference (k's tile 1 -> 2)."""
  return group(
    ((1,), (2,)),
    (
      Boundary(
        2,
        1,
        site_changes(2, 1, (0, 1)),
        differences=(kernel_change("k", "tile", "1", "2"),),
      ),
    ),
    case=case,
    precision=precision,
  )


def kernel_record(name: str, arithmetic=(), emitter="XLA reduction emitter"):
  """A kernels-stage record of a reduction `name` (reduce_sum, no source
  line) with these `arithmetic` (name, value) fields."""
  return KernelRecord(
    name,
    None,
    Role.REDUCTION,
    emitter,
    ("reduce_sum",),
    (),
    "f32[N,256]",
    tuple(arithmetic),
    (),
    f"sig {arithmetic}",
    RowCount.INDEPENDENT,
    RowCountWhy(RowCountRule.ROW, length=256),
  )


def kernel_change(name: str, field: str, was: str, now: str):
  """A kernels-stage difference: reduction `name`'s arithmetic `field` is
  `was` in the first config, `now` in the second; report words it "NAME
  (reduction reduce_sum at no source line): FIELD WAS -> NOW"."""
  a = kernel_record(name, ((field, was),))
  b = kernel_record(name, ((field, now),))
  return KernelDifference(a, b, ((field, was, now),))


def site_changes(n: int, against: int, sites) -> SiteChanges:
  """`sites` a Triton gemm at n, a multiply+reduce at `against`."""
  now, was = SiteMade(Fate.TRITON_GEMM), SiteMade(Fate.MULTIPLY_REDUCE)
  return SiteChanges(n, against, tuple(SiteChange(i, now, was) for i in sites))
