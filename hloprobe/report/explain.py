"""Why row 0 depends on batch size and precision, told from a sweep's records.

`explain` reads the `ConfigResult`s of a sweep run with
`SweepSpec.explain_passes=True` and returns one `TargetExplanation` per
(experiment, case, target): which dot sites change fate between which batch
sizes and the pass responsible (`FateSpan`), the effective algorithm each
fate runs per precision (`AlgorithmUse`), which sites change arithmetic or
only their kernel as n grows (`FateTransition`), the row-0 values a target that
ran observed (`RowZero`), and what a compile-only target cannot settle: its
fates are XLA's heuristic choice, and where a Triton gemm site would run
another algorithm as a cuBLAS/cuBLASLt call (by `effective.blas_algorithm`,
applied to the site), autotuning could change the numerics (`Alternative`).
`explain_text.render_explanation` words them. The records are defined in
`explain_records` (and re-exported here).

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Sequence

from hloprobe.compile import Case, ReportedError
from hloprobe.engine import SweepSpec, plan_sweep, run_sweep
from hloprobe.records import ConfigResult
from hloprobe.report.explain_autotune import autotuned, site_selections
from hloprobe.report.explain_kernel import (
  kernel_models,
  kernel_notes,
  kernel_rows,
)
from hloprobe.report.explain_made import made_math
from hloprobe.report.explain_records import (
  AlgorithmUse,
  Alternative,
  FateSpan,
  FateTransition,
  PredictedRowZero,
  RowZero,
  TargetExplanation,
)
from hloprobe.report.explain_rows import (
  judged_lines,
  made_rows_beyond,
  rows_beyond,
)
from hloprobe.report.site_words import collective_words, failure_words
from hloprobe.report.verdict_words import prediction_words, verdict_words
from hloprobe.sites import (
  Fate,
  SiteFate,
  blas_algorithm,
)

__all__ = [
  "explain_results",
  "explain_sweep",
]


def _fate_words(f: SiteFate) -> str:
  """E.g. "Triton gemm", "Triton gemm split-K 4", "dot in __ynn_fusion",
  "Triton gemm (sites 0, 1 merged by dot-merger)"."""
  words = f.fate.value
  if f.fate == Fate.DOT:
    words = f"dot in {f.emitter}" if f.emitter != "top level" else "dot"
  words = f"{words} split-K {f.split_k}" if f.split_k else words
  merged = f.merge_words(group=True)
  return f"{words} ({merged})" if merged else words


def _then(f: SiteFate) -> str:  # ", then all-reduce over 8 devices (...)"
  return f", then {collective_words(f.collective)}" if f.collective else ""


def _pass_words(r: ConfigResult, site: int) -> str:
  """E.g. "splitk-rewriter, hlo_normalization"; "pass unknown" when the
  attribution failed (its reason, naming the jaxlib, is in the notes);
  "pass n/a" without `explain_passes`."""
  found = r.compilation.passes
  if found is None:
    return "pass unknown" if r.compilation.passes_error else "pass n/a"
  p = found.get(site)
  return f"{p.pass_name}, {p.pipeline}" if p else "no pass rewrote it"


def _runs(items: Iterable, key: Callable) -> list[list]:
  """Splits items into runs of consecutive equal keys."""
  return [list(g) for _, g in itertools.groupby(items, key)]


def _spans(configs: list[ConfigResult]) -> tuple[FateSpan, ...]:
  def groups(r):
    if not r.ok:
      return (
        ((), f"failed ({r.failure.stage})", failure_words(r.failure) or ""),
      )
    rows = [
      (f.site.index, _fate_words(f) + _then(f), _pass_words(r, f.site.index))
      for f in r.compilation.fates
    ]
    return tuple(
      (tuple(i for i, _, _ in run), run[0][1], run[0][2])
      for run in _runs(rows, lambda row: row[1:])
    )

  return tuple(
    FateSpan(tuple(r.config.n for r in run), groups(run[0]))
    for run in _runs(configs, groups)
  )


def _evidence(f: SiteFate) -> str:
  """The evidence without kernel names, counts or the rule's call site."""
  text = f.algorithm_evidence or "n/a"
  if f.algorithm_source == "ptx":
    text = re.sub(r" x\d+", "", text.split(": ", 1)[-1]).split(" (")[0]
  elif f.algorithm_source == "rule":
    text = text.split(": ", 1)[-1]
  return f"{f.algorithm_source or 'unsettled'}: {text}"


