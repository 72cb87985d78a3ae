"""Verdicts as records: what a leaf's numbers say, read by field.

A verdict is judged from numbers only (`accuracy.judge`, integer leaves
`integers.integer_judgement`) and kept as a `Verdict`: its kind, the
algorithms and sites that explain it, an integer leaf's counts, and the
notes later steps add (site notes, the floor check). Code that decides
something from a verdict reads `kind` (or `accurate`), never its words.

The words ("within f32 noise", "explained by TF32_TF32_F32 at sites [0,
1]", ...) are made in `hloprobe.report` only (`report/verdict_words.py`),
for the text and results.json.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
import enum

__all__ = ["FarCause", "FarRows", "Verdict", "VerdictKind"]


class VerdictKind(str, enum.Enum):
  """What a verdict says; the values name the kinds, not the words."""

  EXACT = "exact"
  WITHIN_NOISE = "within noise"
  EXPLAINED = "explained"
  UNEXPLAINED = "unexplained"
  OVERFLOW = "overflow"
  MATH_CHANGED = "math changed"
  INCOMPLETE = "not executed"


class FarCause(str, enum.Enum):
  """Why rows are orders of magnitude beyond their band (`FarRows`)."""

  # The measured floor failed its check (`floor_check`): the XLA:CPU
  # emulation disagrees with the numpy executor (a suspected miscompile).
  MISCOMPILE = "miscompile"
  # The target ran and its rows are that far beyond both their f32 floor
  # and the prediction at the sites' effective algorithms.
  UNEXPLAINED = "unexplained"


@dataclasses.dataclass(frozen=True, slots=True)
class FarRows:
  """Rows orders of magnitude beyond their band, and why
  (`rows.far_rows`, from the leaf's `WorstRow` against that band).

  Attributes:
    first, last: the smallest and largest row index beyond its band.
    beyond: how many judged rows are beyond theirs.
    rows: the batch size (the leaf's rows).
    judged: how many rows were judged; None where every row was.
    largest_abs: the largest error of a row beyond (output units; NaN
      for a NaN error).
    cause: why (`FarCause`).
  """

  first: int
  last: int
  beyond: int
  rows: int
  judged: int | None
  largest_abs: float
  cause: FarCause


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
  """One output leaf's verdict (or a config's, for the last two kinds).

  Attributes:
    kind: what it says (`VerdictKind`).
    dtype: the leaf's dtype, numpy's name, e.g. "bfloat16", "int8": names
      the noise floor ("f32 noise", "bf16 output rounding") and an integer
      type's range.
    leaf: the leaf's name ("" for a single array).
    algorithms: EXPLAINED: each non-F32 algorithm with the sites that
      run it, in site order, e.g. (("TF32_TF32_F32", (0, 1)),).
    elements: integer leaves: how many elements the leaf has.
    mismatched: integer leaves: how many differ from the exact result;
      None for a float leaf.
    overflowed: integer leaves: how many overflow the output type.
    overflow_mode: "wraps", "saturates" or "mixed" (`ErrorStats`).
    notes: what later steps add, in order (site notes, the floor check),
      each one clause of the words: words, or a record whose `note` says
      what it is (`made.MathChange`, `floor_check.FloorCheck`), which
      report words (`report.verdict_words.note_words`).
    far_rows: the rows orders of magnitude beyond their band with their
      cause (`FarRows`), leading the words whatever the kind says (e.g.
      "rows 32768-39999 of 40000 wrong by up to 1.0e+07: suspected XLA:CPU
      miscompile"); None where no row is that far. Never accurate.
  """

  kind: VerdictKind
  dtype: str = "float32"
  leaf: str = ""
  algorithms: tuple[tuple[str, tuple[int, ...]], ...] = ()
  elements: int = 0
  mismatched: int | None = None
  overflowed: int | None = None
  overflow_mode: str | None = None
  notes: tuple = ()
  far_rows: FarRows | None = None

  @property
  def accurate(self) -> bool:
    """Exact or within the noise floor (notes aside), no row far beyond."""
    return self.far_rows is None and self.kind in (
      VerdictKind.EXACT,
      VerdictKind.WITHIN_NOISE,
    )

  @property
  def integer(self) -> bool:
    """Whether it judges an integer leaf (counts, no noise floor)."""
    return self.mismatched is not None

  @property
  def algorithm_names(self) -> tuple[str, ...]:
    """The algorithms that explain it, e.g. ("TF32_TF32_F32",)."""
    return tuple(alg for alg, _ in self.algorithms)

  def noted(self, *notes) -> Verdict:
    """This verdict with `notes` (the non-empty ones: words, or a record
    whose `note` says what it is, which report words) appended."""
    kept = tuple(n for n in notes if n)
    if not kept:
      return self
    return dataclasses.replace(self, notes=self.notes + kept)


def algorithm_groups(
  site_algorithms: tuple[str, ...],
) -> tuple[tuple[str, tuple[int, ...]], ...]:
  """The non-F32 algorithms with their sites, first seen first."""
  by_alg: dict[str, list[int]] = {}
  for i, alg in enumerate(site_algorithms):
    if alg != "F32_F32_F32":
      by_alg.setdefault(alg, []).append(i)
  return tuple((alg, tuple(sites)) for alg, sites in by_alg.items())
