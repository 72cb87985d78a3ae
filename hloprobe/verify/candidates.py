"""What to do: the candidate fixes for a sweep's findings, tried and judged.

`candidate_fixes` is the one call (explain's answer): `plan_tries` picks,
for the baseline's findings (`findings.find_findings`), the fixes that
apply and the configs to try them on; `try_sweeps` gives the sweeps that
run them (run on the caller's worker pool and record cache), one
candidate at a time until one passes, or all at once where every one is
asked for; `judge_tries`
judges each fix exactly as `hloprobe verify` would (`outcome.verify`,
requirements "consistent" and "accurate") and gives its ready-to-run
`hloprobe verify` command (`verify_command`).

The candidates, in the order they are printed when they pass:

  --precisions=float32       the program's dots at HIGHEST (jax's
                             `jax_default_matmul_precision`); on a GPU
                             the gemms run F32_F32_F32 on the CUDA cores
                             (no tensor cores). Not tried where float32
                             is itself at fault.
  BF16_BF16_F32_X6, TF32_TF32_F32_X3, BF16_BF16_F32_X3
                             algorithm presets (`jax.lax.DotAlgorithmPreset`)
                             that emulate f32 with several tensor-core
                             passes; tried only where XLA takes them:
                             CUDA compute capability 8.0 or more with f32
                             operands and output
                             (`algorithm_util::IsSupportedDotAlgorithmOnGpu`,
                             xla/service/algorithm_util.cc: the BF16 _X3/_X6/
                             _X9 and TF32 presets need `IsAtLeastAmpere` and
                             F32 storage types).
  no_triton_gemm             --xla_gpu_enable_triton_gemm=false, where a
                             site at fault is a Triton gemm: the gemm
                             becomes a cuBLAS/cuBLASLt call.
  preferred_element_type=int32
                             where an integer output overflows (a finding
                             of kind "integer"): the program's narrow
                             integer dots keep their sums in int32
                             (`compile.INT32_DOTS_FIX`), as
                             `jnp.matmul(a, b, preferred_element_type=
                             jnp.int32)` does; the only candidate then
                             (no precision or flag changes integer math).
  split_k_off                --xla_gpu_experimental_force_split_k=1, where
                             a site at fault is split along K: XLA's
                             `splitk-rewriter` (SplitkRewriterVisitor::
                             HandleDot, xla/backends/gpu/transforms/
                             splitk_rewriter.cc) takes the forced factor
                             instead of ChooseSplitK's and leaves a dot
                             alone at 1. The flag exists in jaxlib 0.10.2
                             and 0.12.0.1 (XLA commit c959bf90; a compile
                             with it checked on 0.12.0.1);
                             `xla_gpu_enable_split_k_rewriter` does not
                             (0.12.0.1 rejects it).

Costs ("passes per gemm") are the presets' own words: jax's
`DotAlgorithmPreset` docstrings (jax/_src/lax/lax.py, jax 0.12.0.1: "_X3
... uses 3 operations to emulate higher precision", "_X6 ... 6
operations") and XLA's cost model of them (`GetAlgoritmFlopsPerElement`
in splitk_rewriter.cc: 12 flops per element for BF16 _X3 and TF32 _X3,
20 for _X6, against 2 for one pass).

The configs tried: the findings' cases, targets and precisions, at the
smallest batch size swept (the reference "consistent" compares row 0
with) and the smallest and largest batch sizes at fault: at most three
per (case, target, precision), so one extra sweep stays small. A fix that
passes there is printed with the `verify` command that checks it on
exactly those configs. No release is proposed: `versions` records which
XLA commit each jaxlib was built from (versions/xla_commits.json), not
which finding a release fixed.

Private in intent: use the package, `hloprobe.verify`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence

from hloprobe.compile import (
  BASELINE,
  INT32_DOTS_FIX,
  absolute_case_word,
  is_config_path,
)
from hloprobe.engine import (
  SweepPlan,
  SweepProgress,
  SweptCase,
  plan_sweep,
  run_sweep,
)
from hloprobe.records import ConfigResult
from hloprobe.sites import Fate
from hloprobe.verify import evidence as ev
from hloprobe.verify.findings import Finding, find_findings
from hloprobe.verify.fix import Fix, parse_fix
from hloprobe.verify.outcome import verify

__all__ = [
  "Candidate",
  "FixTrial",
  "FixTries",
  "TryPlan",
  "judge_tries",
  "plan_tries",
  "candidate_fixes",
  "try_sweeps",
  "verify_command",
]

_SPLIT_K_OFF = "split_k_off:--xla_gpu_experimental_force_split_k=1"

# Precision fix -> its cost on a GPU (see the module docstring).
_PRESETS = {
  "BF16_BF16_F32_X6": "6 BF16 tensor-core passes per gemm",
  "TF32_TF32_F32_X3": "3 TF32 tensor-core passes per gemm",
  "BF16_BF16_F32_X3": "3 BF16 tensor-core passes per gemm",
}


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
  """A fix to try.

  Attributes:
    fix: `hloprobe verify --fix`'s word, e.g. "float32", "no_triton_gemm",
      "split_k_off:--xla_gpu_experimental_force_split_k=1".
    words: the change in the user's words, e.g. "--precisions=float32".
    cost: what it costs, e.g. "F32_F32_F32: 1 pass per gemm, no tensor
      cores".
  """

  fix: str
  words: str
  cost: str

  def parsed(self) -> Fix:
    """The `Fix` record `verify` judges (`fix.parse_fix`)."""
    return parse_fix(self.fix)


@dataclasses.dataclass(frozen=True, slots=True)
class TryPlan:
  """Where the candidates are tried: the baseline's findings' configs.

  Attributes:
    plan: the explain sweep's plan narrowed to them (its cases, targets
      and precisions at fault; `batch_sizes` as the module says).
    candidates: the fixes that apply, in printing order.
    findings: the baseline findings they answer.
  """

  plan: SweepPlan
  candidates: tuple[Candidate, ...]
  findings: tuple[Finding, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class TrialReason:
  """Why a tried fix passed or not, as records.

  Attributes:
    met: every requirement passed.
    requirements: the requirements met (all of them, where `met`) or
      failed, by name, e.g. ("consistent", "accurate").
    configs: how many configs of the fix were judged.
    left: where it failed, the worst finding on the fix's configs
      (`find_findings`); None where none is left or it passed.
  """

  met: bool
  requirements: tuple[str, ...]
  configs: int = 0
  left: Finding | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class FixTrial:
  """One candidate, tried.

  Attributes:
    candidate: the fix.
    passed: every requirement passed on the configs tried.
    reason: what it left (the fix's worst finding) or, when it passed,
      the requirements met (`TrialReason`; its one line of words is made
      in `hloprobe.report`).
    command: the `hloprobe verify` command that checks it.
    judged: False when it did not pass only because nothing could be
      compared on its configs (no errors against float64, no row 0: every
      failing record an `evidence.NotJudged` of those reasons, e.g. an
      attention the emulator cannot follow): not a failed fix.
  """

  candidate: Candidate
  passed: bool
  reason: TrialReason
  command: str
  judged: bool = True


# `evidence.NotJudged` reasons that mean "no numbers to compare", not a
# failure of the fix (a config that failed or did not compile is one).
_NO_NUMBERS = (
  ev.Reason.NO_ROW0,
  ev.Reason.NO_ERRORS,
  ev.Reason.NO_BASE,
  ev.Reason.NO_BATCH_AXIS,
)


def _judged(outcome) -> bool:
  """Whether a fix's outcome was decided by numbers: passed, or some
  failing requirement holds a record other than "nothing to compare"."""
  for req in outcome.requirements:
    if req.passed:
      continue
    bad = [e for e in req.evidence if not getattr(e, "passed", False)]
    if not all(
      isinstance(e, ev.NotJudged) and e.reason in _NO_NUMBERS for e in bad
    ):
      return True
  return outcome.passed


def _applies(findings: Sequence[Finding], results) -> tuple[Candidate, ...]:
  """The candidates for these findings (see the module docstring)."""
  names = {f.target for f in findings}
  targets = {
    r.config.target.name: r.config.target
    for r in results
    if r.config.target.name in names
  }
  gpus = [t for t in targets.values() if t.platform == "cuda"]
  fault_precisions = {p for f in findings for p in f.precisions}
  fates = {k for f in findings for k in f.fate_kinds}
  split = any(f.split_k for f in findings)
  out = []
  if _overflows(findings, results):
    out.append(
      Candidate(
        INT32_DOTS_FIX.word,
        "preferred_element_type=jnp.int32 on the integer dots (e.g. "
        "jnp.matmul(a, b, preferred_element_type=jnp.int32)), an int32 "
        "output",
        "exact int32 sums: an int32 output, 4x an int8 output's bytes",
      )
    )
    if all(f.kind in ("integer", "leaf") for f in findings):
      return tuple(out)  # no precision or flag changes integer math
  if "float32" not in fault_precisions:
    cost = (
      "F32_F32_F32: 1 pass per gemm on CUDA cores, no tensor cores"
      if gpus
      else "F32_F32_F32, the CPU's arithmetic under every precision"
    )
    out.append(Candidate("float32", "--precisions=float32", cost))
  if gpus and len(gpus) == len(targets) and _ampere(gpus, findings, results):
    out += [
      Candidate(name, f"--precisions={name}", cost)
      for name, cost in _PRESETS.items()
      if name not in fault_precisions
    ]
  if gpus and Fate.TRITON_GEMM in fates:
    out.append(
      Candidate(
        "no_triton_gemm",
        "--xla_gpu_enable_triton_gemm=false",
        "cuBLAS/cuBLASLt calls instead of Triton gemms: 1 pass per gemm, "
        "the library's kernel and its TF32 rule",
      )
    )
  if gpus and split:
    out.append(
      Candidate(
        _SPLIT_K_OFF,
        "--xla_gpu_experimental_force_split_k=1",
        "no split along K: one pass over K per gemm, fewer blocks at once",
      )
    )
  return tuple(out)


def _overflows(findings: Sequence[Finding], results) -> bool:
  """An integer output leaf of a config at fault holds values its type
  cannot (`ErrorStats.overflowed`, observed or predicted)."""
  at_fault = {(f.case, f.target) for f in findings}
  for r in results:
    if (r.config.case, r.config.target.name) not in at_fault:
      continue
    stats = list(r.execution.leaf_stats) if r.execution is not None else []
    if r.prediction is not None:
      stats.append(r.prediction.stats)
    if any(s is not None and s.overflowed for s in stats):
      return True
  return False


def _ampere(gpus, findings: Sequence[Finding], results) -> bool:
  """Every GPU at compute capability >= 8.0, and every site at fault an
  f32 x f32 -> f32 dot (where the multi-pass presets apply)."""

  def major(t) -> int:
    cc = t.compute_capability or "0"
    return int(cc.split(".")[0]) if cc.split(".")[0].isdigit() else 0

  if any(major(t) < 8 for t in gpus):
    return False
  at_fault = {(f.case, f.target): set(f.sites) for f in findings}
  for r in results:
    sites = at_fault.get((r.config.case, r.config.target.name))
    if not sites or r.compilation is None:
      continue
    for f in r.compilation.fates:
      s = f.site
      if s.index in sites and (s.lhs.dtype, s.rhs.dtype) != ("f32", "f32"):
        return False
  return True


def _sizes(findings: Sequence[Finding], swept: Sequence[int]) -> tuple:
  """The smallest size swept, then the smallest and largest at fault."""
  at_fault = sorted({n for f in findings for n in f.batch_sizes})
  return tuple(sorted({min(swept), at_fault[0], at_fault[-1]}))


def plan_tries(
  findings: Sequence[Finding],
  results: Sequence[ConfigResult],
  plan: SweepPlan,
) -> TryPlan | None:
  """The fixes to try for the baseline's findings, and where; None when
  there is nothing to try (no baseline finding, or no candidate).

  Args:
    findings: `find_findings(results)`.
    results: the explain sweep's results.
    plan: its plan (`sweep.SweepPlan`): the records and words the tries
      reuse.
  """
  mine = [
    f
    for f in findings
    if f.experiment == BASELINE.name and not _fails_before_xla(f)
  ]
  if not mine:
    return None
  candidates = _applies(mine, results)
  if not candidates:
    return None
  cases = {f.case for f in mine}
  targets = {f.target for f in mine}
  precisions = {p for f in mine for p in f.precisions}
  keep = [i for i, t in enumerate(plan.targets) if t.name in targets]
  narrowed = dataclasses.replace(
    plan,
    cases=tuple(c for c in plan.cases if c.name in cases),
    batch_sizes=_sizes(mine, plan.batch_sizes),
    precisions=tuple(p for p in plan.precisions if str(p) in precisions),
    targets=tuple(plan.targets[i] for i in keep),
    target_names=tuple(plan.target_names[i] for i in keep),
    experiments=(),
    # As `verify` sweeps (`fix.fix_sweep`): its command then finds every
    # config in the record cache.
    explain_passes=False,
  )
  return TryPlan(narrowed, candidates, tuple(mine))


def _fails_before_xla(finding: Finding) -> bool:
  """Whether `finding` is of configs that failed before XLA: stage
  "lower", where jax could not trace the program (the function raised,
  `errors.TraceError`) or lower it for the target (a host callback on a
  compile-only GPU, a GPU-only primitive on the CPU,
  `compile.missing_lowering`). Neither depends on a dot's precision nor
  on XLA_FLAGS, so no candidate fix can change it; its words say what to
  do instead."""
  failure = finding.what.failure if finding.kind == "failed" else None
  return failure is not None and failure.stage == "lower"


def try_sweeps(tries: TryPlan) -> tuple[SweepPlan, ...]:
  """The sweeps that try every candidate: one of the baseline's configs
  at fault and the precision fixes, one of the XLA_FLAGS fixes (its
  baseline configs the first one's, found in the record cache); the
  second is missing when no flag fix applies. Both sweep as `verify`
  does (no pass attribution), so that the printed `verify` commands find
  every config in the record cache."""
  fixes = [c.parsed() for c in tries.candidates]
  precisions = tuple(f.precision for f in fixes if f.precision)
  experiments = tuple(f.experiment for f in fixes if f.experiment)
  out = []
  if any(f.program for f in fixes):
    plan = tries.plan
    fixed = tuple(
      SweptCase(
        INT32_DOTS_FIX.fixed_case(c.case),
        c.source + INT32_DOTS_FIX.case_suffix,
        c.portable,
        c.loader,
      )
      for c in plan.cases
    )
    out.append(plan_sweep(plan, cases=plan.cases + fixed))
  if precisions:
    out.append(
      plan_sweep(tries.plan, precisions=tries.plan.precisions + precisions)
    )
  if experiments:
    out.append(dataclasses.replace(tries.plan, experiments=experiments))
  return tuple(out)


def _modules_only(plan: SweepPlan) -> bool:
  """Every case is a module file's, run at its own size (`fixed_size`):
  `verify` refuses `--batch_sizes` for such a sweep and has no
  "consistent" to judge (README, "A module file as a case")."""
  return all(c.case.fixed_size is not None for c in plan.cases)


def _requirements(tries: TryPlan) -> tuple[str, ...]:
  plan = tries.plan
  if len(plan.batch_sizes) > 1 and not _modules_only(plan):
    return ("consistent", "accurate")
  return ("accurate",)


def verify_command(tries: TryPlan, candidate: Candidate) -> str:
  """The `hloprobe verify` command that judges `candidate` on the configs
  tried, e.g. "hloprobe verify --case=seed_mlp --targets=a100
  --batch_sizes=1,2,9 --precisions=bfloat16,tensorfloat32 --fix=float32
  --require=consistent,accurate"; without `--batch_sizes` and
  "consistent" when every case is a module file's."""
  p = tries.plan
  builtin = [w for w in p.target_names if not is_config_path(w)]
  files = [w for w in p.target_names if is_config_path(w)]
  cases = ",".join(map(absolute_case_word, p.case_names))
  words = ["hloprobe", "verify", f"--case={cases}"]
  if builtin:
    words.append(f"--targets={','.join(builtin)}")
  words += [f"--target_config={os.path.abspath(w)}" for w in files]
  if not _modules_only(p):
    words.append(f"--batch_sizes={','.join(map(str, p.batch_sizes))}")
  words += [
    f"--precisions={','.join(str(x) for x in p.precisions)}",
    _quoted(f"--fix={candidate.fix}"),
    f"--require={','.join(_requirements(tries))}",
  ]
  return " ".join(words)


def _quoted(word: str) -> str:
  """A shell word: single-quoted where it holds more than [\\w=,.:/-]."""
  plain = all(ch.isalnum() or ch in "_=,.:/-" for ch in word)
  return word if plain else "'" + word.replace("'", "'\\''") + "'"


def _reason(fixed: list[ConfigResult], outcome) -> TrialReason:
  """What a fix left (its worst finding), or the requirements it met."""
  failed = tuple(r.name for r in outcome.requirements if not r.passed)
  if not failed:
    names = tuple(r.name for r in outcome.requirements)
    return TrialReason(True, names, len(fixed))
  left = find_findings(fixed)
  return TrialReason(False, failed, len(fixed), left[0] if left else None)


def judge_tries(
  tries: TryPlan, results: Sequence[ConfigResult]
) -> tuple[FixTrial, ...]:
  """Each candidate judged as `hloprobe verify` judges it, from the
  results of `try_sweeps(tries)` (all of them, concatenated); passing
  fixes first, each group in candidate order."""
  spec = tries.plan
  requirements = _requirements(tries)
  trials = []
  for c in tries.candidates:
    fix = c.parsed()
    mine = [
      r
      for r in results
      if (
        r.config.experiment == BASELINE.name
        and (fix.program or not INT32_DOTS_FIX.is_fixed(r.config.case))
      )
      or (fix.experiment and r.config.experiment == fix.experiment.name)
    ]
    if fix.experiment is not None:  # the fix's configs at fault precisions
      mine = [r for r in mine if r.config.precision in spec.precisions]
    outcome = verify(mine, spec, fix, requirements)
    fixed = [
      r
      for r in mine
      if (fix.precision and r.config.precision == fix.precision)
      or (fix.experiment and r.config.experiment == fix.experiment.name)
      or (fix.program and INT32_DOTS_FIX.is_fixed(r.config.case))
    ]
    trials.append(
      FixTrial(
        c,
        outcome.passed,
        _reason(fixed, outcome),
        verify_command(tries, c),
        _judged(outcome),
      )
    )
  return tuple(sorted(trials, key=lambda t: not t.passed))


@dataclasses.dataclass(frozen=True, slots=True)
class FixTries:
  """The candidate fixes of a sweep's findings, tried or listed.

  Attributes:
    trials: each candidate tried and judged (`judge_tries`: passing first,
      each group in candidate order); () when none was tried.
    untried: each candidate not tried with the `hloprobe verify`
      command that checks it (`verify_command`), in candidate order: all
      of them when none was tried, else those after the first that
      passed; ().
    after_pass: `untried` are the candidates after the first that passed
      (not tried because one before them passed).
    before_xla: none was planned because every baseline finding is of
      configs that failed before XLA (`_fails_before_xla`).
  """

  trials: tuple[FixTrial, ...] = ()
  untried: tuple[tuple[Candidate, str], ...] = ()
  after_pass: bool = False
  before_xla: bool = False


def candidate_fixes(
  findings: Sequence[Finding],
  results: Sequence[ConfigResult],
  plan: SweepPlan,
  *,
  run: bool,
  every: bool = False,
  pool=None,
  progress: Callable[[], Callable[[SweepProgress], None] | None] = (
    lambda: None
  ),
) -> FixTries | None:
  """The candidate fixes for the baseline's `findings`, tried on the
  configs at fault and judged as `hloprobe verify` judges them (`run`), or
  listed with their `verify` commands; `FixTries(before_xla=True)` where
  every baseline finding failed before XLA (`_fails_before_xla`); None
  when there is nothing else to try (`plan_tries`: no baseline finding,
  or no candidate).

  Args:
    findings: `find_findings(results)`.
    results: the explain sweep's results.
    plan: its plan (`engine.SweepPlan`).
    run: run the tries: further sweeps (`try_sweeps`), their configs
      that `results` or an earlier try made taken from them
      (`engine.run_sweep`'s `given`), not computed again. The candidates
      are tried one at a time in printing order, and the first that
      passes ends the tries: the rest are listed untried with their
      `verify` commands (`FixTries.after_pass`). Most of explain's cost
      on a real-size model was its tries (gpt2_1: about 120 of 185
      CPU-s; issue 37); a fix that passes answers "what to change", and
      each one left has the command that tries it.
    every: try every candidate (explain's --all_fixes), in one or two
      sweeps (precisions together, XLA_FLAGS fixes together), whether an
      earlier one passed or not.
    pool: the workers the tries run on (the explain sweep's
      `engine.worker_pool`), or None: workers of their own.
    progress: makes each try sweep's progress callable (or None).

  Raises:
    KeyboardInterrupt: during a try sweep (the caller says what finished).
  """
  tries = plan_tries(findings, results, plan)
  if tries is None:
    mine = [f for f in findings if f.experiment == BASELINE.name]
    before_xla = bool(mine) and all(map(_fails_before_xla, mine))
    return FixTries(before_xla=True) if before_xla else None
  listed = lambda cs: tuple((c, verify_command(tries, c)) for c in cs)
  if not run:
    return FixTries(untried=listed(tries.candidates))
  done = [(plan, results)]
  if every:
    return FixTries(
      trials=judge_tries(tries, _swept(tries, done, pool, progress))
    )
  trials = []
  for i, c in enumerate(tries.candidates):
    one = dataclasses.replace(tries, candidates=(c,))
    trials += judge_tries(one, _swept(one, done, pool, progress))
    if trials[-1].passed:
      rest = tries.candidates[i + 1 :]
      return FixTries(
        trials=tuple(sorted(trials, key=lambda t: not t.passed)),
        untried=listed(rest),
        after_pass=bool(rest),
      )
  return FixTries(trials=tuple(trials))


def _swept(tries: TryPlan, done: list, pool, progress) -> list[ConfigResult]:
  """The configs of `try_sweeps(tries)`, each sweep run on `pool` with the
  configs of `done` (a list of (plan, records), the explain sweep's first;
  each sweep's appended) taken from them, not computed again."""
  tried: list[ConfigResult] = []
  for swept in try_sweeps(tries):
    got = run_sweep(swept, progress(), pool=pool, given=done)
    tried += got
    done.append((swept, got))
  return tried