def _algorithms(precision: str, configs) -> list[AlgorithmUse]:
  found: dict[tuple, tuple[set, list]] = {}
  for r in configs:
    for f in r.compilation.fates:
      key = (_fate_words(f), f.effective_algorithm, _evidence(f))
      sites, ns = found.setdefault(key, (set(), []))
      sites.add(f.site.index)
      if r.config.n not in ns:
        ns.append(r.config.n)
  return [
    AlgorithmUse(fate, precision, algo, ev, tuple(sorted(s)), tuple(ns))
    for (fate, algo, ev), (s, ns) in found.items()
  ]


def _changes(precision: str, configs) -> list[FateTransition]:
  by_site: dict[int, list] = {}
  optional: set[int] = set()  # sites where TF32 is allowed, not required
  for r in configs:
    for f in r.compilation.fates:
      by_site.setdefault(f.site.index, []).append(
        (r.config.n, _fate_words(f), f.effective_algorithm)
      )
      if f.tf32_optional:
        optional.add(f.site.index)
  by_steps: dict[tuple, list[int]] = {}
  for site, seq in by_site.items():
    steps = tuple(
      (tuple(n for n, _, _ in run),) + run[0][1:]
      for run in _runs(seq, lambda x: x[1:])
    )
    if len(steps) > 1:
      by_steps.setdefault(steps, []).append(site)
  return [
    FateTransition(
      precision,
      tuple(sites),
      steps,
      len({a for _, _, a in steps}) > 1,
      bool(optional.intersection(sites)),
    )
    for steps, sites in by_steps.items()
  ]


def _row0(precision: str, configs) -> list[RowZero]:
  ran = [r for r in configs if r.execution and r.execution.stats is not None]
  key = lambda r: (
    r.execution.stats.leaf,
    r.execution.stats.row0,
    r.execution.stats.row0_abs,
    r.execution.ulp_vs_n1,
  )
  return [
    RowZero(
      precision,
      tuple(r.config.n for r in run),
      run[0].execution.stats.row0,
      run[0].execution.stats.row0_abs,
      run[0].execution.ulp_vs_n1,
      run[0].execution.output_dtype,
      run[0].execution.stats.leaf,
    )
    for run in _runs(ran, key)
  ]


def _top(p) -> tuple[int | None, float | None]:
  """The top site and its share; no share where the shares are a group's
  (a large program's, `note_records.SharesAlone.groups`): it is of that
  group's sites only, which "of the row-0 error the non-F32 sites cause
  one at a time" would overstate (100% for a group of one site); the
  verdict's note names the group."""
  share = next((x.share for x in p.shares if x.site == p.top_site), None)
  return p.top_site, None if p.unshared_sites else share


def _verdict_words(p) -> str:
  """The headline leaf's verdict, then every other leaf's that is not
  "exact" or "within ..." (an overflowing int8 leaf beside an exact int32
  headline, say), each after its leaf's name."""
  others = [
    f"{leaf}: {verdict_words(v)}"
    for leaf, v in p.leaf_judgements()
    if leaf != p.leaf and not v.accurate
  ]
  return "; ".join([prediction_words(p), *others])


