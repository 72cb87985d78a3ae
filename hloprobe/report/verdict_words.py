"""Verdicts, rows and findings in words: the one place their sentences
are made (issue 36: words only at the edge).

The records (`numerics.Verdict` and its `FarRows`, `numerics.WorstRow`,
`numerics.Made`, `verify.Finding`'s `Said`, `verify.FixTrial`'s
`TrialReason`) carry numbers and kinds, and code decides by their fields.
What people read of them is made here, for the text, the tables, the HTML
page and results.json ("within f32 noise", "explained by TF32_TF32_F32
at sites [0, 1, 2]", "row 5: 3.2e-02, 300x beyond f32 noise (1 of 8
rows)", "rows 32768-39999 of 40000 wrong by up to 1.0e+07: suspected
XLA:CPU miscompile").

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import math

import numpy as np

from hloprobe.errors import counted
from hloprobe.numerics import VerdictKind, float_dtype
from hloprobe.report.site_words import (
  failure_words,
  groups_words,
  site_note_words,
)

__all__ = [
  "config_words",
  "far_rows_words",
  "floor_words",
  "judged_how",
  "judged_words",
  "leaf_verdicts",
  "made_words",
  "noise_words",
  "prediction_words",
  "row_words",
  "rows_cell",
  "times_words",
  "trial_words",
  "verdict_words",
  "what_words",
  "whole_how",
]

# A changed-math verdict's words (`VerdictKind.MATH_CHANGED`); the Model
# Explorer's changed-math label says the same (pictures/model_explorer.py).
CHANGED = "XLA changed the math"
# `numerics.Made`'s words where the module could not be executed whole
# (and of the `NotExecuted` note its `config_judgement` adds to the
# prediction's verdict).
INCOMPLETE = "prediction incomplete: not executed"
# What leads rows far beyond their band (`numerics.FarCause`'s values).
_CAUSE = {
  "miscompile": "suspected XLA:CPU miscompile",
  "unexplained": "unexplained by the sites' algorithms",
}


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


def _integer_words(v) -> str:
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


def _head_words(v) -> str:
  """A leaf verdict's words without its notes and far rows."""
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


def verdict_words(v) -> str:
  """A leaf's verdict (`numerics.Verdict`) in words, led by its far rows
  and their cause, its notes after "; ", e.g. "explained by TF32_TF32_F32
  at sites [0, 1]; site 2 ambiguous, emulated as F32"."""
  lead = []
  if v.far_rows is not None:
    lead = [f"{far_rows_words(v.far_rows)}: {_CAUSE[v.far_rows.cause.value]}"]
  return "; ".join([*lead, _head_words(v), *map(note_words, v.notes)])


def note_words(n) -> str:
  """A verdict's note (`numerics.Verdict.notes`) in words: words as they
  are; a record by its `note`: a math change (`math_change_words`), a
  floor check (`floor_check_words`), an incomplete execution, a site note
  (`site_note_words`)."""
  if isinstance(n, str):
    return n
  if n.note == "math change":
    return math_change_words(n)
  if n.note == "floor check":
    return floor_check_words(n)
  if n.note == "not executed":  # `numerics.made.NotExecuted`
    return f"{INCOMPLETE}: {', '.join(n.instructions)}"
  if (words := site_note_words(n)) is not None:
    return words
  raise ValueError(f"no words for a verdict note {n.note!r}")


def math_change_words(c) -> str:
  """One instruction an "XLA changed the math" verdict names
  (`numerics.made.MathChange`), e.g. "__cublas$lt$matmul
  cublas-lt-matmul.1 (alpha_real 0.1, beta 0, epilogue BIAS) from site 0,
  made by gemm-rewriter: suspected ..."."""
  where = "no dot site" if c.site is None else f"site {c.site}"
  text = f"{c.target} {c.instruction} ({c.fields}) from {where}"
  if c.pass_name:
    text += f", made by {c.pass_name}"
  return f"{text}: {c.rule}" if c.rule else text


def floor_check_words(check) -> str | None:
  """The verdict's note of a floor check (`numerics.floor_check.
  FloorCheck`) where its floor is not trusted (`suspect`), else None."""
  if not check.suspect:
    return None
  return (
    "noise floor from XLA:CPU disagrees with the numpy executor: "
    f"suspected XLA:CPU miscompile at {check.where} (measured row 0 "
    f"{check.measured.row0_abs:.3g}, largest {check.measured.max_abs:.3g}; "
    f"the executor's F32 run allows {check.independent.row0_abs:.3g}, "
    f"{check.independent.max_abs:.3g}, x{check.factor:g})"
  )


def far_rows_words(f) -> str:
  """Rows far beyond their band (`numerics.FarRows`) in words, without
  their cause (`_far_words`)."""
  return _far_words(f.first, f.last, f.beyond, f.rows, f.judged, f.largest_abs)


