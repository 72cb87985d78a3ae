"""`explain`'s answer as the HTML page draws it: the finding table, then
what to do, in words (`pictures`' templates/answer.html.j2 makes the HTML).

`answer_view` turns an `Answer` into what that template draws: one row per
cause (`findings.group_causes`: its where, the effective
algorithm, the sites with their source lines, the batch sizes and
precisions, the worst error and the fix as a code change), then `Do:`
(the first fix that passed, as the change to make), its `hloprobe verify`
command, the other fixes folded, and the batch-invariance answer one line
per cause, as `explain` prints them. `cause_of` names each config's
cause, so that the configs table groups its rows by finding.
`page_words` gives every word of the page at once (`PageWords`: the sweep
and site tables' cells, the explanation's text and the answer's view).

Computes nothing new: the words are `explain_answer`'s (`answer_line`),
`findings`' (`code_change`) and `invariance`'s (`first_lines`). Private in
intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

from hloprobe.report.explain_answer import Answer, answer_line
from hloprobe.report.explain_text import render_explanation
from hloprobe.report.findings import (
  Cause,
  call_example,
  code_change,
  group_causes,
)
from hloprobe.report.invariance_words import first_lines
from hloprobe.report.tables import cells
from hloprobe.report.verdict_words import (
  floor_words,
  times_words,
  trial_words,
  what_words,
)

__all__ = [
  "AnswerView",
  "FindingRow",
  "PageWords",
  "answer_view",
  "cause_of",
  "page_words",
]


@dataclasses.dataclass(frozen=True, slots=True)
class FindingRow:
  """One cause in the finding table (every field is text).

  Attributes:
    number: "1", "2", ... (the configs table's "finding" column).
    where: case on target (and experiment), e.g. "seed_mlp on a100
      (compile only)".
    cause: the algorithm and what XLA made of the sites, e.g.
      "TF32_TF32_F32, Triton gemm (triton-gemm-rewriter)", or the
      finding's words where it names no site.
    sites: the sites at fault, e.g. "sites 0-2"; "" where none is named.
    lines: each site's (source line, its code), e.g. ("my.py:17",
      "h = x @ w1"), each line once; code "" where unread.
    sizes: the batch sizes and precisions, e.g. "n = 2-9 under bfloat16
      and tensorfloat32".
    error: the worst error, its band, row and config.
    fix: the change that passed, or why there is none.
  """

  number: str
  where: str
  cause: str
  sites: str
  lines: tuple[tuple[str, str], ...]
  sizes: str
  error: str
  fix: str


@dataclasses.dataclass(frozen=True, slots=True)
class AnswerView:
  """What answer.html.j2 draws.

  Attributes:
    headline: the answer's first line (`explain_answer.answer_line`).
    rows: the finding table, worst cause first; () for no finding.
    do: the change to make (the first fix that passed), or why none.
    command: its `hloprobe verify` command, or None.
    checked_by: how that command checks the change, or None.
    others: the other fixes, one line each (what each left, its command).
    invariance: the batch-invariance answer, one line per cause
      (`first_lines(..., folded=True)`), () where not asked.
    causes: each result given to `answer_view`'s cause number ("1", "2",
      ...; "" for none: `cause_of`), so that the configs table groups its
      rows by finding; () where none was given.
  """

  headline: str
  rows: tuple[FindingRow, ...]
  do: str
  command: str | None
  checked_by: str | None
  others: tuple[str, ...]
  invariance: tuple[str, ...] = ()
  causes: tuple[str, ...] = ()


def _error(c: Cause) -> str:
  f = c.worst
  if f.ratio is None or f.error_abs is None:
    return what_words(f)
  row = f"row {f.row}" if f.row is not None else "the output"
  where = ""
  if f.worst_n is not None:
    where = f", at n = {f.worst_n} under {f.worst_precision}"
  source = f" ({f.source})" if f.source else ""
  return (
    f"{row}: {f.error_abs:.2e}{source}, {times_words(f.ratio, f.error_abs)} "
    f"the {floor_words(f)} {f.floor_abs:.1e}{where}"
  )


def _fix_words(answer: Answer) -> str:
  passed = [t for t in answer.trials if t.passed]
  if passed:
    change = code_change(passed[0].candidate)
    if change.code:
      return f"{change.on_call} on these calls, or {change.around} around them"
    return f"{change.flags} (no code change exists)"
  if answer.trials:
    return f"none of the {len(answer.trials)} fixes tried passed"
  return f"not tried ({answer.not_tried})" if answer.not_tried else "none"


def _row(i: int, c: Cause, fix: str) -> FindingRow:
  f = c.worst
  where = f"{f.case} on {f.target}"
  if f.experiment != "baseline":
    where += f" (experiment {f.experiment})"
  where += " (compile only)" if f.compile_only else ""
  if c.lines and c.algorithms:
    algos = ", ".join(a or "unsettled" for a in c.algorithms)
    cause = "; ".join([algos, *c.fates])
  else:
    cause = what_words(f)
  lines = tuple(dict.fromkeys((s.short, s.code or "") for s in c.lines))
  sites = c.sites_words() if c.lines else ""
  sizes = c.sizes_words()
  return FindingRow(str(i), where, cause, sites, lines, sizes, _error(c), fix)


def answer_view(answer: Answer, results: Sequence = ()) -> AnswerView:
  """`answer` as the page's answer: the finding table and what to do, and
  each of `results`' (`records.ConfigResult`s) cause number (`cause_of`)."""
  causes = group_causes(answer.findings)
  fix = _fix_words(answer)
  rows = tuple(_row(i, c, fix) for i, c in enumerate(causes, 1))
  passed = [t for t in answer.trials if t.passed]
  top = passed[0] if passed else None
  others = tuple(
    f"{'passes' if t.passed else 'fails'}: {t.candidate.words} "
    f"({t.candidate.cost}): {trial_words(t)}: {t.command}"
    for t in answer.trials
    if t is not top
  )
  # Where some were tried, why these were not (a fix before them passed),
  # as the console's "Not tried (...)" line says it.
  why = f" ({answer.not_tried})" if answer.trials and answer.not_tried else ""
  others += tuple(
    f"not tried{why}: {c.words} ({c.cost}): {cmd}" for c, cmd in answer.untried
  )
  if not causes:
    do = "nothing: every config is within its band"
  elif top is not None:
    change = code_change(top.candidate)
    places = ", ".join(dict.fromkeys(s.short for c in causes for s in c.lines))
    if change.code:
      do = (
        f"{change.on_call} on the calls at {places or 'the sites at fault'}"
        f" ({call_example(causes, change.on_call).replace('`', '')}), or "
        f"with {change.around}: around them ({top.candidate.cost})"
      )
    else:
      do = f"{change.flags} in the environment (an XLA flag: no code change)"
  else:
    do = fix
  return AnswerView(
    answer_line(answer).removeprefix("Answer: "),
    rows,
    do,
    top.command if top else None,
    code_change(top.candidate).checked_by if top else None,
    others,
    tuple(
      line.strip()
      for line in first_lines(answer.invariance, answer.pins, folded=True)[1:]
    ),
    tuple(cause_of(answer, results)),
  )