def _predicted(precision: str, configs) -> list[PredictedRowZero]:
  have = [r for r in configs if r.prediction is not None or r.prediction_error]

  def key(r):
    if r.prediction is None:
      return (f"not predicted: {r.prediction_error}", None)
    return (
      _verdict_words(r.prediction),
      r.prediction.top_site,
      r.prediction.leaf,
    )

  def row(run) -> PredictedRowZero:
    ns = tuple(r.config.n for r in run)
    if run[0].prediction is None:
      return PredictedRowZero(
        precision, ns, None, None, key(run[0])[0], None, None
      )
    ps = [r.prediction for r in run]
    return PredictedRowZero(
      precision,
      ns,
      max(p.stats.row0_abs for p in ps),
      max(p.noise.row0_abs for p in ps),
      _verdict_words(ps[0]),
      *_top(ps[0]),
      min(p.stats.row0_abs for p in ps),
      min(p.noise.row0_abs for p in ps),
      ps[0].leaf,
      ps[0].output_dtype,
    )

  return [row(run) for run in _runs(have, key)]


def _library_rules(f: SiteFate, cc: str | None):
  """(libraries, algorithm, rule) where a library call would differ, or None."""
  rules = {
    lib: blas_algorithm(
      lib, f.site.lhs.dtype, f.precision_config, f.algorithm, cc
    )
    for lib in ("cuBLAS", "cuBLASLt")
  }
  libs = tuple(
    lib
    for lib, (a, _) in rules.items()
    if a is not None and a != f.effective_algorithm
  )
  if not libs:
    return None
  algo, rule = rules[libs[0]]
  return libs, algo, rule.split(": ", 1)[-1]


def _alternatives(precision, configs, cc) -> list[Alternative]:
  """Triton gemm sites whose algorithm as a cuBLAS/cuBLASLt call differs,
  but those whose fusion loaded autotune results settled ("autotuned on
  <device>": the recording GPU's autotuner kept it Triton)."""
  found: dict[tuple, tuple[set, dict]] = {}
  for r in configs:
    for f in r.compilation.fates:
      rule = (
        _library_rules(f, cc)
        if f.fate == Fate.TRITON_GEMM and not autotuned(f)
        else None
      )
      if rule is not None:
        key = (f.precision_config, f.effective_algorithm) + rule
        sites, ns = found.setdefault(key, (set(), {}))
        sites.add(f.site.index)
        ns[r.config.n] = None
  out = []
  for (pc, triton, libs, algo, rule), (sites, ns) in found.items():
    others = {
      f.effective_algorithm
      for r in configs
      if r.config.n not in ns
      for f in r.compilation.fates
      if f.site.index in sites
    }
    out.append(
      Alternative(
        precision,
        pc,
        tuple(sorted(sites)),
        tuple(ns),
        triton,
        libs,
        algo,
        rule,
        tuple(sorted(a or "n/a" for a in others)),
      )
    )
  return out


def _config_words(f: SiteFate) -> str:
  """A site's precision config, e.g. "DEFAULT" or "HIGH, algorithm X"."""
  return "/".join(dict.fromkeys(f.precision_config.upper().split(","))) + (
    f", algorithm {f.algorithm}" if f.algorithm else ""
  )


def _precision_label(precision: str, configs) -> str:
  """E.g. "tensorfloat32 (HIGH)"; where the sites' configs differ, each
  with its sites, e.g. "default (sites 0, 2 DEFAULT; site 1 HIGHEST)", so
  that a merged label never hides which site asked for what (the
  effective algorithms lines say which runs TF32)."""
  fates = [f for r in configs for f in r.compilation.fates]
  if not fates:
    return precision
  by_config: dict[str, set[int]] = {}
  for f in fates:
    by_config.setdefault(_config_words(f), set()).add(f.site.index)
  if len(by_config) == 1:
    return f"{precision} ({next(iter(by_config))})"
  words = [
    f"site{'s' if len(sites) > 1 else ''} "
    f"{', '.join(map(str, sorted(sites)))} {config}"
    for config, sites in by_config.items()
  ]
  return f"{precision} ({'; '.join(words)})"


def _notes(configs: list[ConfigResult]) -> list[str]:
  where = lambda r: f"n = {r.config.n}, {r.config.precision}"
  notes = [
    f"{where(r)}: {r.failure.stage} failed: {failure_words(r.failure)}"
    for r in configs
    if not r.ok
  ]
  notes += [
    f"{where(r)}: passes not named: {r.compilation.passes_error}"
    for r in configs
    if r.compilation and r.compilation.passes_error
  ]
  notes += _reference_notes(configs)
  return notes + kernel_notes(configs)