def _far_words(a, b, beyond, n, judged, largest) -> str:
  """Rows beyond their floors in words: "rows 32768-39999 of 40000 wrong
  by up to 1.0e+07" (one run), "3 rows of 8 wrong (rows 1 to 6) by up to
  2.0e+00" (not one), "row 5 of 8 wrong by 3.1e-01" (one row), "3 of 49
  judged rows of 40000 wrong (rows 1 to 6) by up to ..." (some rows not
  judged: `judged` of them)."""
  size = "NaN" if math.isnan(largest) else f"{largest:.1e}"
  if judged is not None:  # the rows between were not judged
    return (
      f"{beyond} of {judged} judged rows of {n} wrong (rows {a} to {b}) by "
      f"up to {size}"
    )
  if beyond == 1:
    return f"row {a} of {n} wrong by {size}"
  if b - a + 1 == beyond:
    return f"rows {a}-{b} of {n} wrong by up to {size}"
  return f"{beyond} rows of {n} wrong (rows {a} to {b}) by up to {size}"


def _worst_far_words(w) -> str:
  """`_far_words` of a `WorstRow` whose `far` is True."""
  a, b = w.first_beyond, w.last_beyond
  if a < 0:  # a record made before the range was kept
    a = b = w.row
  judged = None if w.judged is None else w.judged_count
  return _far_words(a, b, w.beyond, w.rows, judged, w.beyond_abs)


def judged_how(w) -> str:
  """How a `WorstRow`'s rows were picked where not every row was judged
  (`numerics.rows.judged_rows`, `WorstRow.picked`), and against which
  floor where a large program's is row 0's (`WorstRow.row0_floor`)."""
  spread, largest = w.picked
  sample = "row 0" if spread <= 1 else f"row 0, {spread} spread evenly"
  large = ""
  if w.large_program:
    large = f"; a large program: every row up to {w.whole} rows"
  return (
    f"{sample} and the {largest} of largest error by a first pass, per leaf"
    f"{_against(w)} (--all_rows: every row{_own(w)}{large})"
  )


def whole_how(w) -> str:
  """How a large program's rows were judged where every row was and
  their floors are row 0's (`WorstRow.row0_floor`): "against row 0's f32
  noise floor (a large program: ...; --all_rows: each against its
  own)"; "" for any other."""
  if not w.row0_floor:
    return ""
  return f"{_AGAINST} ({_ROW0_FLOOR}; --all_rows: {_OWN})"


# A large program's rows: against which floor, why, and --all_rows's.
# (`numerics.rows`: row 0's times the row's largest |value| over row
# 0's, or the row's XLA-order error where larger).
_AGAINST = "against row 0's f32 noise floor scaled to each row"
_ROW0_FLOOR = "a large program: the floor's summation orders at row 0 alone"
_OWN = "each against its own"


def _against(w) -> str:
  return f", {_AGAINST}" if w.row0_floor else ""


def _own(w) -> str:
  return f", {_OWN}" if w.row0_floor else ""


def judged_words(w) -> str:
  """Which rows a `WorstRow` judged, in words: "every row of 8", or "49 of
  40000 rows: row 0, 32 spread evenly and the 16 of largest error by a
  first pass, per leaf (--all_rows: every row)"; a large program's floor
  row 0's, "every row of 8, against row 0's f32 noise floor (...)"."""
  if w.judged is None:
    how = whole_how(w)
    return f"every row of {w.rows}" + (f", {how}" if how else "")
  return f"{len(w.judged)} of {w.rows} rows: {judged_how(w)}"


def row_words(w, leaf: bool = True) -> str:
  """A leaf's rows (`numerics.WorstRow`) in words.

  "every row within f32 noise" (`noise_words` names the floor, e.g. "bf16
  output rounding"; "every judged row ..." where some rows were not
  judged, `WorstRow.judged`), else "row 5: 3.2e-02, 300x beyond f32 noise
  (1 of 8 rows)": the worst row, its error and its m (to one decimal below
  10, "1.3x": a whole "1x" reads as not beyond; a whole number from 10),
  and how many rows are beyond theirs; "where f32 noise is 0" for an error
  over a zero floor. A named leaf leads ("['new_w'] row 5: ..."), unless
  `leaf` is False (the caller names it).
  """
  noise = noise_words(w.output_dtype)
  lead = f"{w.leaf} " if w.leaf and leaf else ""
  if w.within:
    every = "every row" if w.judged is None else "every judged row"
    return f"{lead}{every} within {noise}"
  if math.isinf(w.multiple):
    far = f"where {noise} is 0"
  else:
    far = f"{_times(w.multiple)}x beyond {noise}"
  of = (
    f"{w.rows} rows"
    if w.judged is None
    else f"{w.judged_count} judged rows of {w.rows}"
  )
  return f"{lead}row {w.row}: {w.abs_err:.1e}, {far} ({w.beyond} of {of})"


