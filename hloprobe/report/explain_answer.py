"""`explain`'s answer, first and last: the worst cause, then what to do.

The findings (`verify.Finding`) are grouped by cause first
(`findings.group_causes`: one per sites, algorithm and fate, across batch
sizes, rows and precisions). `render_answered` prints one screen. The
bitwise question's answer, where it was asked (`first_lines`:
which batch sizes give row 0 and the anchor row the same bits, and the
pin), opens it when nothing is at fault; with a finding it follows the
`Do:` block, one line per cause (`--verbose`: per precision, with each
kernel's arithmetic per n and each pin's command).

  Answer: <the worst cause: case, target, the effective algorithm at the
          sites at fault with their source lines (my.py:17 `h = x @
          w1`), what XLA made of them, the worst error (its row, batch
          size and precision) and how many times its band it is, every
          batch size and precision it holds at>
  Do:     <the first fix that passed, as the change to make at those
          lines in JAX (`findings.code_change`): `precision=` on the
          calls or `jax.default_matmul_precision` around them; XLA_FLAGS
          where no code change exists>
  Verify (PASS): <its `hloprobe verify` command>
    (<how that command checks the code change>)
  Other fixes tried: one line each (--verbose: what each left, its
    command)
  Batch invariance, by cause: one line per cause (where asked)
  Findings by cause, worst first: (only when there are several)
  Per target: one line each, the detail folded (--verbose prints
    `explain_text.render_explanation`'s account instead)
  Not settled without a real device: the compile-only targets
  Answer: <the first line again, as pytest's summary ends a run>

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
from hloprobe.report.explain_text import (
  _and,
  _numbers,
  explanation_json,
  render_explanation,
)
from hloprobe.report.findings import (
  Cause,
  call_example,
  code_change,
  group_causes,
)
from hloprobe.report.invariance_words import (
  apart_words,
  first_lines,
  invariance_json,
)
from hloprobe.report.results_schema import dumps_json
from hloprobe.report.verdict_words import (
  floor_words,
  times_words,
  trial_words,
  what_words,
)
from hloprobe.verify import Candidate, Finding, FixTrial

__all__ = [
  "Answer",
  "answer_json",
  "answer_line",
  "answer_lines",
  "cause_lines",
  "render_answered",
]


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
  """What `explain` answers first.

  Attributes:
    findings: the sweep's findings, worst first (`verify.find_findings`).
    trials: the candidate fixes tried, passing ones first
      (`verify.judge_tries`); () when none was tried.
    untried: candidates that apply but were not tried, each with its
      `verify` command, as (candidate, command).
    not_tried: why no fix was tried (e.g. "--notry_fixes"), or, where
      some were, why `untried` were not (a fix before them passed); None
      when every candidate was tried or when there is no finding.
    invariance: the batch-invariance answer of each group
      (`invariance.Invariance`), printed before everything else; ().
    pins: the settings searched to pin the rows (`invariance.Pin`), the
      bitwise question's "Do:"; ().
  """

  findings: tuple[Finding, ...]
  trials: tuple[FixTrial, ...] = ()
  untried: tuple[tuple[Candidate, str], ...] = ()
  not_tried: str | None = None
  invariance: tuple = ()
  pins: tuple = ()

  def cause_lines(self, title: str) -> list[str]:
    """`title`, then one line per cause of the findings, numbered, worst
    first (`cause_lines`); [] when there is no finding."""
    return cause_lines(self.findings, title)


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
      f"{floor_words(f)} {f.floor_abs:.1e}: "
    )
  made = f"; XLA made them {_and(list(f.fates))}" if f.fates else ""
  return f"{_where(f)}: {size}{what_words(f)}{made}"


def _cause_words(c: Cause) -> str:
  """A cause in a line: where, the algorithm at the sites and their source
  lines, what XLA made of them, the worst error (its row, batch size and
  precision), and every batch size and precision it holds at.

  E.g. "seed_mlp on a100 (compile only): TF32_TF32_F32 at sites 0-2
  (builtin_cases.py:60 `h = x @ w1`, ...), made Triton gemm
  (triton-gemm-rewriter): row 0 |err| vs f64 6.10e-01 (predicted), 6029x
  the f32 noise floor 1.0e-04, worst at n = 2 under bfloat16; at n = 2-9
  under bfloat16 and tensorfloat32". A cause without sites (a failed
  stage, an integer verdict) reads as its finding does.
  """
  f = c.worst
  if not c.lines or not c.algorithms:
    return finding_words(
      dataclasses.replace(f, batch_sizes=c.batch_sizes, precisions=c.precisions)
    )
  head = f"{f.case} on {f.target}"
  if f.experiment != "baseline":
    head += f" (experiment {f.experiment})"
  head += " (compile only)" if f.compile_only else ""
  algos = _and([a or "an unsettled algorithm" for a in c.algorithms])
  sites = c.sites_words()
  lines = ", ".join(dict.fromkeys(s.words() for s in c.lines))
  made = f", made {_and(list(c.fates))}" if c.fates else ""
  size = ""
  if f.ratio is not None and f.error_abs is not None:
    row = f"row {f.row}" if f.row is not None else "the output"
    label = (
      "|widened module - f64|"
      if f.kind == "changed the math"
      else f"{row} |err| vs f64"
    )
    source = f" ({f.source})" if f.source else ""
    size = (
      f": {label} {f.error_abs:.2e}{source}, "
      f"{times_words(f.ratio, f.error_abs)} the {floor_words(f)} "
      f"{f.floor_abs:.1e}"
    )
  elif f.kind != "row 0" and f.kind != "row":
    size = f": {what_words(f)}"
  worst = ""
  if f.worst_n is not None:
    worst = f", worst at n = {f.worst_n} under {f.worst_precision}"
  return (
    f"{head}: {algos} at {sites} ({lines}){made}{size}{worst}; at "
    f"n = {_numbers(c.batch_sizes)} under {_and(list(c.precisions))}"
  )


def _all_lines(causes: Sequence[Cause]) -> str:
  """Every site at fault's source line, once: "my.py:17, my.py:19"."""
  found = dict.fromkeys(s.short for c in causes for s in c.lines)
  return ", ".join(found) or "the sites at fault"


