"""The pin: the settings that put every swept batch size of a group into
one class, searched cheapest first and each verified by sweeping it.

Candidates (issue 38 item 4), those that apply to a group's boundaries:

  CPU
    no_ynn_fusion   `--xla_cpu_experimental_ynn_fusion_type=` (empty: no
                    dot goes to a YNNPACK fusion, which picks its kernel
                    from the whole shape; XLA:CPU's own dot emitter,
                    xla/backends/cpu/codegen/dot/dot_kernel_emitter.cc,
                    computes it. Measured on jaxlib 0.12.0.1: one class
                    for n = 1-64 on dense_ln_softmax and transformer_block;
                    tm_mm's n = 1, a vector-matrix product, stays apart.
                    The flag exists in 0.10.2 and 0.12.0.1)
    no_algsimp      `--xla_disable_hlo_passes=algsimp` (the CPU's dot
                    strength reduction lives in AlgebraicSimplifier)
  GPU
    a precision     the group's sizes at another matmul precision (only
                    where the group's is not float32 already)
    no_dot_strength_reduction
                    `--xla_disable_hlo_passes=dot-strength-reduction`
                    (gemv-shaped dots stay gemms at n = 1)
    no_split_k      `--xla_gpu_experimental_force_split_k=1` (XLA's
                    splitk-rewriter; the flag forces one split)
    no_triton_softmax
                    `--xla_disable_hlo_passes=triton-softmax-rewriter`
                    (where a Triton block-level reduction differs)
    cuBLAS          not tried on a compile-only target: the library picks
                    its kernel per shape at run time (unknown)
    pinned gemms    the kernels stage's autotune-results file (one Triton
                    config per gemm fusion for every n, block_k fixed,
                    split-K 1), replayed through `--autotune_results`
  Every candidate, and the union of those that apply, is swept once on the
  group's sizes (the baseline's configs come from the record cache) and
  judged by `answer.invariance_of`: PASS only when the group is one class
  (on a compile-only GPU: by kernel identity, complete signatures).

Private in intent: use the package, `hloprobe.invariance`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import enum
import os
from collections.abc import Callable, Sequence
from typing import ClassVar

from hloprobe.compile import (
  BUILTIN_EXPERIMENTS,
  Experiment,
  absolute_case_word,
  is_config_path,
)
from hloprobe.engine import SweepPlan, plan_sweep, run_sweep
from hloprobe.errors import first_line
from hloprobe.invariance.answer import (
  Boundary,
  Invariance,
  Lever,
  SiteChanges,
  Unexplained,
  group_key,
  levers,
  site_changes,
)
from hloprobe.invariance.in_workers import (
  EarlyAnswerIncomplete,
  case_inputs,
  invariance_of_sweep,
)
from hloprobe.invariance.kernel_identity import KernelReader
from hloprobe.invariance.pin_file import write_pin_file
from hloprobe.records import ConfigResult

__all__ = [
  "Pin",
  "PinCandidate",
  "PinOutcome",
  "batch_invariance",
  "candidates_for",
  "search_pins",
  "untried_pins",
]


class PinOutcome(enum.Enum):
  """What became of one candidate on one group (`Pin.outcome`); its words
  are report's (`report/invariance_words.py`, `pin_reason`)."""

  NOT_TRIED = "not tried"  # listed with its command, not swept
  NOT_MADE = "not made"  # its autotune file not made (`Pin.why`)
  NOT_SWEPT = "not swept"  # its sweep raised (`Pin.why`)
  NOT_JUDGED = "not judged"  # no config of it came back
  UNKNOWN = "unknown"  # judged unknown (`Pin.after.why`)
  ONE_CLASS = "one class"  # every swept size one class
  # `Pin.sizes` one class, n = 1 apart (`Pin.left_out`)
  ONE_CLASS_BUT_N1 = "one class but n = 1"
  STILL_SPLIT = "still split"  # more than one class (`Pin.after.rows`)

  @property
  def swept(self) -> bool:
    """Whether the candidate's sweep ran (its cost then known)."""
    return self not in (
      PinOutcome.NOT_TRIED,
      PinOutcome.NOT_MADE,
      PinOutcome.NOT_SWEPT,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class PinCandidate:
  """One setting tried as a pin.

  Attributes:
    name: the experiment's name, or the precision's (what it changes, in
      words: report's `candidate_words`).
    flags: its XLA_FLAGS words (() for a precision).
    precision: the matmul precision it sets, or None.
    jax_change: the JAX code change that does the same, where one exists.
    file: the autotune-results file its flags load (pinned_gemms), an
      absolute path, or None.
    parts: the names of the candidates it joins (pin_all), else ().
  """

  name: str
  flags: tuple[str, ...] = ()
  precision: str | None = None
  jax_change: str | None = None
  file: str | None = None
  parts: tuple[str, ...] = ()

  @property
  def fix(self) -> str:
    """The `--fix` word `hloprobe verify` takes for it."""
    if self.precision is not None:
      return self.precision
    if self.name in BUILTIN_EXPERIMENTS:
      return self.name
    return f"{self.name}:{' '.join(self.flags)}"

  def jax_code(self) -> str | None:
    """The JAX code change that does the same: `jax_change`, or for XLA
    flags the compile's own options (`Lowered.compile(compiler_options=
    ...)`, which takes DebugOptions fields: only this program's compile
    changes, as hloprobe's own pass dumps do); None for a file XLA loads
    once per process (`--xla_gpu_load_autotune_results_from`)."""
    if self.jax_change is not None or not self.flags:
      return self.jax_change
    options = {}
    for word in self.flags:
      name, _, value = word.removeprefix("--").partition("=")
      if name == "xla_gpu_load_autotune_results_from":
        return None
      options[name] = value
    return f"jax.jit(f).lower(*args).compile(compiler_options={options!r})"

  def experiment(self) -> Experiment | None:
    if self.precision is not None:
      return None
    return Experiment(self.name, self.flags)


@dataclasses.dataclass(frozen=True)
class Pin:
  """One candidate tried on one group, and its verdict.

  Attributes:
    case, target, precision, experiment: the group pinned.
    candidate: the setting.
    passed: True when every swept size is one class under it (or every
      one but n = 1, `left_out`), False when not, None when unknown.
    outcome: what became of it (`PinOutcome`; in words: report's
      `pin_reason`).
    changed: the contraction sites whose fate it changed against the
      baseline: per batch size swept, `answer.site_changes` (pinned
      against baseline); () where it was not swept.
    row0_abs: (before, after): the largest row-0 |err| against float64
      over the group's sizes, in the output's units, without and with
      it (`_row0_error`), or None where either is unknown.
    command: the `hloprobe verify ... --require=invariant` command ("" for
      one not made).
    after: the group's answer under it, or None.
    left_out: the boundaries (`answer.Boundary`, under the pin where it
      read one, else the baseline's) of the swept sizes `command` leaves
      out: they stay apart under the pin (n = 1, `_all_but_one`), and the
      command FAILs with them; () where it keeps every swept size.
    sizes: the batch sizes `command` checks.
    why: why it was not made or not swept (one line), else None.
    search: where only listed (`not_tried`), the one `hloprobe explain
      ... --only=invariance --invariance=pin` command that tries every
      candidate of the group's case and target and verifies each
      (`search_command`); "" where tried.
  """

  case: str
  target: str
  precision: str
  experiment: str
  candidate: PinCandidate
  passed: bool | None
  outcome: PinOutcome
  command: str
  changed: tuple[SiteChanges, ...] = ()
  row0_abs: tuple[float, float] | None = None
  after: Invariance | None = None
  left_out: tuple[Boundary, ...] = ()
  sizes: tuple[int, ...] = ()
  why: str | None = None
  search: str = ""

  # The outcomes, where only a `Pin` is at hand (report reads it so).
  Outcome: ClassVar[type[PinOutcome]] = PinOutcome

  @property
  def not_tried(self) -> bool:
    """Whether it was only listed, not tried (`passed` None for that)."""
    return self.outcome is PinOutcome.NOT_TRIED


NO_YNN = PinCandidate(
  "no_ynn_fusion",
  ("--xla_cpu_experimental_ynn_fusion_type=",),
)
NO_ALGSIMP = PinCandidate(
  "no_algsimp",
  ("--xla_disable_hlo_passes=algsimp",),
)
NO_DSR = PinCandidate(
  "no_dot_strength_reduction",
  ("--xla_disable_hlo_passes=dot-strength-reduction",),
)
PINNED_GEMMS = PinCandidate("pinned_gemms")
NO_SPLIT_K = PinCandidate(
  "no_split_k",
  ("--xla_gpu_experimental_force_split_k=1",),
)

# The Triton softmax/normalization fusions' tile and num_warps are picked
# per shape by the cost model; without the pass (XLA's
# softmax_rewriter_triton.cc) a layernorm or softmax is an XLA reduction
# emitter row reduction at every n (the kernels stage's REDUCTION_PIN_FLAGS,
# measured on jaxlib 0.12.0.1, compile-only a100).
NO_TRITON_SOFTMAX = PinCandidate(
  "no_triton_softmax",
  ("--xla_disable_hlo_passes=triton-softmax-rewriter",),
)


def candidates_for(
  a: Invariance, pin_file: str | None = None
) -> tuple[PinCandidate, ...]:
  """The candidates that apply to group `a`'s boundaries, cheapest first,
  then their union (when more than one flag candidate applies).

  Args:
    a: a group that is not invariant.
    pin_file: the kernels stage's autotune-results file for this group's
      target, or None where none was written.
  """
  named = levers(a)
  out: list[PinCandidate] = []
  if a.target == "cpu" or Lever.YNN in named:
    if Lever.YNN in named or not a.boundaries:
      out.append(NO_YNN)
    if Lever.STRENGTH_REDUCTION in named:
      out.append(NO_ALGSIMP)
  else:
    if a.precision not in ("float32", "highest", "F32_F32_F32"):
      out.append(
        PinCandidate(
          "float32",
          precision="float32",
          jax_change="jax.default_matmul_precision('float32')",
        )
      )
    if Lever.STRENGTH_REDUCTION in named:
      out.append(NO_DSR)
    if Lever.SPLIT_K in named:
      out.append(NO_SPLIT_K)
    if Lever.TRITON_SOFTMAX in named:
      out.append(NO_TRITON_SOFTMAX)
  flags = [c for c in out if c.precision is None]
  if len(flags) > 1:
    union = tuple(w for c in flags for w in c.flags)
    out.append(
      PinCandidate(
        "pin_all",
        union,
        parts=tuple(c.name for c in flags),
      )
    )
  if pin_file is not None and a.target != "cpu":
    from hloprobe import kernels  # loaded only where a pin file was made

    out.append(
      PinCandidate(
        "pinned_gemms",
        (
          f"--xla_gpu_load_autotune_results_from={pin_file}",
          *kernels.pin_flags(),
        ),
        file=pin_file,
      )
    )
  return tuple(out)


def _cost(
  fixed: Sequence[ConfigResult], base: Sequence[ConfigResult]
) -> tuple[tuple[SiteChanges, ...], tuple[float, float] | None]:
  """(`Pin.changed`, `Pin.row0_abs`): the contraction sites whose fate
  the pin changed, per n, and row 0's largest |err| without and with it."""
  by_n = {r.config.n: r for r in base if r.ok}
  changed = tuple(
    site_changes(r, by_n[r.config.n])
    for r in fixed
    if r.ok and r.config.n in by_n
  )
  before, after = _row0_error(base), _row0_error(fixed)
  row0 = None if before is None or after is None else (before, after)
  return changed, row0


def _row0_error(results: Sequence[ConfigResult]) -> float | None:
  """The largest row-0 |err| against float64 over `results`: observed
  where the target ran, else the prediction's (the kernel model's where
  it is bit-exact); None where none is known."""
  found = []
  for r in results:
    run = r.execution
    stats = run.stats if run is not None else None
    if stats is None and r.prediction is not None:
      stats = r.prediction.stats
    if stats is not None and stats.row0_abs is not None:
      found.append(stats.row0_abs)
  return max(found) if found else None


def _all_but_one(after: Invariance | None) -> bool:
  """Whether only n = 1 is apart: for every row, two classes, one of
  them (1,), the other of at least two sizes."""
  if after is None or not after.rows:
    return False
  for row in after.rows:  # row 0 and the anchor alike
    classes = row.classes
    if row.moves or len(classes) != 2 or (1,) not in classes:
      return False
    if min(len(c) for c in classes if c != (1,)) < 2:
      return False
  return True


def _shell_case(plan: SweepPlan, a: Invariance) -> str:
  """Group `a`'s case as a printed command's --case word, its file's path
  made absolute (`compile.absolute_case_word`): the command then runs
  from any folder, as a user copies it."""
  source = next((s.source for s in plan.cases if s.case.name == a.case), a.case)
  return absolute_case_word(source)


def verify_command(
  plan: SweepPlan,
  a: Invariance,
  c: PinCandidate,
  sizes: Sequence[int] | None = None,
) -> str:
  """`hloprobe verify --case=... --targets=... --batch_sizes=...
  --precisions=... --fix=... --require=invariant` for group `a` (at
  `sizes`, default its own)."""
  source = _shell_case(plan, a)
  words = ["hloprobe", "verify", f"--case={source}"]
  names = dict(zip((t.name for t in plan.targets), plan.target_names))
  target = names.get(a.target, a.target)
  if is_config_path(target):
    words.append(f"--target_config={os.path.abspath(target)}")
  else:
    words.append(f"--targets={target}")
  words += [
    f"--batch_sizes={','.join(map(str, sizes or a.sizes))}",
    f"--precisions={a.precision}",
    _quoted(f"--fix={c.fix}"),
    "--require=invariant",
  ]
  return " ".join(words)


def search_command(
  plan: SweepPlan, a: Invariance, precisions: Sequence[str], sizes
) -> str:
  """`hloprobe explain --case=... --targets=... --batch_sizes=...
  --precisions=... --only=invariance --invariance=pin`: the one command
  that tries the candidates of group `a`'s case and target (under
  `precisions`, at `sizes`) and verifies each, with the bits alone (no
  accuracy numerics: the cheapest sweep that answers)."""
  source = _shell_case(plan, a)
  names = dict(zip((t.name for t in plan.targets), plan.target_names))
  target = names.get(a.target, a.target)
  where = "--target_config" if is_config_path(target) else "--targets"
  target = os.path.abspath(target) if is_config_path(target) else target
  return " ".join(
    [
      "hloprobe",
      "explain",
      _quoted(f"--case={source}"),
      _quoted(f"{where}={target}"),
      f"--batch_sizes={','.join(map(str, sizes))}",
      f"--precisions={','.join(precisions)}",
      "--only=invariance",
      "--invariance=pin",
    ]
  )


def _quoted(word: str) -> str:
  plain = all(ch.isalnum() or ch in "_=,.:/-" for ch in word)
  return word if plain else "'" + word.replace("'", "'\\''") + "'"


def search_pins(
  plan: SweepPlan,
  results: Sequence[ConfigResult],
  answers: Sequence[Invariance],
  pool,
  judge: Callable[[SweepPlan, list[ConfigResult]], tuple[Invariance, ...]],
  pin_files: Callable[[Invariance], str | None] | None = None,
  reader: KernelReader | None = None,
  pin_folder: str | None = None,
) -> tuple[Pin, ...]:
  """Every candidate of every group that is not invariant, each verified:
  one sweep per group (its case, target and sizes; the candidates as
  experiments and precisions), judged by `judge` (the invariance of a
  sweep's records: `in_workers.invariance_of_sweep` on the same pool).

  With `pin_folder` (and no `pin_files`), a compile-only GPU group's
  pinned-gemm file is written there first (`pin_file.write_pin_file`)
  and tried last, as the costliest.

  Returns the pins, per group in candidate order (cheapest first); a
  sweep that fails makes its candidates unknown, saying why.
  """
  del reader  # the judge carries it
  out = []
  inputs = case_inputs(plan, pool)  # a user case's: in its loader worker
  for a in answers:
    if a.invariant is not False or a.experiment != "baseline":
      continue
    found = candidates_for(a, pin_files(a) if pin_files else None)
    if pin_files is None and pin_folder and a.target != "cpu":
      path, why = write_pin_file(
        plan, a.case, a.target, a.precision, pin_folder, inputs
      )
      found = candidates_for(a, path)
      if path is None:
        out.append(
          Pin(*_key(a), PINNED_GEMMS, None, PinOutcome.NOT_MADE, "", why=why)
        )
    if not found:
      continue
    base = [r for r in results if group_key(r.config) == _key(a)]
    try:
      sub = _group_plan(plan, a, found)
      swept = run_sweep(sub, pool=pool)
      judged = judge(sub, swept)
    except Exception as e:  # each candidate unknown, with why
      out += [
        Pin(
          *_key(a),
          c,
          None,
          PinOutcome.NOT_SWEPT,
          verify_command(plan, a, c),
          sizes=a.sizes,
          why=first_line(e),
        )
        for c in found
      ]
      continue
    for c in found:
      key = _fixed_key(a, c)
      after = next((j for j in judged if _key(j) == key), None)
      fixed = [r for r in swept if group_key(r.config) == key]
      passed = None if after is None else after.invariant
      outcome, sizes, left_out = _outcome(after), a.sizes, ()
      if passed is False and _all_but_one(after):
        # n = 1 alone apart (a rank XLA drops there): the pin for n > 1.
        sizes = tuple(n for n in a.sizes if n != 1)
        passed = True
        outcome = PinOutcome.ONE_CLASS_BUT_N1
        left_out = (_boundary_at(1, after, a),)
      changed, row0 = _cost(fixed, base)
      out.append(
        Pin(
          *_key(a),
          c,
          passed,
          outcome,
          verify_command(plan, a, c, sizes),
          changed,
          row0,
          after,
          left_out,
          tuple(sizes),
        )
      )
  return tuple(out)


def _boundary_at(n: int, after: Invariance, base: Invariance) -> Boundary:
  """What sets size `n` apart under a pin: `after`'s boundary at `n`,
  else the baseline's (`base`), else one that says it was not read."""
  for a in (after, base):
    found = next((b for b in a.boundaries if b.n == n), None)
    if found is not None:
      return found
  others = [m for m in after.sizes if m != n]
  against = min(others, default=n)
  return Boundary(
    n,
    against,
    SiteChanges(n, against),
    unexplained=Unexplained(no_boundary=True),
  )


def untried_pins(
  plan: SweepPlan,
  answers: Sequence[Invariance],
  pin_files: Callable[[Invariance], str | None] | None = None,
) -> tuple[Pin, ...]:
  """The candidates of every group that is not invariant, not swept: each
  a `Pin` with `passed` None, `outcome` NOT_TRIED, its `verify` command
  and the `search_command` that tries them all (one per case and target:
  every such group's precision, their sizes)."""
  apart = [
    a for a in answers if a.invariant is False and a.experiment == "baseline"
  ]
  searches = {}
  for a in apart:
    same = [b for b in apart if (b.case, b.target) == (a.case, a.target)]
    searches[_key(a)] = search_command(
      plan,
      a,
      list(dict.fromkeys(b.precision for b in same)),
      sorted({n for b in same for n in b.sizes}),
    )
  return tuple(
    Pin(
      *_key(a),
      c,
      None,
      PinOutcome.NOT_TRIED,
      verify_command(plan, a, c),
      sizes=a.sizes,
      search=searches[_key(a)],
    )
    for a in apart
    for c in candidates_for(a, pin_files(a) if pin_files else None)
  )


def _key(a: Invariance) -> tuple[str, str, str, str]:
  return (a.case, a.target, a.precision, a.experiment)


def _fixed_key(a: Invariance, c: PinCandidate) -> tuple[str, str, str, str]:
  if c.precision is not None:
    return (a.case, a.target, c.precision, a.experiment)
  return (a.case, a.target, a.precision, c.name)


def _outcome(after: Invariance | None) -> PinOutcome:
  if after is None:
    return PinOutcome.NOT_JUDGED
  if after.invariant is None:
    return PinOutcome.UNKNOWN
  return PinOutcome.ONE_CLASS if after.invariant else PinOutcome.STILL_SPLIT


def _group_plan(
  plan: SweepPlan, a: Invariance, found: Sequence[PinCandidate]
) -> SweepPlan:
  """The group's case, target and sizes, with every candidate; passes
  named, unless `plan` is of the bits only (`SweepPlan.numerics` False,
  `explain --only=invariance`: then as `plan` asks, its numerics off
  too)."""
  case = next(s for s in plan.cases if s.case.name == a.case)
  i = next(i for i, t in enumerate(plan.targets) if t.name == a.target)
  base = next(p for p in plan.precisions if str(p) == a.precision)
  precisions = (base,) + tuple(c.precision for c in found if c.precision)
  experiments = tuple(e for c in found if (e := c.experiment()) is not None)
  if a.experiment != "baseline":
    raise ValueError(
      f"pins are searched on the baseline only, not {a.experiment!r}"
    )
  return plan_sweep(
    plan,
    cases=(case,),
    targets=(plan.targets[i],),
    target_names=(plan.target_names[i],),
    batch_sizes=tuple(a.sizes),
    precisions=precisions,
    experiments=experiments,
    explain_passes=plan.explain_passes or plan.numerics,
  )


def batch_invariance(
  plan: SweepPlan,
  results,
  pool,
  pin_folder: str | None = None,
  inputs: Callable[[int], tuple | None] | None = None,
  strict: bool = False,
  given: BaseException | None = None,
) -> tuple[tuple[Invariance, ...], tuple]:
  """`hloprobe explain --invariance`'s answer: the sweep's
  batch-invariance (`invariance_of_sweep`) and the pins of each group that
  is not invariant (`pin.Pin`s).

  Args:
    plan: the sweep's `engine.SweepPlan`.
    results: its `records.ConfigResult`s, or a `concurrent.futures.Future`
      of them, waited for after the rows are run (`invariance_of_sweep`:
      explain starts the answer when the sweep's lanes are done).
    pool: the sweep's worker pool (its compiles' executables are there).
    pin_folder: None: each applicable pin listed untried, with its
      `verify` command (`pin.untried_pins`); a folder: each pin searched
      and verified on the same pool (`pin.search_pins`; a compile-only
      GPU's pinned-gemm file is written there).
    inputs: case index -> its full inputs as the sweep's lanes sent them,
      or None: made again (`in_workers.case_inputs`).
    strict: a config whose rows fail, or a worker that dies reading its
      kernels, raises (`invariance_of_sweep`'s `EarlyAnswerIncomplete`)
      instead of the config being judged by its records' row 0 (or its
      fates).
    given: what such a strict answer raised: the rows and kernels it
      made are taken, not made again, and the rest made on its inputs
      (any other error: nothing is taken).

  Returns:
    (the `Invariance` answers, the pins).

  Raises:
    EarlyAnswerIncomplete: with `strict`, as said.
  """
  if not isinstance(given, EarlyAnswerIncomplete):
    given = None
  found = invariance_of_sweep(
    plan, results, pool, inputs=inputs, strict=strict, given=given
  )
  if isinstance(results, concurrent.futures.Future):
    results = results.result()
  if pin_folder is None:
    return found, untried_pins(plan, found)
  judge = lambda sub, swept: invariance_of_sweep(sub, swept, pool)
  pins = search_pins(plan, results, found, pool, judge, pin_folder=pin_folder)
  return found, pins