def _reference_notes(configs: list[ConfigResult]) -> list[str]:
  """Where a float64 reference did not come from the numpy executor, once
  per batch size (the reference is the case's, shared by the configs)."""
  found = {
    r.config.n: p.reference
    for r in configs
    if (p := r.prediction) is not None
    and "not executed by the numpy executor" in p.reference
  }
  return [f"n = {n}: reference: {words}" for n, words in found.items()]


def _explain_one(
  configs: list[ConfigResult],
  reports: dict[str, ReportedError | None],
  case_notes: dict[str, tuple[str, ...]],
) -> TargetExplanation:
  first = configs[0].config
  target = first.target
  by_precision = {
    p: [r for r in configs if r.config.precision == p]
    for p in dict.fromkeys(r.config.precision for r in configs)
  }
  cc = target.compute_capability
  ok = {p: [r for r in rs if r.ok] for p, rs in by_precision.items()}
  gather = lambda fn, *args: tuple(
    x for p, rs in ok.items() for x in fn(p, rs, *args)
  )
  selections = {
    f.selection for r in configs if r.ok for f in r.compilation.fates
  }
  reported = reports.get(first.case)
  return TargetExplanation(
    case=first.case,
    target=target.name,
    experiment=first.experiment,
    compile_only=target.compile_only,
    precisions={p: _precision_label(p, rs) for p, rs in ok.items()},
    spans={p: _spans(rs) for p, rs in by_precision.items()},
    algorithms=gather(_algorithms),
    changes=gather(_changes),
    row0=gather(_row0),
    predicted=gather(_predicted),
    alternatives=gather(_alternatives, cc),
    selection=next(iter(sorted(s for s in selections if s)), None),
    reported=reported
    if reported and cc == reported.compute_capability
    else None,
    notes=case_notes.get(first.case, ()) + tuple(_notes(configs)),
    made=gather(made_math),
    rows=rows_beyond(configs),
    made_rows=made_rows_beyond(configs),
    kernel_models=kernel_models(configs, cc) if cc else (),
    site_selections=site_selections(configs),
    kernel_rows=kernel_rows(configs) if cc else (),
    judged=judged_lines(configs),
  )


def explain_results(
  results: Sequence[ConfigResult], cases: Iterable[Case] = ()
) -> list[TargetExplanation]:
  """Explains a sweep, one record per (experiment, case, target).

  Args:
    results: a sweep's results (`sweep.run_sweep`), best run with
      `explain_passes=True` (otherwise passes read "pass n/a"); each
      config's `Target` record gives the compute capability and whether
      the target is compile-only.
    cases: the sweep's `Case` records (`SweepPlan.cases`' `.case`): what
      each one's report saw (`Case.reported`) is set beside the row where
      the compute capability matches; a case not given has none. Its
      `notes` (a module file's: where its inputs came from, how many
      contractions the precision was set on) lead the notes.

  Returns:
    The explanations in the order the results first name them; the configs
    of each in sweep order.
  """
  key = lambda c: (c.experiment, c.case, c.target.name)
  groups: dict[tuple, list[ConfigResult]] = {}
  for r in results:
    groups.setdefault(key(r.config), []).append(r)
  cases = tuple(cases)
  reports = {c.name: c.reported for c in cases}
  case_notes = {c.name: c.notes for c in cases}
  return [_explain_one(rs, reports, case_notes) for rs in groups.values()]


def explain_sweep(spec: SweepSpec) -> list[TargetExplanation]:
  """`hloprobe explain` as a function: runs `spec` with pass attribution on
  (`explain_passes=True`) and explains it (see `explain`).

  Raises:
    InvalidArgumentError: an unknown case, target or precision in `spec`.
  """
  plan = plan_sweep(spec, explain_passes=True)
  return explain_results(run_sweep(plan), [c.case for c in plan.cases])
