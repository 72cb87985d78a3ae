"""`hloprobe verify`'s outcome in words (table, markdown) or JSON.

The evidence records of `verify.evidence` become the lines people read,
each chosen by its `evidence_kind` and read by field (the record classes
stay behind verify's face);
the JSON document carries the same lines (`verification_json`), as does a
`versions` worker's reply to `bisect` (`requirement_lines`).

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

from collections.abc import Sequence

from hloprobe import invariance
from hloprobe.report.invariance_words import first_lines
from hloprobe.report.results_schema import SCHEMA_VERSION, dumps_json
from hloprobe.report.site_words import failure_words
from hloprobe.report.tables import table
from hloprobe.report.verdict_words import made_words, row_words, verdict_words
from hloprobe.verify import Evidence

__all__ = [
  "evidence_line",
  "render_verification",
  "requirement_lines",
  "verification_json",
]


def _subject(s) -> str:
  """A `Subject` record: the config in words."""
  return f"{s.target} {s.case} n={s.n} {s.precision}"


def _source(s) -> str:
  """ "observed", "predicted" (ambiguous where cuBLAS sites were predicted
  at a TF32 they may not use) or "n/a"."""
  if s.kind != "predicted" or not s.tf32_optional_sites:
    return s.kind
  return (
    f"predicted with TF32 at cuBLAS sites {list(s.tf32_optional_sites)}, "
    "which may keep f32: ambiguous"
  )


def _not_judged(e: Evidence) -> str:
  if e.reason is Evidence.Reason.NO_CONFIGS:
    return e.reason.value
  who, leaf = _subject(e.subject), f" {e.leaf}" if e.leaf else ""
  if e.reason is Evidence.Reason.NO_BATCH_AXIS:
    return (
      f"{who}: output leaf{leaf} has no batch axis, so no row 0 "
      "that should stay fixed as n changes"
    )
  if e.reason is Evidence.Reason.NO_BASE:
    return (
      f"{who}: no {_source(e.source)} row 0 of{leaf} at n={e.base_n} to "
      "compare with"
    )
  if e.failure is not None and (words := failure_words(e.failure)):
    return f"{who}: {e.reason.value}: {words}"
  return f"{who}: {e.reason.value}"


def _row_moved(e: Evidence) -> str:
  leaf = f" {e.leaf}" if e.leaf else ""
  first_of, over = (
    ("", "")
    if e.values < 2
    else (" (first values)", f", the largest of its {e.values} values")
  )
  if e.row0_size:  # row 0 was cut (`numerics.ROW0_KEPT`)
    over = f", the largest of its first {e.values} of {e.row0_size} values"
  return (
    f"{_subject(e.subject)}: row 0{leaf}{first_of} {e.row0:.7g} vs "
    f"{e.base_row0:.7g} at n={e.base_n}, moved {e.moved_abs:.2e}{over} "
    f"({_source(e.source)}); limit {e.limit_abs:.2e}"
  )


def _limits(limits) -> str:
  """E.g. "limits row-0 |err| 2.02e-04, max |err| 3.10e-04 (2 x noise
  floor 1.01e-04, 1.55e-04)", or the bounds given."""
  if limits.evidence_kind is Evidence.Kind.ERROR_BOUNDS:
    return f"abs bound {limits.abs_bound}, rel bound {limits.rel_bound}"
  k = limits.factor
  return (
    f"limits row-0 |err| {k * limits.row0_abs:.2e}, max |err| "
    f"{k * limits.max_abs:.2e} ({k:g} x noise floor {limits.row0_abs:.2e}, "
    f"{limits.max_abs:.2e})"
  )


def _other_leaf(e) -> str:
  """A `LeafVerdict` or `LeafErrors` record in words."""
  if e.evidence_kind is Evidence.Kind.LEAF_VERDICT:
    return f"{e.leaf} {verdict_words(e.verdict)}"
  if e.evidence_kind is Evidence.Kind.LEAF_ROW:
    return f"{e.leaf} {row_words(e.worst, leaf=False)}"
  return f"{e.leaf} max |err| {e.max_abs:.2e}, max rel {e.max_rel:.2e}"


def _errors_judged(e: Evidence) -> str:
  leaf = f"{e.leaf} " if e.leaf else ""
  line = (
    f"{_subject(e.subject)}: {leaf}row-0 |err| {e.row0_abs:.2e}, max |err| "
    f"{e.max_abs:.2e}, max rel {e.max_rel:.2e} ({_source(e.source)}); "
    f"{_limits(e.limits)}"
  )
  if e.worst_row is not None and not e.worst_row.within:
    line += f"; every row judged: {row_words(e.worst_row)}"
  if e.not_accurate:
    line += f"; not accurate: {'; '.join(map(_other_leaf, e.not_accurate))}"
  return line


def _math_changed(e: Evidence) -> str:
  size = ""
  if e.deviation_abs is not None and e.bound_abs is not None:
    size = (
      f" (|widened module - float64| {e.deviation_abs:.2e} > F32 band "
      f"{e.bound_abs:.2e})"
    )
  return f"{_subject(e.subject)}: {made_words(e.made)}{size}"