def _change_words(c: Candidate, causes: Sequence[Cause]) -> str:
  """The fix as the change to make at the lines at fault (`Do:`)."""
  change = code_change(c)
  if not change.code:
    return (
      f"{change.flags} in the environment (an XLA flag: no code change "
      f"exists; {c.cost})"
    )
  return (
    f"{change.on_call} on the calls at {_all_lines(causes)} "
    f"({call_example(causes, change.on_call)}), or `with {change.around}:` "
    f"around them ({c.cost})"
  )


def _short_change(c: Candidate) -> str:
  change = code_change(c)
  if not change.code:
    return f"{change.flags} ({c.cost})"
  return f"{change.on_call} or {change.around} ({c.cost})"


def cause_lines(findings: Sequence[Finding], title: str) -> list[str]:
  """`title`, then one line per cause of `findings` (`group_causes`),
  numbered, worst first: as `explain` lists them, for `sweep`'s table and
  the pytest plugin's failure message. [] when there is no finding."""
  causes = group_causes(findings)
  if not causes:
    return []
  return [title] + [
    f"  {i}. {_cause_words(c)}" for i, c in enumerate(causes, 1)
  ]


# The accuracy answer where no config is outside its band.
_NO_FINDING = "no finding: every config within its band"


def answer_line(answer: Answer) -> str:
  """The first line alone ("Answer: ..."), as `explain` repeats it last.
  With no accuracy finding but rows whose bits depend on the batch size,
  the bitwise answer leads and the accuracy one is scoped: "Answer: bits
  not batch-invariant on cpu and a100 under float32; accuracy: no
  finding: every config within its band."."""
  if not answer.findings:
    apart = apart_words(answer.invariance)
    if apart:
      return f"Answer: bits {apart}; accuracy: {_NO_FINDING}."
    return f"Answer: {_NO_FINDING}."
  causes = group_causes(answer.findings)
  more = len(causes) - 1
  tail = f" (and {more} more cause{'s' if more > 1 else ''} below)"
  return f"Answer: {_cause_words(causes[0])}{tail if more else ''}"


def answer_lines(answer: Answer, verbose: bool = False) -> list[str]:
  """The answer in lines (see the module docstring); not wrapped.

  Args:
    answer: the findings and the fixes.
    verbose: also each fix's reason and `verify` command, and every
      finding as `verify` found it (before grouping by cause).
  """
  if not answer.findings:
    if apart_words(answer.invariance):
      # After the bitwise answer, which the last line repeats: scoped,
      # not a second "Answer:" that reads as its contradiction.
      return [f"Accuracy: {_NO_FINDING}; the bitwise answer above stands."]
    return [answer_line(answer)]
  causes = group_causes(answer.findings)
  lines = [answer_line(answer)]
  lines += _do_lines(answer, causes, verbose)
  if len(causes) > 1:
    lines += cause_lines(answer.findings, "Findings by cause, worst first:")
  if verbose and len(answer.findings) > len(causes):
    lines.append("Findings as found (before grouping by cause):")
    lines += [f"  - {finding_words(f)}" for f in answer.findings]
  return lines


