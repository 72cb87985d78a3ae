"""Verdicts as records: what a leaf's numbers say, read by field.

A verdict is judged from numbers only (`accuracy.judge`, integer leaves
`integers.integer_judgement`) and kept as a `Verdict`: its kind, the
algorithms and sites that explain it, an integer leaf's counts, and the
notes later steps add (site notes, the floor check). Code that decides
something from a verdict reads `kind` (or `accurate`), never its words.

The words ("within f32 noise", "explained by TF32_TF32_F32 at sites [0,
1]", ...) are `verdict_words`': the one place they are made, for the text
kept in `Prediction.verdict` and results.json (unchanged by the records).

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import dataclasses
import enum

import numpy as np

from hloprobe.numerics.ulps import float_dtype

__all__ = ["Verdict", "VerdictKind", "verdict_words"]


class VerdictKind(str, enum.Enum):
  """What a verdict says; the values name the kinds, not the words."""

  EXACT = "exact"
  WITHIN_NOISE = "within noise"
  EXPLAINED = "explained"
  UNEXPLAINED = "unexplained"
  OVERFLOW = "overflow"
  MATH_CHANGED = "math changed"
  INCOMPLETE = "not executed"


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
      each one clause of the words.
    far_rows: the rows orders of magnitude beyond their band with their
      cause, leading the words whatever the kind says (e.g. "rows
      32768-39999 of 40000 wrong by up to 1.0e+07: suspected XLA:CPU
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
  notes: tuple[str, ...] = ()
  far_rows: str | None = None

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

  def noted(self, *notes: str | None) -> Verdict:
    """This verdict with `notes` (the non-empty ones) appended."""
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


def groups_words(groups) -> str | None:
  """`TF32_TF32_F32 at sites [0, 1, 2]` for `algorithm_groups`, or None."""
  if not groups:
    return None
  return " and ".join(f"{alg} at sites {list(sites)}" for alg, sites in groups)


def noise_words(dtype) -> str:
  """How a verdict names the noise floor of an output of `dtype`.

  f32 and f64 outputs: "f32 noise" (the floor is that of their f32/f64
  arithmetic); narrower ones: "bf16 output rounding" (the floor is then
  mostly the output's own rounding).
  """
  dtype = float_dtype(dtype)
  if dtype is None or dtype.itemsize >= 4:
    return f"{_float_name(dtype) if dtype is not None else 'f32'} noise"
  return f"{_float_name(dtype)} output rounding"


def _float_name(dtype) -> str:
  """HLO's spelling of a float type: bf16, f32, f8e4m3fn."""
  name = np.dtype(dtype).name
  return name.replace("bfloat", "bf").replace("float", "f").replace("_", "")


def _hlo_name(dtype) -> str:
  """HLO's spelling of an integer type: s8, u32."""
  return np.dtype(dtype).name.replace("uint", "u").replace("int", "s")


def _integer_words(v: Verdict) -> str:
  info = np.iinfo(np.dtype(v.dtype))
  of = f" of {v.leaf}" if v.leaf else " of the output"
  elements = f"{v.elements} elements{of}"
  over = ""
  if v.overflowed:
    how = {"wraps": "wrap", "saturates": "saturate"}.get(
      v.overflow_mode, "wrap or saturate"
    )
    over = (
      f"overflow: {v.overflowed} of {elements} exceed "
      f"{_hlo_name(v.dtype)} [{info.min}, {info.max}] and {how}"
    )
  if v.kind is VerdictKind.OVERFLOW:
    return over
  differ = (
    f"unexplained: {v.mismatched} of {elements} differ from the exact "
    "integer result"
  )
  return f"{differ}; {over}" if over else differ


def head_words(v: Verdict) -> str:
  """The verdict's words without its notes."""
  kind = v.kind
  if kind is VerdictKind.EXACT:
    return "exact"
  if kind is VerdictKind.WITHIN_NOISE:
    return f"within {noise_words(v.dtype)}"
  if v.integer and kind in (VerdictKind.UNEXPLAINED, VerdictKind.OVERFLOW):
    return _integer_words(v)
  if kind is VerdictKind.EXPLAINED:
    return f"explained by {groups_words(v.algorithms)}"
  if kind is VerdictKind.UNEXPLAINED:
    return "unexplained"
  raise ValueError(f"no words for a {kind.value!r} leaf verdict")


def verdict_words(v: Verdict) -> str:
  """The verdict in words, its notes after "; ", e.g. "explained by
  TF32_TF32_F32 at sites [0, 1]; site 2 ambiguous, emulated as F32"."""
  lead = [v.far_rows] if v.far_rows else []
  return "; ".join([*lead, head_words(v), *v.notes])