def _golden_note(e: Evidence) -> str:
  if e.kind == "missing":
    return (
      f"missing golden {e.detail} (run `hloprobe golden update` with the "
      "fix's sweep)"
    )
  if e.kind == "changed":
    return f"changed {e.detail}"
  if e.kind == "match":
    return f"{e.detail} golden files match"
  return str(e.detail)  # a site change in words, or the error


def _too_few(e: Evidence) -> str:
  return (
    f"{e.target} {e.case} {e.precision}: consistent needs at least two "
    f"batch sizes; got n={e.n}"
  )


def _error_change(e: Evidence) -> str:
  return (
    f"{e.words}: row-0 |err| {e.old_abs:.2e} -> {e.new_abs:.2e} "
    f"({_source(e.source)})"
  )


def _invariance(e: invariance.Invariance) -> str:
  """A group's batch-invariance answer ("invariant"'s evidence)."""
  return f"{e.case}: " + "; ".join(first_lines([e], kernels=False))


_WORDS = {
  Evidence.Kind.NOT_JUDGED: _not_judged,
  Evidence.Kind.TOO_FEW_SIZES: _too_few,
  Evidence.Kind.ROW_MOVED: _row_moved,
  Evidence.Kind.ERRORS_JUDGED: _errors_judged,
  Evidence.Kind.MATH_CHANGED: _math_changed,
  Evidence.Kind.GOLDEN_NOTE: _golden_note,
  Evidence.Kind.ERROR_CHANGE: _error_change,
}


def evidence_line(e) -> str:
  """One evidence record (`verify.evidence`) as its line; a string stays
  as it is (a `versions` worker's reply carries lines)."""
  if isinstance(e, invariance.Invariance):
    return _invariance(e)
  words = _WORDS.get(getattr(e, "evidence_kind", None))
  return words(e) if words else str(e)


def requirement_lines(r) -> list[str]:
  """A `verify.Requirement`'s evidence as lines, in its order."""
  return [evidence_line(e) for e in r.evidence]


def _fix_kind(fix) -> str:
  """ "baseline" (no --fix), "precision", "program" or "experiment"."""
  if fix.baseline:
    return "baseline"
  if fix.precision:
    return "precision"
  return "program" if fix.program else "experiment"


def verification_json(v) -> dict:
  """A `verify.Verification` for machines (`--format=json`)."""
  return {
    "schema": "hloprobe.verify",
    "schema_version": SCHEMA_VERSION,
    "fix": None if v.fix.baseline else v.fix.name,
    "fix_kind": _fix_kind(v.fix),
    "xla_flags": v.fix.experiment.flags_text if v.fix.experiment else None,
    "passed": v.passed,
    "requirements": [
      {"name": r.name, "passed": r.passed, "evidence": requirement_lines(r)}
      for r in v.requirements
    ],
    "fate_changes": [str(c) for c in v.fate_changes],
    "row0_errors": [evidence_line(e) for e in v.errors],
    "failures": _failures(v),
  }


def _no_errors(v) -> str:
  """Why no row-0 error change is listed."""
  if all(r.name == "invariant" for r in v.requirements):
    return "not computed: the bits only (no float64 reference)"
  return "none judged"


def _failures(v) -> list[str]:
  """The distinct words of a verification's failures (`failure_words`)."""
  return list(dict.fromkeys(map(failure_words, v.failures)))


# The most characters of evidence a table cell holds; the whole is listed
# under the table, one line each.
_CELL = 100


def _cell(lines: Sequence[str]) -> str:
  """A requirement's deciding evidence in the table: its first line, cut
  at a word within `_CELL` characters when longer ("... (below)")."""
  if not lines:
    return ""
  first = lines[0]
  if len(first) <= _CELL and len(lines) == 1:
    return first
  cut = first if len(first) <= _CELL else first[:_CELL].rsplit(" ", 1)[0]
  return f"{cut} ... (below)"


def render_verification(v, fmt: str) -> str:
  """A `verify.Verification` as text (table, markdown) or JSON."""
  if fmt == "json":
    return dumps_json(verification_json(v))
  evidence = {r.name: requirement_lines(r) for r in v.requirements}
  rows = [
    (
      r.name,
      "PASS" if r.passed else "FAIL",
      _cell(evidence[r.name]),
    )
    for r in v.requirements
  ]
  verdict = "PASS" if v.passed else "FAIL"
  if v.fix.baseline:  # no --fix: the program as it is, nothing compared
    lines = [f"verify (no --fix: the baseline as it is): {verdict}"]
    lines += [f"the baseline failed: {e}" for e in _failures(v)]
  else:
    lines = [f"verify --fix={v.fix.name}: {verdict}"]
    lines += [f"the fix failed: {e}" for e in _failures(v)]
  headers = ("requirement", "result", "deciding evidence")
  lines += ["", table(rows, headers, fmt)]
  for r in v.requirements:
    lines += ["", f"{r.name}:"] + [f"  {e}" for e in evidence[r.name]]
  if v.fix.baseline:
    return "\n".join(lines)
  lines += ["", "contraction sites the fix changes:"]
  lines += [f"  {c}" for c in v.fate_changes] or ["  none"]
  lines += ["", "row-0 error, baseline -> fix:"]
  lines += [f"  {evidence_line(e)}" for e in v.errors] or ["  " + _no_errors(v)]
  return "\n".join(lines)