def _do_lines(
  answer: Answer, causes: Sequence[Cause], verbose: bool
) -> list[str]:
  """ "Do: ..." (the first fix that passed, as a change to the code at the
  lines at fault), its `verify` command, then the other fixes."""
  passed = [t for t in answer.trials if t.passed]
  failed = [t for t in answer.trials if not t.passed and t.judged]
  unjudged = [t for t in answer.trials if not t.passed and not t.judged]
  if passed:
    top = passed[0]
    lines = [
      f"Do: {_change_words(top.candidate, causes)}",
      f"Verify (PASS): {top.command}",
      f"  ({code_change(top.candidate).checked_by})",
    ]
  elif failed:
    more = f"; {len(unjudged)} not judged" if unjudged else ""
    n = len(failed)
    lines = [
      f"Do: none of the {n} {'fix' if n == 1 else 'fixes'} tried "
      f"passed{more} (below)"
    ]
  elif unjudged:  # a fix that could not be judged has not failed
    lines = [
      f"Do: no fix could be judged ({len(unjudged)} tried: "
      f"{trial_words(unjudged[0])})"
    ]
  elif answer.not_tried:
    lines = [f"Do: fixes not tried ({answer.not_tried})"]
  else:
    lines = ["Do: no candidate fix applies to these findings"]
  others = [t for t in answer.trials if not passed or t is not passed[0]]
  if others:
    lines.append("Other fixes tried (judged as `hloprobe verify` judges them):")
    for t in others:
      verdict = (
        "passes" if t.passed else ("fails" if t.judged else "not judged")
      )
      line = f"  {verdict}: {_short_change(t.candidate)}"
      if verbose:
        line += f": {trial_words(t)}: {t.command}"
      else:
        line += f": --fix={t.candidate.fix}"
      lines.append(line)
  if answer.untried and answer.trials and answer.not_tried:
    # As the fixes tried: the `verify` command is the one above but for
    # its --fix, whole under --verbose.
    lines.append(f"Not tried ({answer.not_tried}):")
    lines += [
      f"  {_short_change(c)}: {cmd if verbose else f'--fix={c.fix}'}"
      for c, cmd in answer.untried
    ]
  elif answer.untried:
    lines.append("What to try (not tried here):")
    lines += [f"  {_short_change(c)}: {cmd}" for c, cmd in answer.untried]
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


def _target_line(e: TargetExplanation, causes: Sequence[Cause]) -> str:
  """One target, folded: its causes' sites and algorithms, or none."""
  head = f"{e.case} on {e.target}"
  if e.experiment != "baseline":
    head += f" (experiment {e.experiment})"
  head += " (compile only)" if e.compile_only else " (compiled and run)"
  mine = [
    c
    for c in causes
    if (c.worst.experiment, c.worst.case, c.worst.target)
    == (e.experiment, e.case, e.target)
  ]
  if not mine:
    return f"  {head}: no finding: every config within its band"
  words = [
    f"{_and([a or 'unsettled' for a in c.algorithms])} at "
    f"site{'s' if len(c.sites) > 1 else ''} {_numbers(c.sites)}"
    if c.lines
    else c.worst.kind
    for c in mine
  ]
  n = len(mine)
  return f"  {head}: {n} cause{'s' if n > 1 else ''}: {'; '.join(words)}"


# `explain --only=invariance`'s last line: what it did not compute.
BITS_ONLY_LAST = (
  "Bits only (--only=invariance): no float64 reference, prediction or "
  "accuracy answer; explain without --only adds them."
)