def _times(m: float) -> str:
  """A multiple m > 1 in words: "1.3", "5" (not "5.0"), "126"."""
  return f"{m:.1f}".removesuffix(".0") if m < 9.95 else f"{m:.0f}"


def rows_cell(p) -> str:
  """Every judged leaf's worst row of prediction `p` in words, for a
  table's "worst row" cell; "n/a" without a prediction."""
  if p is None:
    return "n/a"
  words = [row_words(w) for w in p.rows if w is not None]
  return "; ".join(words) or "not judged (no batch axis, or integer)"


def prediction_words(p) -> str:
  """A `numerics.Prediction`'s headline verdict in words (its `leaf`'s)."""
  return verdict_words(p.judgement)


def leaf_verdicts(p) -> tuple[tuple[str, str], ...]:
  """(leaf name, verdict in words) for every output leaf of prediction
  `p`, as results.json's "leaf_verdicts" keeps them."""
  return tuple((leaf, verdict_words(v)) for leaf, v in p.leaf_judgements())


def _changed_words(changes, localised: bool) -> str:
  if localised and changes:
    return f"{CHANGED}: " + "; ".join(map(math_change_words, changes))
  listed = ", ".join(f"{c.target} {c.instruction}" for c in changes)
  return f"{CHANGED} (not localised; gemms: {listed or 'none'})"


def made_words(m) -> str | None:
  """What XLA made (`numerics.Made`) in words: "XLA changed the math:
  ...", "prediction incomplete: not executed: ...", or None when the
  module does what the program asks (`Made.agrees`)."""
  if m.changed:
    return _changed_words(m.changes, m.localised)
  if m.not_executed:
    return f"{INCOMPLETE}: {', '.join(m.not_executed)}"
  return None


def config_words(r) -> str | None:
  """A config's verdict in words: "XLA changed the math: ..." where the
  executed module says so, else the prediction's (with "prediction
  incomplete: ..." added where the module could not be executed); None
  without either."""
  p = prediction_words(r.prediction) if r.prediction is not None else None
  if r.made is None:
    return p
  extra = made_words(r.made)
  if extra is None or r.made.changed or p is None:
    return extra or p
  return f"{p}; {extra}"


def what_words(f) -> str:
  """What a `verify.Finding` says (its `what`, by kind), e.g. "explained
  by TF32_TF32_F32 at sites [0, 1, 2]", "row 5 of 8 beyond its floor"."""
  said = f.what
  if said.text is not None:  # given by hand
    return said.text
  if said.failure is not None:
    return f"{said.failure.stage} failed: {failure_words(said.failure)}"
  if said.why is not None:
    return f"not judged: {said.why}"
  if f.kind == "changed the math":
    return _changed_words(said.changes, said.localised)
  if f.kind == "leaf":
    return f"{said.leaf}: {verdict_words(said.verdict)}"
  if f.kind == "row":
    lead = f"{said.leaf} " if said.leaf else ""
    if said.miscompile:
      return f"{lead}{_worst_far_words(said.worst)}: {_CAUSE['miscompile']}"
    return f"{lead}row {said.row} of {said.rows} beyond its floor"
  return verdict_words(said.verdict)


def floor_words(f) -> str:
  """The band a `verify.Finding` is measured against, in words: "f32
  noise floor" (f32 and f64 outputs), "bfloat16 noise floor" (the
  output's dtype), "F32 band" (XLA changed the math)."""
  if f.kind == "changed the math":
    return "F32 band"
  dtype = f.floor_dtype
  if not dtype or dtype in ("float32", "float64"):
    return "f32 noise floor"
  return f"{dtype} noise floor"


def times_words(ratio: float, error_abs: float | None = None) -> str:
  """How many times its band an error is, in words: 6100.3 -> "6100x",
  2.34 -> "2.3x", inf -> "beyond an exact band" (or, for an infinite
  `error_abs`, "an infinite error, beyond"), NaN (a NaN error) -> "a NaN
  error, beyond"."""
  if math.isnan(ratio):
    return "a NaN error, beyond"
  if error_abs is not None and math.isinf(error_abs):
    return "an infinite error, beyond"
  if math.isinf(ratio):
    return "beyond an exact band"
  return f"{ratio:.0f}x" if ratio >= 10 else f"{ratio:.2g}x"


def trial_words(t) -> str:
  """One line on a tried fix (`verify.FixTrial`): what it left (its worst
  finding), or the requirements it met."""
  why = t.reason
  names = " and ".join(why.requirements)
  if why.met:
    return f"{names} on {counted(why.configs, 'config')}"
  f = why.left
  if f is None:
    return f"{names} failed"
  where = f"{f.target} n = {', '.join(map(str, f.batch_sizes))}"
  if f.ratio is None or f.error_abs is None:
    return f"{names} failed: {where}: {what_words(f)}"
  return (
    f"{names} failed: {where}: {f.error_abs:.2e}, "
    f"{times_words(f.ratio, f.error_abs)} the {floor_words(f)}: "
    f"{what_words(f)}"
  )
