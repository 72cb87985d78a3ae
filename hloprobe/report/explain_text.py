"""Words for `explain`'s records: the account `hloprobe explain` prints.

`render_explanation` words the `explain.TargetExplanation` records, computing
nothing new: per target, fates by batch size with the pass responsible,
effective algorithms per precision, sites changing arithmetic or kernel as n
grows, the observed row 0 and, last, what compile-only targets cannot
settle. Missing values read "n/a"; for people, not a stable format.

`explanation_json` gives the same records to machines
(`hloprobe explain --format=json`), schema "hloprobe.explain" version 1:
  {"schema": "hloprobe.explain", "schema_version": 1,
   "host": the CPU record of results.json (hloprobe.runtime.host) or null,
   "explanations": [one object per `explain.TargetExplanation`, its field
     names as keys, tuples as lists, None as null; two tuples become
     objects: a FateSpan's groups {"sites": [int], "fate": str, "how":
     "pass (pipeline)" or a note} and a FateTransition's steps
     {"batch_sizes": [int], "fate": str, "algorithm": str | null}]}

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Iterable, Sequence

from hloprobe.compile import BASELINE, ReportedError
from hloprobe.report.explain_kernel import kernel_model_lines
from hloprobe.report.explain_records import (
  Alternative,
  FateSpan,
  TargetExplanation,
)
from hloprobe.report.explain_rows import made_rows_lines, rows_lines
from hloprobe.report.wording import numbers as _numbers
from hloprobe.sites import EXACT_INTEGER

__all__ = ["SCHEMA_VERSION", "explanation_json", "render_explanation"]

SCHEMA_VERSION = 1


def _ns(ns: Sequence[int]) -> str:
  return f"n = {_numbers(ns)}"


def _sites(sites: Sequence[int]) -> str:
  return f"site{'s' if len(sites) > 1 else ''} {_numbers(sites)}"


def _and(words: Sequence[str]) -> str:
  return (
    words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
  )


def _by_text(pairs: Iterable[tuple[str, str]]) -> list[tuple[list[str], str]]:
  """Groups (precision, text) by text, keeping first-seen order."""
  out: dict[str, list[str]] = {}
  for precision, text in pairs:
    out.setdefault(text, []).append(precision)
  return [(ps, text) for text, ps in out.items()]


def _under(e: TargetExplanation, precisions: list[str]) -> str:
  if len(precisions) == len(e.precisions) > 1:
    return f"under every precision swept ({_and(precisions)})"
  return "under " + _and([e.precisions[p] for p in precisions])


def _span_lines(spans: tuple[FateSpan, ...]) -> list[str]:
  lines = [
    f"{_ns(s.batch_sizes)}: "
    + "; ".join(
      f"{_sites(sites)} {fate} ({how})" if sites else f"{fate}: {how}"
      for sites, fate, how in s.groups
    )
    for s in spans
  ]
  if len(spans) == 1:
    # The sizes that compiled: a size that failed has no fates to compare.
    across = _ns(spans[0].batch_sizes)
    lines.append(f"no contraction site changes fate across {across}")
  return lines


def _algorithm_lines(e: TargetExplanation) -> list[str]:
  """One line per set of fates that run the same algorithms."""
  texts: dict[str, tuple[list[str], set[int]]] = {}
  for fate in dict.fromkeys(a.fate for a in e.algorithms):
    uses = [a for a in e.algorithms if a.fate == fate]
    by_n = len(uses) > len({u.precision for u in uses})
    # Sites of one fate that run different algorithms are named each, so
    # a line never leaves open which site runs TF32.
    by_site = len({a.sites for a in uses}) > 1
    pairs = [
      (
        a.precision,
        (f"{_sites(a.sites)}: " if by_site else "")
        + f"{a.algorithm or 'n/a'} [{a.evidence}]"
        + (f" at {_ns(a.batch_sizes)}" if by_n else ""),
      )
      for a in uses
    ]
    text = "; ".join(f"{_under(e, ps)} {t}" for ps, t in _by_text(pairs))
    fates, sites = texts.setdefault(text, ([], set()))
    fates.append(fate)
    sites.update(s for a in uses for s in a.sites)
  return [
    f"{_and(fates)} ({_sites(sorted(sites))}): {text}"
    for text, (fates, sites) in texts.items()
  ]


def _verb(sites: Sequence[int], plural: str, singular: str) -> str:
  return plural if len(sites) > 1 else singular


def _step_words(steps) -> str:
  return ", ".join(
    f"{fate} {algo or 'n/a'} at {_ns(ns)}" for ns, fate, algo in steps
  )


def _change_lines(e: TargetExplanation) -> list[str]:
  pairs = [
    (
      c.precision,
      f"{_sites(c.sites)} "
      + _verb(c.sites, "change", "changes")
      + " "
      + _change_words(c)
      + f": {_step_words(c.steps)}"
      + _reported_words(c, e.reported),
    )
    for c in e.changes
  ]
  lines = [f"{_under(e, ps)}, {t}" for ps, t in _by_text(pairs)]
  unchanged = [
    p for p in e.precisions if p not in {c.precision for c in e.changes}
  ]
  if unchanged:
    lines.append(
      f"{_under(e, unchanged)}, no contraction site changes fate or "
      "algorithm with batch size"
    )
  return lines


def _change_words(c) -> str:
  """What a `FateTransition` changes, in words."""
  if not c.arithmetic and all(a == EXACT_INTEGER for _, _, a in c.steps):
    return "kernel but not arithmetic (exact integer sums: any order agrees)"
  if not c.arithmetic:
    return "kernel but not algorithm (summation order only)"
  if c.tf32_optional:
    return (
      "arithmetic where cuBLAS uses the TF32 it is allowed, not required, "
      "to use (it may keep f32)"
    )
  return "arithmetic"


def _reported_words(c, rep: ReportedError | None) -> str:
  if not c.arithmetic or rep is None or c.precision not in rep.precisions:
    return ""
  could = "could be consistent" if c.tf32_optional else "consistent"
  return (
    f" ({could} with the reported {c.precision} error, {rep.device}, "
    f"jaxlib {rep.jaxlib})"
  )


def _leaf_words(leaf: str) -> str:
  """ "leaf ['new_w'] " for a pytree output's leaf, "" for one array."""
  return f"leaf {leaf} " if leaf else ""


