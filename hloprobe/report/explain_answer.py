"""`explain`'s answer first: the worst finding, then what to do.

`render_answered` prints, before `explain_text.render_explanation`'s
account (whose targets it orders worst first):

  Answer: <the worst finding (`verify.Finding`): case, target, batch sizes,
          precisions, the error and how many times its band it is, the
          verdict naming the sites and algorithm, what XLA made of them>
  Next:   <the second finding, when there is one, and how many more>
  Do:     <the first fix that passed, its cost, its `hloprobe verify`
          command>
  What to do (fixes tried on the configs at fault, judged as `verify`
  judges):
    passes: <each fix that passed, its cost and command>
    fails:  <each fix that did not, in one line: what it left>
  Findings, worst first: (only when there are several) one line each.

"No finding: every config within its band" when `verify`'s "accurate"
requirement holds on every config. The answer lines are not wrapped (a
command is copied whole). Like the rest of explain's text, this is for
people, not a stable format; `answer_json` gives machines the records.

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from hloprobe.report.explain_records import TargetExplanation
from hloprobe.report.explain_text import _and, _numbers, render_explanation
from hloprobe.verify import Candidate, Finding, FixTrial, times_words

__all__ = ["Answer", "answer_json", "answer_lines", "render_answered"]


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
  """What `explain` answers first.

  Attributes:
    findings: the sweep's findings, worst first (`verify.find_findings`).
    trials: the candidate fixes tried, passing ones first
      (`verify.judge_tries`); () when none was tried.
    untried: candidates that apply but were not tried, each with its
      `verify` command, as (candidate, command).
    not_tried: why no fix was tried (e.g. "--notry_fixes"), or None when
      they were or when there is no finding.
  """

  findings: tuple[Finding, ...]
  trials: tuple[FixTrial, ...] = ()
  untried: tuple[tuple[Candidate, str], ...] = ()
  not_tried: str | None = None


def _where(f: Finding) -> str:
  """E.g. "seed_mlp on a100 (compile only), n = 2-9, under bfloat16 and
  tensorfloat32"."""
  head = f"{f.case} on {f.target}"
  if f.experiment != "baseline":
    head += f" (experiment {f.experiment})"
  mode = " (compile only)" if f.compile_only else ""
  return (
    f"{head}{mode}, n = {_numbers(f.batch_sizes)}, under "
    f"{_and(list(f.precisions))}"
  )


def finding_words(f: Finding) -> str:
  """One finding in a line: where, how far, what, which sites became what.

  E.g. "seed_mlp on a100 (compile only), n = 2-9, under bfloat16 and
  tensorfloat32: row 0 |err| vs f64 6.10e-01 (predicted), 6100x the f32
  noise floor 1.0e-04: explained by TF32_TF32_F32 at sites [0, 1, 2];
  XLA made them Triton gemm (triton-gemm-rewriter)".
  """
  size = ""
  if f.kind == "integer" or f.kind == "leaf":
    size = "integer or leaf verdict (exact is its band): "
  elif f.ratio is not None and f.error_abs is not None:
    what = {"row 0": "row 0 |err| vs f64", "row": "worst row |err| vs f64"}
    label = what.get(f.kind, "|widened module - f64|")
    source = f" ({f.source})" if f.source else ""
    size = (
      f"{label} {f.error_abs:.2e}{source}, {times_words(f.ratio, f.error_abs)} the "
      f"{f.floor_words} {f.floor_abs:.1e}: "
    )
  made = f"; XLA made them {_and(list(f.fates))}" if f.fates else ""
  return f"{_where(f)}: {size}{f.what}{made}"


def _fix_words(t: FixTrial | Candidate) -> str:
  c = t.candidate if isinstance(t, FixTrial) else t
  return f"{c.words} ({c.cost})"