def cause_of(answer: Answer | None, results: Sequence) -> list[str]:
  """Each result's cause number ("1", "2", ...; "" for none), by its
  experiment, case, target, precision and batch size."""
  if answer is None:
    return [""] * len(results)
  found: dict[tuple, str] = {}
  for i, c in enumerate(group_causes(answer.findings), 1):
    for f in c.findings:
      for p in f.precisions:
        for n in f.batch_sizes:
          key = (f.experiment, f.case, f.target, str(p), n)
          found.setdefault(key, str(i))
  return [
    found.get(
      (
        r.config.experiment,
        r.config.case,
        r.config.target.name,
        str(r.config.precision),
        r.config.n,
      ),
      "",
    )
    for r in results
  ]


@dataclasses.dataclass(frozen=True)
class PageWords:
  """The words of the HTML report (`pictures` makes them its HTML).

  Attributes:
    results: the sweep's `records.ConfigResult`s, in the order given.
    explanation: the explanations' text (`explain_text.render_explanation`),
      or None where none were given.
    answer: explain's answer as the page draws it (`answer_view`, each
      result's cause number in its `causes`), or None where none was given.
  """

  results: tuple
  explanation: str | None = None
  answer: AnswerView | None = None

  @functools.cached_property
  def configs(self) -> tuple[list[str], list[list[str]]]:
    """The sweep table as (headers, rows of cell text), every column
    (`tables.cells`), one row per result; made when first asked for."""
    return cells(list(self.results))

  @functools.cached_property
  def sites(self) -> tuple[list[str], list[list[str]]]:
    """The contraction-site table likewise (`tables.cells(...,
    sites=True)`: one row per site per config); made when first asked for."""
    return cells(list(self.results), sites=True)


def page_words(
  results: Sequence,
  explanations: Sequence | None = None,
  answer: Answer | None = None,
) -> PageWords:
  """The HTML report's words for `results` (`records.ConfigResult`s, at
  least one), their `explanations` (`explain.explain_results`' records, or
  None) and explain's `answer` (or None); the tables' cells are made when
  first asked for."""
  results = tuple(results)
  return PageWords(
    results,
    None if explanations is None else render_explanation(explanations),
    None if answer is None else answer_view(answer, results),
  )