def render_answered(
  explanations: Sequence[TargetExplanation],
  answer: Answer,
  width: int = 100,
  host=None,
  verbose: bool = False,
  fmt: str = "table",
  bits_only: bool = False,
) -> str:
  """`explain`'s text: the answer first and last.

  By default one screen: the answer, `Do:`, one line per cause, one line
  per target (its detail folded) and what compile-only targets leave
  open, then the answer again. With `verbose`, the fixes' reasons and
  commands and `render_explanation`'s account (worst target first)
  instead of the folded lines.

  With `fmt="json"`, `explain --format=json`'s document instead: the
  explanations (`explain_text.explanation_json`, `host` the CPU that
  computed the numbers) with the answer under "answer" (`answer_json`),
  as strict JSON (`results_schema.dumps_json`: non-finite floats as
  null); `width` and `verbose` do not apply.

  With `bits_only` (`explain --only=invariance`: no accuracy numerics),
  the bitwise answer alone (`first_lines`: every group, the
  kernels per n, the pins) and a last line saying what was left out; its
  JSON is the same document, with no explanation and no finding.
  """
  if fmt == "json":
    doc = explanation_json(explanations, host)
    return dumps_json({**doc, "answer": answer_json(answer)})
  if bits_only:
    lines = first_lines(answer.invariance, answer.pins) or [
      "No batch-invariance answer: no (case, target, precision) swept two "
      "batch sizes or more."
    ]
    return "\n".join([*lines, "", BITS_ONLY_LAST])
  ordered = _order(explanations, answer.findings)
  # The bitwise answer opens the output when nothing is at fault; with a
  # finding, after its Answer and Do lines (issue 39: the first three
  # lines name the algorithm, the lines at fault and the change), folded
  # to one line per cause unless verbose.
  lines = answer_lines(answer, verbose)
  at = 0
  if answer.findings:
    causes = group_causes(answer.findings)
    at = 1 + len(_do_lines(answer, causes, verbose))
  first = first_lines(
    answer.invariance,
    answer.pins,
    kernels=verbose or not at,
    folded=bool(at) and not verbose,
  )
  lines = lines[:at] + first + lines[at:]
  if verbose:
    detail = render_explanation(ordered, width=width, host=host)
    return "\n".join(lines + ["", detail, "", answer_line(answer)])
  causes = group_causes(answer.findings)
  # Each target's accuracy; with a bitwise finding and no accuracy one,
  # titled so, as its "no finding" is not the bits'.
  scoped = not answer.findings and apart_words(answer.invariance)
  title = "Per target, accuracy" if scoped else "Per target"
  lines += ["", f"{title} (the detail: --verbose):"]
  lines += [_target_line(e, causes) for e in ordered]
  open_ = list(dict.fromkeys(e.target for e in ordered if e.compile_only))
  if open_:
    lines.append(
      f"Not settled without a real device: {_and(open_)} (compile only: "
      "the gemm each site became is XLA's heuristic choice, not autotuned; "
      "--verbose)"
    )
  return "\n".join(lines + ["", answer_line(answer)])


def _finding_json(f: Finding) -> dict:
  doc = dataclasses.asdict(f) | {"what": what_words(f)}
  if f.ratio is not None and math.isinf(f.ratio):
    doc["ratio"] = "inf"
  return doc


def _cause_json(c: Cause, findings: Sequence[Finding]) -> dict:
  return {
    "findings": [findings.index(f) for f in c.findings],
    "sites": [dataclasses.asdict(s) for s in c.lines],
    "algorithms": list(c.algorithms),
    "fates": list(c.fates),
    "batch_sizes": list(c.batch_sizes),
    "precisions": list(c.precisions),
  }


def answer_json(answer: Answer) -> dict:
  """The answer as JSON, `explain --format=json`'s "answer" (added in
  schema version 1 without a bump: readers ignore it):
    {"findings": [Finding fields; ratio "inf" for an exact band],
     "causes": [{"findings": indices into findings, worst first,
       "sites": [{"site", "location": "file:line" or null, "code": the
       line's text or null}], "algorithms", "fates", "batch_sizes",
       "precisions"}], one per cause (`findings.group_causes`), worst
       first,
     "fixes": [{"fix", "words", "cost", "code_change": {"code", "on_call",
       "around", "flags", "checked_by"} (`findings.code_change`), "tried":
       true, "passed", "judged" (false: nothing could be compared, not a
       failure), "reason", "command"}, ... then the untried
       {"tried": false, "command"}],
     "not_tried": why none was tried (or, where some were, why the
       untried were not: a fix before them passed), or null}
  """
  fixes = [
    {
      **dataclasses.asdict(t.candidate),
      "code_change": dataclasses.asdict(code_change(t.candidate)),
      "tried": True,
      "passed": t.passed,
      "judged": t.judged,
      "reason": trial_words(t),
      "command": t.command,
    }
    for t in answer.trials
  ] + [
    {
      **dataclasses.asdict(c),
      "code_change": dataclasses.asdict(code_change(c)),
      "tried": False,
      "command": cmd,
    }
    for c, cmd in answer.untried
  ]
  return {
    "findings": [_finding_json(f) for f in answer.findings],
    "causes": [
      _cause_json(c, answer.findings) for c in group_causes(answer.findings)
    ],
    "fixes": fixes,
    "not_tried": answer.not_tried,
    "invariance": invariance_json(answer.invariance, answer.pins),
  }
