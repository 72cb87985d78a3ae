"""Findings made by hand (`verify.Finding` of the seed on a compile-only
target, a distance `ratio` beyond an f32 noise floor of 1e-4), shared by
tests/verify/findings_test.py and tests/verify/candidates_test.py."""

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
from hloprobe.kernels.records import KernelDifference
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


def split_group(case: str, precision: str) -> invariance.Invariance:
  """A hand-made bitwise answer: `case`'s row 0 on the a100 under
  `precision` differs between n = 1 and n = 2 (kernel identity), at one
  boundary named by sites 0-1's Triton gemms (multiply+reduce at n = 1)
  and one other kernel's difference ("k 1")."""
  return invariance.Invariance(
    case,
    "a100",
    precision,
    "baseline",
    "kernel identity",
    (RowClasses(ROW0, ((1,), (2,))),),
    (
      Boundary(
        2,
        1,
        site_changes(2, 1, (0, 1)),
        differences=(KernelDifference("gemm", None, None, (), "k 1"),),
      ),
    ),
    invariant=False,
    sizes=(1, 2),
  )


def site_changes(n: int, against: int, sites) -> SiteChanges:
  """`sites` a Triton gemm at n, a multiply+reduce at `against`."""
  now, was = SiteMade(Fate.TRITON_GEMM), SiteMade(Fate.MULTIPLY_REDUCE)
  return SiteChanges(n, against, tuple(SiteChange(i, now, was) for i in sites))