def _is_integer(dtype: str | None) -> bool:
  return bool(dtype) and dtype.startswith(("int", "uint"))


def _row0_words(z) -> str:
  """One `RowZero` in words: its value, its error, its distance from n = 1.

  An integer output's error is against its exact value, in integer units,
  and has no ULPs (its verdict counts the differing elements).
  """
  where = f"{_ns(z.batch_sizes)}: {_leaf_words(z.leaf)}{z.row0:.7g}"
  if _is_integer(z.output_dtype):
    err = "n/a" if z.row0_abs is None else f"{z.row0_abs:.0f}"
    return f"{where} (|err| vs exact {err}; integer output: no ULPs)"
  err = "n/a" if z.row0_abs is None else f"{z.row0_abs:.2e}"
  ulp = (
    "ULP vs n = 1 n/a"
    if z.ulp_vs_n1 is None
    else f"{z.ulp_vs_n1} ULP ({z.output_dtype}) from n = 1"
  )
  return f"{where} (|err| vs f64 {err}), {ulp}"


def _row0_lines(e: TargetExplanation) -> list[str]:
  if not e.row0:
    why = "compile only" if e.compile_only else "no run reached numerics"
    return [f"not observed ({why})"]
  pairs = []
  for p in e.precisions:
    text = "; ".join(_row0_words(z) for z in e.row0 if z.precision == p)
    pairs.append((p, text))
  return [f"{_under(e, ps)}: {t}" for ps, t in _by_text(pairs) if t]


def _span(low: float | None, high: float, spec: str) -> str:
  """`high` formatted, or "low to high" where the two print differently."""
  a, b = format(high if low is None else low, spec), format(high, spec)
  return b if a == b else f"{a} to {b}"


def _share_words(share: float) -> str:
  """A site's share in [0, 1] as a percentage that never rounds to 100% or
  0% while other sites share the error: ">99%", "<1%", "100%" only for
  all of it, e.g. TF32 at three sites of which one causes 99.6%."""
  if share >= 1.0:
    return "100%"
  if share > 0.99:
    return ">99%"
  if 0 < share < 0.01:
    return "<1%"
  return f"{share:.0%}"


