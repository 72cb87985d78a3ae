"""Findings made by hand (`verify.Finding` of the seed on a compile-only
target, a distance `ratio` beyond an f32 noise floor of 1e-4), shared by
tests/verify/findings_test.py and tests/verify/candidates_test.py."""

from __future__ import annotations

import math

from hloprobe import verify


def finding(ratio, target="a100", kind="row 0", what="unexplained", **kw):
  error = None if ratio is None or math.isinf(ratio) else ratio * 1e-4
  return verify.Finding(
    kind,
    "seed_mlp",
    target,
    "baseline",
    True,
    ("bfloat16",),
    (2, 3, 4, 9),
    what,
    error_abs=error,
    floor_abs=1e-4,
    floor_words="f32 noise floor",
    ratio=ratio,
    source="predicted",
    **kw,
  )