def answer_lines(answer: Answer) -> list[str]:
  """The answer in lines (see the module docstring); not wrapped."""
  if not answer.findings:
    return ["Answer: no finding: every config within its band."]
  first, rest = answer.findings[0], answer.findings[1:]
  lines = [f"Answer: {finding_words(first)}"]
  if rest:
    more = f" (and {len(rest) - 1} more below)" if len(rest) > 1 else ""
    lines.append(f"Next: {finding_words(rest[0])}{more}")
  lines += _do_lines(answer)
  if rest:
    lines.append("Findings, worst first:")
    lines += [f"  - {finding_words(f)}" for f in answer.findings]
  return lines


def _do_lines(answer: Answer) -> list[str]:
  """ "Do: ..." and the fixes tried (passing first) or not tried."""
  passed = [t for t in answer.trials if t.passed]
  failed = [t for t in answer.trials if not t.passed and t.judged]
  unjudged = [t for t in answer.trials if not t.passed and not t.judged]
  if passed:
    top = passed[0]
    lines = [f"Do: {_fix_words(top)} passes: {top.command}"]
  elif failed:
    more = f"; {len(unjudged)} not judged" if unjudged else ""
    lines = [f"Do: none of the {len(failed)} fixes tried passed{more} (below)"]
  elif unjudged:  # a fix that could not be judged has not failed
    lines = [
      f"Do: no fix could be judged ({len(unjudged)} tried: "
      f"{unjudged[0].reason})"
    ]
  elif answer.not_tried:
    lines = [f"Do: fixes not tried ({answer.not_tried})"]
  else:
    lines = ["Do: no candidate fix applies to these findings"]
  if answer.trials:
    lines.append(
      "What to do (fixes tried on the configs at fault, judged as "
      "`hloprobe verify` judges them):"
    )
    lines += [
      f"  passes: {_fix_words(t)}: {t.reason}: {t.command}" for t in passed
    ]
    lines += [f"  fails: {_fix_words(t)}: {t.reason}" for t in failed]
    lines += [f"  not judged: {_fix_words(t)}: {t.reason}" for t in unjudged]
  if answer.untried:
    lines.append("What to try (not tried here):")
    lines += [f"  {_fix_words(c)}: {cmd}" for c, cmd in answer.untried]
  return lines


def _order(
  explanations: Sequence[TargetExplanation], findings: Sequence[Finding]
) -> list[TargetExplanation]:
  """Worst target first: by the rank of its worst finding; targets with
  none after, in their order."""
  first: dict[tuple, int] = {}
  for i, f in enumerate(findings):
    first.setdefault((f.experiment, f.case, f.target), i)
  key = lambda e: first.get((e.experiment, e.case, e.target), len(findings))
  return sorted(explanations, key=key)


def render_answered(
  explanations: Sequence[TargetExplanation],
  answer: Answer,
  width: int = 100,
  host=None,
) -> str:
  """The answer, a blank line, then `render_explanation`'s account with
  the worst target first."""
  detail = render_explanation(
    _order(explanations, answer.findings), width=width, host=host
  )
  return "\n".join(answer_lines(answer) + ["", detail])


def _finding_json(f: Finding) -> dict:
  doc = dataclasses.asdict(f)
  if f.ratio is not None and math.isinf(f.ratio):
    doc["ratio"] = "inf"
  return doc


def answer_json(answer: Answer) -> dict:
  """The answer as JSON, `explain --format=json`'s "answer" (added in
  schema version 1 without a bump: readers ignore it):
    {"findings": [Finding fields; ratio "inf" for an exact band],
     "fixes": [{"fix", "words", "cost", "tried": true, "passed", "judged"
       (false: nothing could be compared, not a failure), "reason",
       "command"}, ... then the untried {"tried": false, "command"}],
     "not_tried": why none was tried, or null}
  """
  fixes = [
    {
      **dataclasses.asdict(t.candidate),
      "tried": True,
      "passed": t.passed,
      "judged": t.judged,
      "reason": t.reason,
      "command": t.command,
    }
    for t in answer.trials
  ] + [
    {**dataclasses.asdict(c), "tried": False, "command": cmd}
    for c, cmd in answer.untried
  ]
  return {
    "findings": [_finding_json(f) for f in answer.findings],
    "fixes": fixes,
    "not_tried": answer.not_tried,
  }
