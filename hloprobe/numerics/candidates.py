"""Site assignments: which algorithm each dot site is emulated at.

An assignment is one algorithm name per dot site, in site order (e.g.
("TF32_TF32_F32", "F32_F32_F32")). Here: the chosen one (each site's
effective algorithm), the per-site share pairs, and the candidates an
observed run is matched against, among them those the cuBLAS rule allows
(`SiteFate.tf32_optional`: TF32 allowed, not required). Pure functions of
names; `predict.Predictor` emulates them.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

from hloprobe.numerics.emulate_dot import EMULATED_ALGORITHMS, TF32_TRUNCATED
from hloprobe.numerics.emulate_fp8 import (
  FP8_FAST_ACCUM_ALGORITHM,
  jaxpr_algorithm,
)
from hloprobe.numerics.note_records import TakenAsF32
from hloprobe.numerics.site_notes import F32, TF32
from hloprobe.sites import (
  EXACT_INTEGER,
  Fate,
  SiteFate,
)

__all__ = [
  "allowed_assignments",
  "candidate_assignments",
  "chosen_algorithms",
  "consecutive_groups",
  "is_allowed",
  "optional_sites",
  "share_assignments",
  "share_pairs",
]

# Fates whose arithmetic no candidate changes: the strength-reduced ones.
_FIXED_FATES = (Fate.MULTIPLY, Fate.MULTIPLY_REDUCE, Fate.GONE)
# TF32-optional cuBLAS sites (`SiteFate.tf32_optional`) up to which every
# TF32/F32 assignment of them is a candidate: 2^4 = 16 emulations at most.
_OPTIONAL_CAP = 4


def optional_sites(
  fates: Sequence[SiteFate], chosen: tuple[str, ...]
) -> tuple[int, ...]:
  """The sites emulated at TF32 where TF32 is allowed, not required."""
  return tuple(
    i for i, f in enumerate(fates) if f.tf32_optional and chosen[i] == TF32
  )


def is_allowed(assignment, chosen, optional) -> bool:
  """Whether `assignment` is `chosen` with some `optional` sites at F32."""
  return all(
    a == c or (i in optional and a == F32)
    for i, (a, c) in enumerate(zip(assignment, chosen))
  )


def allowed_assignments(
  chosen: tuple[str, ...], optional: tuple[int, ...]
) -> list[tuple[str, ...]]:
  """`chosen` with each subset of the `optional` sites at F32, the empty
  subset (`chosen` itself) first, then by size.

  Every subset up to `_OPTIONAL_CAP` optional sites (2^4 = 16
  assignments); beyond it (2^k would be too many emulations) only the
  subsets of at most one site, and of all but at most one, so 2k + 2
  assignments: a run that keeps another mix of them in f32 may then find
  no match and stay "unexplained".
  """
  k = len(optional)
  sizes = range(k + 1)
  if k > _OPTIONAL_CAP:
    sizes = sorted({0, 1, k - 1, k})
  return [
    tuple(F32 if i in kept else a for i, a in enumerate(chosen))
    for size in sizes
    for kept in itertools.combinations(optional, size)
  ]


def candidate_assignments(
  fates: Sequence[SiteFate], chosen: tuple[str, ...]
) -> list[tuple[str, ...]]:
  """The assignments an observed run is matched against, in order.

  The assignments the cuBLAS rule allows (`allowed_assignments`: each
  TF32-optional site at TF32 or F32, fewest in f32 first), every site at
  F32, and every site XLA did not strength-reduce at TF32_TF32_F32, then at
  BF16_BF16_F32; each once, at its first place.
  """
  candidates = allowed_assignments(chosen, optional_sites(fates, chosen))
  candidates.append((F32,) * len(chosen))
  for alg in (TF32, "BF16_BF16_F32"):
    candidates.append(
      tuple(F32 if f.fate in _FIXED_FATES else alg for f in fates)
    )
  return list(dict.fromkeys(candidates))


def share_pairs(
  chosen: tuple[str, ...],
) -> Iterator[tuple[int, tuple[str, ...], tuple[str, ...]]]:
  """(site, that site alone at its algorithm, every other site at its
  algorithm and that one at F32) for each non-F32 site."""
  count = len(chosen)
  for i, alg in enumerate(chosen):
    if alg == F32:
      continue
    alone = tuple(alg if j == i else F32 for j in range(count))
    without = tuple(F32 if j == i else a for j, a in enumerate(chosen))
    yield i, alone, without


def consecutive_groups(count: int) -> list[range]:
  """`count` items in ceil(sqrt(count)) runs of consecutive indices, each
  of ceil(count / groups) items but the last (fewer): a large program's
  non-F32 sites grouped for attribution (`Predictor._shares`), so that
  ranking the groups and then the largest group's sites takes about
  2 sqrt(count) emulations, not count. [] for count 0.

  Raises:
    ValueError: count < 0.
  """
  if count < 0:
    raise ValueError(f"{count} items")
  if count == 0:
    return []
  groups = math.isqrt(count - 1) + 1  # ceil(sqrt(count))
  size = -(-count // groups)
  return [range(i, min(i + size, count)) for i in range(0, count, size)]


def share_assignments(chosen: tuple[str, ...]) -> list[tuple[str, ...]]:
  """Every assignment `Predictor._shares` emulates for `chosen`."""
  return [
    a for _, alone, without in share_pairs(chosen) for a in (alone, without)
  ]


def chosen_algorithms(
  fates: Sequence[SiteFate],
) -> tuple[tuple[str, ...], TakenAsF32 | None]:
  """Each site's effective algorithm; unknown or unemulated ones as F32.

  An fp8 cuBLASLt gemm's (ANY_F8_ANY_F8_F32) is F32_F32_F32 on the
  program's dequantized operands (`emulate_fp8.jaxpr_algorithm`), with no
  note; one with cuBLASLt's fast accumulation on
  (ANY_F8_ANY_F8_F32_FAST_ACCUM) is F32 too, noted "not modelled: cuBLASLt
  FP8 fast accumulation".

  An integer dot (`EXACT_INTEGER`) is F32 here too, with no note: the
  emulator computes integer dots exactly, whatever their algorithm
  (`evaluator.Evaluator._dot`).

  A TF32_TF32_F32 site whose kernel's TF32 mma has no `cvt.rna.tf32.f32`
  (`SiteFate.ptx_tf32_rounding` "truncate") is emulated as
  `emulate_dot.TF32_TRUNCATED` (operands truncated, band unit 2^-10), not
  rounded to nearest (review finding 12); the name says so in the
  prediction's site algorithms.
  """
  chosen, unknown = [], []  # unknown: (site, algorithm) taken as F32
  for f in fates:
    alg = f.effective_algorithm
    if alg == TF32 and f.ptx_tf32_rounding == "truncate":
      chosen.append(TF32_TRUNCATED)
    elif jaxpr_algorithm(alg) in EMULATED_ALGORITHMS:
      chosen.append(jaxpr_algorithm(alg))
    elif alg == EXACT_INTEGER:
      chosen.append(F32)
    else:  # FP8_FAST_ACCUM_ALGORITHM among them: named as not modelled
      chosen.append(F32)
      unknown.append((f.site.index, alg))
  note = (
    TakenAsF32(tuple(unknown), FP8_FAST_ACCUM_ALGORITHM) if unknown else None
  )
  return tuple(chosen), note