def _predicted_words(z) -> str:
  if z.row0_abs is None:
    return f"{_ns(z.batch_sizes)}: {z.verdict}"
  top = ""
  if z.top_site is not None:
    share = (
      ""
      if z.top_share is None
      else f" ({_share_words(z.top_share)} of the row-0 error the non-F32 "
      "sites cause one at a time)"
    )
    top = f"; top site {z.top_site}{share}"
  where = f"{_ns(z.batch_sizes)}: {_leaf_words(z.leaf)}"
  if _is_integer(z.output_dtype):
    err = _span(z.row0_abs_min, z.row0_abs, ".0f")
    return f"{where}|err| vs exact {err} (integer: no noise floor), {z.verdict}"
  err = _span(z.row0_abs_min, z.row0_abs, ".2e")
  floor = _span(z.noise_abs_min, z.noise_abs, ".1e")
  return (
    f"{where}|err| vs f64 {err} (f32 noise floor {floor}), {z.verdict}{top}"
  )


def _predicted_lines(e: TargetExplanation) -> list[str]:
  pairs = [
    (p, "; ".join(_predicted_words(z) for z in e.predicted if z.precision == p))
    for p in e.precisions
  ]
  return [f"{_under(e, ps)}: {t}" for ps, t in _by_text(pairs) if t]


def _cannot_settle(e: TargetExplanation) -> list[str]:
  if not e.compile_only:
    return []
  lines = [f"{_who(e)}: {w}" for w in e.site_selections] or [
    f"{_who(e)}: fates chosen by {e.selection}; a real {e.target} may "
    "autotune to another gemm config or emitter"
    if e.selection  # none: no compiled config had a contraction site
    else f"{_who(e)}: no fate to settle (no config compiled, or no site)"
  ]
  return lines + [_alternative_line(e, a) for a in e.alternatives]


def _who(e: TargetExplanation) -> str:
  """The target, and the experiment when it is not the baseline."""
  if e.experiment == BASELINE.name:
    return e.target
  return f"{e.target} (experiment {e.experiment})"


def _alternative_line(e: TargetExplanation, a: Alternative) -> str:
  line = (
    f"{_who(e)}: under {e.precisions[a.precision]}, {_sites(a.sites)} at "
    f"{_ns(a.batch_sizes)} {_verb(a.sites, 'are Triton gemms', 'is a Triton gemm')} "
    f"running {a.triton_algorithm or 'n/a'}; autotuning could pick "
    f"{'/'.join(a.libraries)}, whose rule gives {a.library_algorithm} "
    f"({a.rule})"
  )
  if a.elsewhere == (a.library_algorithm,):
    return line + ", as at the other batch sizes"
  if not a.elsewhere or a.library_algorithm in a.elsewhere:
    return line
  line += (
    f", against {_and(list(a.elsewhere))} at the other batch sizes, so "
    f"row 0 could depend on batch size under {a.precision} too"
  )
  explained = any(c.arithmetic for c in e.changes if c.precision == a.precision)
  rep = e.reported
  if rep and a.precision in rep.precisions:
    line += (
      f"; that could reproduce the reporter's {a.precision} error "
      f"seen with jaxlib {rep.jaxlib} on an {rep.device}"
      + ("" if explained else ", which this heuristic choice does not")
    )
  return line


def _made_lines(e: TargetExplanation) -> list[str]:
  """The configs whose module changed the math (first) or could not be
  executed, e.g. "float32, n = 8: XLA changed the math: ... (|widened
  module - float64| 9.1e+01, F32 band 4.2e-05)"."""
  lines = []
  # A change of the math first, then what could not be executed, then
  # the configs whose module does what the program asks.
  order = lambda m: (not m.changed, m.agrees)
  for m in sorted(e.made, key=order):
    label = e.precisions.get(m.precision, m.precision)
    where = f"{label}, {_ns(m.batch_sizes)}"
    size = ""
    if m.changed and m.deviation_abs is not None:
      size = (
        f" (|widened module - float64| {m.deviation_abs:.2g}, F32 band "
        f"{m.bound_abs:.2g})"
      )
    lines.append(f"{where}: {m.verdict}{size}")
  return lines + made_rows_lines(e)


def _target_block(e: TargetExplanation) -> list[str]:
  head = f"{e.case} on {e.target}" + (
    "" if e.experiment == BASELINE.name else f" (experiment {e.experiment})"
  )
  mode = "compile only" if e.compile_only else "compiled and run"
  out = [f"{head} ({mode}):"]
  made = _made_lines(e)
  if made:
    out.append("  What XLA made (the optimized module executed):")
    out += [f"    {line}" for line in made]
  out.append("  Fates by batch size:")
  spans = _by_text((p, "\n".join(_span_lines(s))) for p, s in e.spans.items())
  for ps, text in spans:
    out.append(f"    {_under(e, ps)}:")
    out += [f"      {line}" for line in text.split("\n")]
  for title, lines in (
    ("Effective algorithms", _algorithm_lines(e) + kernel_model_lines(e)),
    ("What changes with batch size", _change_lines(e)),
    ("Row 0", _row0_lines(e)),
    (
      "Row 0 predicted (emulating each site's effective algorithm)",
      _predicted_lines(e),
    ),
    (
      "Rows beyond row 0 (every row judged)"
      if not e.judged
      else "Rows beyond row 0 (the rows judged below)",
      rows_lines(e),
    ),
    ("Rows judged", list(e.judged)),
    ("Notes", list(e.notes)),
  ):
    if lines:
      out.append(f"  {title}:")
      out += [f"    {line}" for line in lines]
  return out


def render_explanation(
  explanations: Sequence[TargetExplanation], width: int = 100, host=None
) -> str:
  """Words the explanations, target by target, then what stays unsettled.

  Args:
    explanations: `explain`'s records.
    width: wrap lines at this many characters.
    host: the `host.HostCpu` that computed the CPU numbers, or None.
  """
  lines = []
  for e in explanations:
    lines += _target_block(e) + [""]
  unsettled = [line for e in explanations for line in _cannot_settle(e)]
  lines.append("What this cannot settle without a real device:")
  lines += [f"  - {line}" for line in unsettled] or [
    "  - nothing: every target here compiled and ran"
  ]
  if host is not None:
    lines += [
      "",
      f"CPU numbers (cpu rows, every emulation) computed on {host.describe()};"
      " their f32 sum order, and so their last digits, follow that ISA.",
    ]
  return "\n".join(_wrap(line, width) for line in lines)


def _wrap(line: str, width: int) -> str:
  """Wraps one line under its own indent, never inside "n = 2-9"."""
  indent = len(line) - len(line.lstrip())
  extra = 4 if line.lstrip().startswith("- ") else 2
  glued = line.replace("n = ", "n\x01=\x01")
  return textwrap.fill(
    glued,
    width,
    subsequent_indent=" " * (indent + extra),
    break_on_hyphens=False,
    break_long_words=False,
  ).replace("\x01", " ")


def _record_json(e: TargetExplanation) -> dict:
  """One explanation as a JSON object (see the module docstring)."""
  doc = dataclasses.asdict(e)
  for spans in doc["spans"].values():
    for span in spans:
      span["groups"] = [
        {"sites": list(sites), "fate": fate, "how": how}
        for sites, fate, how in span["groups"]
      ]
  for change in doc["changes"]:
    change["steps"] = [
      {"batch_sizes": list(ns), "fate": fate, "algorithm": algorithm}
      for ns, fate, algorithm in change["steps"]
    ]
  # A worst row's `whole` (how a large program's rows were picked) is in
  # the judged lines' words, not a field of the schema.
  for beyond in (*doc["rows"], *doc["made_rows"]):
    beyond["worst"].pop("whole", None)
  return doc


def explanation_json(
  explanations: Sequence[TargetExplanation], host=None
) -> dict:
  """`explain`'s records as one JSON document (schema in the module doc).

  `host` (a `host.HostCpu` or None) is the CPU that computed the numbers.

  The caller renders it (`results_schema.dumps_json`: strict JSON, non-finite
  floats as null).
  """
  return {
    "schema": "hloprobe.explain",
    "schema_version": SCHEMA_VERSION,
    "host": host.as_json() if host is not None else None,
    "explanations": [_record_json(e) for e in explanations],
  }
