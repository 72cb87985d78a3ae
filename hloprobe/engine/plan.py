"""A sweep's plan: the spec's words resolved once into records.

`plan_sweep` is the one place a sweep looks its cases, targets and
precisions up by name (jax `stages.py`: `Traced.lower()` returns
`Lowered`; here a `SweepSpec`'s words give a `SweepPlan` of records).
Everything after it (the worker's compile, the main process's
measurements, the report) is handed the records: a `PlannedConfig` holds
the `records.Config` its results carry, the `SweptCase` (the `Case` record
and the words it was given by) and the `Experiment` record.

A user case (`path/to/file.py:factory`) travels to a worker as its words
(`SweptCase.source`; its function may not pickle) and is resolved there
once per worker process (`compiled.CompileRequest`).

Private in intent: use the package, `hloprobe.engine`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import jax
import numpy as np

from hloprobe.compile import (
  BASELINE,
  BUILTIN_EXPERIMENTS,
  Case,
  Experiment,
  Target,
  get_target,
  is_config_path,
  resolvable_elsewhere,
  sweep_experiments,
)
from hloprobe.engine.shard import (
  Shard,
  config_cost,
  parse_shard,
  plan_fingerprint,
  shard_identity,
  shard_members,
)
from hloprobe.engine.shared import SharedInputs, resolved, share
from hloprobe.engine.shell import case_loader, loaded_in_worker
from hloprobe.engine.spec import (
  DEFAULT_CASE_TIMEOUT_S,
  SweepSpec,
  check_nonempty,
  config_file_words,
  parse_batch_sizes,
)
from hloprobe.errors import CaseError, InvalidArgumentError
from hloprobe.ir import Precision, as_precision
from hloprobe.records import Config
from hloprobe.runtime import WorkerPool

__all__ = [
  "PlannedConfig",
  "SweepPlan",
  "SweptCase",
  "check_case_sizes",
  "plan_sweep",
  "spec_from_words",
]


# The pool lane of the user cases' worker (no compile lane is negative).
CASE_LANE = -1


@dataclasses.dataclass(frozen=True)
class SweptCase:
  """A case of a sweep, looked up once.

  Attributes:
    case: the `Case` record.
    source: the words it was given by (`seed_mlp`, `pkg.mod:factory`,
      `path/to/file.py:factory`): what MANIFEST.json records and how a
      worker process finds it.
    portable: a fresh process (a worker) finds this very record by
      `source` (`cases.resolvable_elsewhere`); False for a record made in
      this process only, which then compiles here.
    loader: the pool whose worker loaded and keeps the user cases.
  """

  case: Case
  source: str
  portable: bool
  loader: WorkerPool | None = dataclasses.field(default=None, compare=False)

  @property
  def name(self) -> str:
    """The case's own name, as results print it."""
    return self.case.name

  def case_worker(self, pool) -> tuple:
    """(pool, lane) of the worker that runs this user case's code: its
    loader's (lane 0) while that pool is open, else `pool`'s `CASE_LANE`
    worker (not a compile lane: a sweep pool keeps those lanes' heaps,
    `WorkerPool`'s `kept_heap`)."""
    if self.loader is None or self.loader.closed:
      return pool, CASE_LANE
    return self.loader, 0

  @property
  def guarded(self) -> bool:
    """A user's case (`module:factory`): its program runs in worker
    processes only, under a timeout (see `shell.CaseShellRequest`)."""
    return self.portable and ":" in self.source

  @staticmethod
  def shared_inputs(full, where):
    """A case's full inputs as requests to a pool's workers carry them:
    large array leaves written once to the folder the pool shares
    (`shared.share`: a `shared.SharedInputs` record, which each process
    maps instead of unpickling a copy; issue 37: the batch-invariance
    answer sent decode's 0.47 GB of inputs pickled in each of its 14
    requests), `full` as it is where the pool shares no folder (Ray's),
    it holds no large leaf, it is shared already, or the folder cannot be
    written. The same bytes either way.

    Args:
      full: the inputs (a tuple of pytrees of arrays), or None.
      where: the pool (`WorkerPool.shared_folder`), the folder's path, or
        None.
    """
    folder = getattr(where, "shared_folder", None)
    folder = folder() if folder is not None else where
    if not isinstance(folder, str) or isinstance(full, SharedInputs):
      return full
    try:
      return share(full, folder)
    except OSError:  # no room: the arrays go as they are
      return full

  @staticmethod
  def resolved_inputs(full):
    """The arrays `shared_inputs` stands for (mapped read-only, once per
    process), in a worker; anything else as it is."""
    return resolved(full)

  @staticmethod
  def same_inputs(a, b) -> bool:
    """Whether two full inputs of a case (None for a sized case), each as
    `resolved_inputs` gave it in this worker, are the same values: a later
    sweep on a worker may send others (a case whose `make_inputs` draws
    afresh), and what the worker kept of an earlier one (a `MadeChecker`,
    a run's outputs) holds for the inputs it was made with. Mapped leaves
    are the very arrays; the small ones pickled along are compared whole
    (dtype, shape, values)."""
    if a is None or b is None:
      return a is b
    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    if tree_a != tree_b:
      return False
    for x, y in zip(leaves_a, leaves_b):
      if x is y:
        continue
      x, y = np.asarray(x), np.asarray(y)
      if x.dtype != y.dtype or not np.array_equal(x, y):
        return False
    return True


@dataclasses.dataclass(frozen=True)
class PlannedConfig:
  """One config of a plan, every part a record.

  Attributes:
    config: the plain-value record its results carry (case name, `Target`,
      n, `Precision`, experiment name); made here, never stamped later.
    case: the case, with its source words.
    experiment: the XLA_FLAGS experiment (`BASELINE` for none).
    case_index: the case's index in `SweepPlan.cases`.
  """

  config: Config
  case: SweptCase
  experiment: Experiment
  case_index: int

  @staticmethod
  def lanes_of(configs: Sequence[PlannedConfig], lanes: int) -> list[int]:
    """The lane (0 .. `lanes` - 1) each of one flag set's `configs` (in
    plan order) is dealt to: the configs of one case, target and n, at
    every precision, to one lane, and those groups by their estimated
    cost (`cost`), the costliest first, each to the lane of least cost so
    far (the lower lane on a tie): the same deal for the same `configs`.

    Issue 37: a config's executions of its optimized module are made in
    the worker that compiled it (`compiled.CompileRequest.made`), and
    the modules of one case, target and n at bfloat16 and float32 are
    executed as one (`numerics.made.executed_digest`: gpt2_1's CPU and
    a100 modules), so their worker makes them once; dealt one config to
    a lane in turn, as before, the two precisions of a size went to two
    lanes whenever the sizes were odd in number, each executing it. The
    groups were then dealt in turn, which gave gpt2_1's cpu and a100 x
    n = 1, 2, 8 one lane of four a100 compiles and one of two: the
    second lane idled for the last 7 s of a 28-s sweep.
    """
    largest: dict[int, int] = {}
    for c in configs:
      largest[c.case_index] = max(largest.get(c.case_index, 1), c.config.n)
    groups: dict[tuple, float] = {}  # plan order: ties keep it
    for c in configs:
      cost = c.cost(largest[c.case_index])
      groups[c.lane_group] = groups.get(c.lane_group, 0.0) + cost
    load = [0.0] * max(1, lanes)
    dealt = {}
    for key in sorted(groups, key=lambda k: -groups[k]):
      lane = min(range(len(load)), key=lambda i: (load[i], i))
      dealt[key] = lane
      load[lane] += groups[key]
    return [dealt[c.lane_group] for c in configs]

  @property
  def worker_flags(self) -> str:
    """The extra XLA_FLAGS of this config's sweep worker: its
    experiment's, then the host devices a sharded case needs
    (`Case.host_device_flag`), so that the CPU of its worker has them."""
    devices = self.case.case.host_device_flag
    return " ".join(w for w in (self.experiment.flags_text, devices) if w)

  @property
  def lane_group(self) -> tuple:
    """What `lanes_of` keeps on one lane: (case index, target, n)."""
    return (self.case_index, self.config.target, self.config.n)

  # A config's estimated worker seconds, relative: a GPU compile (Triton
  # and LLVM passes, ptxas) against a CPU compile and run. Measured on 2
  # cores with both lanes and the case's worker busy (2026-12-07, jaxlib
  # 0.12.0.1, explain of bench_models' gpt2_1 and decode): an a100 config
  # took 3.3-5.8 s (gpt2_1 about 4.3), a CPU config 1.0-1.8 s at n = 1-8
  # (gpt2_1 about 1.2) and about 3 s at decode's n = 64 (its run, anchors
  # and executions of the module grow with the rows).
  _GPU_COST = 4.0
  _CPU_COST = 1.0

  def cost(self, largest: int) -> float:
    """This config's estimated worker cost (relative, for `lanes_of`):
    `_GPU_COST` for a GPU target's compile, `_CPU_COST` for a CPU's,
    plus its batch size over `largest`, its case's largest in the deal
    (the runs that grow with the rows)."""
    cpu = self.config.target.platform == "cpu"
    base = self._CPU_COST if cpu else self._GPU_COST
    return base + self.config.n / max(1, largest)


@dataclasses.dataclass(frozen=True)
class SweepPlan:
  """A sweep with every name resolved, every list checked and deduplicated.

  Its fields mirror `SweepSpec`'s, as records: read it where a spec's
  resolved parts are needed (`case_names`, `target_names` are the words
  MANIFEST.json records).

  Attributes:
    cases: the cases, each once.
    batch_sizes: positive batch sizes, in the order given.
    precisions: the matmul precisions.
    targets: the `Target` records.
    target_names: the word each target was given by (`a100`, or a config
      file's path as given).
    explain_passes, experiments, cache_dir, jobs, inputs, case_timeout_s,
      executor, ray_address, all_rows, max_worker_mb, numerics: as
      `SweepSpec`'s (`inputs` already given to
      the module-file cases, kept for a sweep made again elsewhere, as
      `versions` does).
    shard: the part of the configs this process runs (`--shard`), or
      None for all of them.
  """

  cases: tuple[SweptCase, ...]
  batch_sizes: tuple[int, ...]
  precisions: tuple[Precision, ...]
  targets: tuple[Target, ...]
  target_names: tuple[str, ...]
  explain_passes: bool = False
  experiments: tuple[Experiment, ...] = ()
  cache_dir: str | None = None
  jobs: int = 1
  case_timeout_s: float = DEFAULT_CASE_TIMEOUT_S
  inputs: str | None = None
  batch_arg: str | None = None
  shard: Shard | None = None
  executor: str = "local"
  ray_address: str | None = None
  all_rows: bool = False
  max_worker_mb: int | None = None
  numerics: bool = True

  @property
  def case_names(self) -> tuple[str, ...]:
    """The words each case was given by."""
    return tuple(c.source for c in self.cases)

  @property
  def config_count(self) -> int:
    """How many configs the sweep runs, each experiment's included."""
    return len(self.configs())

  def configs(self) -> tuple[PlannedConfig, ...]:
    """The configs this process runs, in output order: all of them
    (`all_configs`), or the shard's (`shard.shard_members`)."""
    every = self.all_configs()
    if self.shard is None:
      return every
    return tuple(every[i] for i in self.shard_indices())

  def shard_indices(self) -> list[int]:
    """The indices into `all_configs()` of the configs `configs()` gives."""
    every = self.all_configs()
    if self.shard is None:
      return list(range(len(every)))
    costs = [config_cost(c.config.target.platform) for c in every]
    return shard_members(costs, self.shard)

  def words(self) -> dict:
    """The plan as the words that make it again (`spec_from_words`'s
    arguments): what a shard records for `hloprobe merge`."""
    return {
      "cases": list(self.case_names),
      "batch_sizes": list(self.batch_sizes),
      "precisions": [str(p) for p in self.precisions],
      "targets": list(self.target_names),
      "experiments": [experiment_word(e) for e in self.experiments],
      "explain_passes": self.explain_passes,
      "inputs": self.inputs,
      **({"batch_arg": self.batch_arg} if self.batch_arg is not None else {}),
    }

  def fingerprint(self, identity: dict | None = None) -> str:
    """`shard.plan_fingerprint` of this plan's words, each target's
    definition and `identity` (hloprobe's source hash, the jax versions,
    XLA_FLAGS; None: this process's, `shard.shard_identity(os.environ)`):
    equal for the shards of one sweep, whatever the shard."""
    if identity is None:
      identity = shard_identity(os.environ)
    targets = {"targets": [repr(t) for t in self.targets]}
    return plan_fingerprint(self.words(), {**identity, **targets})

  def all_configs(self) -> tuple[PlannedConfig, ...]:
    """Every config in output order: the baseline's (case, target,
    precision, n), then each experiment's in the same order."""
    return tuple(
      PlannedConfig(Config(c.name, t, n, p, e.name), c, e, i)
      for e in (BASELINE, *self.experiments)
      for i, c in enumerate(self.cases)
      for t in self.targets
      for p in self.precisions
      for n in self.sizes_of(c)
    )

  @property
  def lanes_per_set(self) -> int:
    """The lanes (workers) each flag set's configs are dealt to: the
    baseline and each experiment share `jobs`, at least one each."""
    return max(1, self.jobs // (1 + len(self.experiments)))

  def dealt_lanes(self) -> list[tuple[str, int] | None]:
    """Per config of `configs()`, in order: (extra XLA_FLAGS, lane) of
    the worker the sweep compiles it in, None for a config compiled in
    this process (not portable). Each flag set's portable configs, cached
    or not, are dealt to `lanes_per_set` lanes by `PlannedConfig.lanes_of`:
    the engine gives each lane those it must do, and the batch-invariance
    answer asks each config's rows and kernels there, where its worker
    kept the compile."""
    configs = self.configs()
    sets: dict[str, list[int]] = {}
    for i, c in enumerate(configs):
      if c.case.portable:
        sets.setdefault(c.worker_flags, []).append(i)
    out: list[tuple[str, int] | None] = [None] * len(configs)
    for flags, mine in sets.items():
      dealt = PlannedConfig.lanes_of(
        [configs[i] for i in mine], self.lanes_per_set
      )
      for i, lane in zip(mine, dealt):
        out[i] = (flags, lane)
    return out

  def sizes_of(self, case: SweptCase) -> tuple[int, ...]:
    """The batch sizes a case runs at: its own one (`Case.fixed_size`, a
    module file's) or the sweep's."""
    fixed = case.case.fixed_size
    return self.batch_sizes if fixed is None else (fixed,)

  def nonempty(self) -> SweepPlan:
    """This plan, unless a list is empty: it would sweep nothing and pass.

    Raises:
      InvalidArgumentError: names the empty lists (`check_nonempty`).
    """
    return check_nonempty(self)


def plan_sweep(spec: SweepSpec | SweepPlan, **changes) -> SweepPlan:
  """Resolves a sweep's words into records, once.

  Names are looked up (`cases.get_case`, `targets.get_target`,
  `precisions.as_precision`); records pass through untouched, so planning
  a plan again looks nothing up. A name or size given twice is swept once,
  where it first appears.

  Args:
    spec: the sweep in words (or records), or a plan.
    **changes: fields to replace first (`dataclasses.replace`).

  Raises:
    CaseError: an unknown case, a user case that fails to load, or one
      case under two names.
    TargetError: an unknown target or an unreadable config file.
    InvalidArgumentError: an unknown precision, a batch size below 1,
      experiment names repeated or 'baseline', targets sharing a name.
  """
  spec = dataclasses.replace(spec, **changes) if changes else spec
  experiments = tuple(dict.fromkeys(spec.experiments))
  names = [e.name for e in experiments]
  if len(set(names)) != len(names) or BASELINE.name in names:
    raise InvalidArgumentError(
      f"experiment names must be unique and not 'baseline': {names}"
    )
  if isinstance(spec, SweepPlan):
    cases, targets = spec.cases, list(zip(spec.target_names, spec.targets))
  else:
    cases = _swept_cases(
      spec.cases,
      spec.case_names,
      spec.inputs,
      spec.case_timeout_s,
      spec.batch_arg,
    )
    targets = _looked_up(spec.targets, spec.target_names, get_target)
  targets = _check_target_names(targets)
  precisions = tuple(
    dict.fromkeys(
      p if isinstance(p, Precision) else as_precision(p)
      for p in spec.precisions
    )
  )
  batch_sizes = tuple(dict.fromkeys(spec.batch_sizes))
  if not batch_sizes or min(batch_sizes) < 1:
    raise InvalidArgumentError(
      f"batch sizes must be positive integers, got {batch_sizes}"
    )
  return SweepPlan(
    cases=cases,
    batch_sizes=batch_sizes,
    precisions=precisions,
    targets=tuple(t for _, t in targets),
    target_names=tuple(w for w, _ in targets),
    explain_passes=spec.explain_passes,
    experiments=experiments,
    cache_dir=spec.cache_dir,
    jobs=spec.jobs,
    case_timeout_s=spec.case_timeout_s,
    inputs=spec.inputs,
    batch_arg=spec.batch_arg,
    shard=getattr(spec, "shard", None),
    executor=spec.executor,
    ray_address=spec.ray_address,
    all_rows=spec.all_rows,
    max_worker_mb=spec.max_worker_mb,
    numerics=spec.numerics,
  )


def experiment_word(e: Experiment) -> str:
  """The --experiment word that gives `e` again: a built-in's name, else
  NAME:FLAGS."""
  if BUILTIN_EXPERIMENTS.get(e.name) == e:
    return e.name
  return f"{e.name}:{e.flags_text}"


def _looked_up(items, names, lookup) -> list[tuple[str, object]]:
  """(name, record) pairs of names or records, a name given twice once.

  A name is looked up with `lookup`; a record keeps its name from `names`
  (same length as `items`), else takes its own `.name`.
  """
  if len(names) != len(items):
    names = [None] * len(items)
  found: dict[str, object] = {}
  for item, name in zip(items, names):
    word = item if isinstance(item, str) else name or item.name
    if word not in found:
      found[word] = lookup(item) if isinstance(item, str) else item
  return list(found.items())


def _swept_cases(
  items,
  names,
  inputs=None,
  timeout_s: float = DEFAULT_CASE_TIMEOUT_S,
  batch_arg: str | None = None,
) -> tuple[SweptCase, ...]:
  """The cases, each looked up once (a module file's with `inputs`); one
  case under two names is an error. A user's case (`module:factory`) is
  loaded in a worker, never here (`shell.case_loader`, which keeps it).

  Raises:
    CaseError: one case given under two names; a user case that fails to
      load, or whose worker dies or runs past `timeout_s` loading it.
  """
  out: dict[str, SweptCase] = {}
  with case_loader() as pool:  # kept when a user's case loaded
    lookup = lambda w: loaded_in_worker(pool, w, timeout_s, inputs, batch_arg)
    found = _looked_up(items, names, lookup)
  for source, case in found:
    swept = SweptCase(case, source, resolvable_elsewhere(source, case), pool)
    first = out.setdefault(case.name, swept)
    if first is not swept:
      pool.close(kill=True)  # no plan keeps its cases
      raise CaseError(
        f"case {case.name!r} given twice (as {first.source!r}); each "
        "case may be swept once"
      )
  return tuple(out.values())


def _same_target(a: tuple[str, Target], b: tuple[str, Target]) -> bool:
  """One built-in name, or two paths of one config file."""
  if a[0] == b[0]:
    return True
  files = is_config_path(a[0]) and is_config_path(b[0])
  return files and os.path.realpath(a[0]) == os.path.realpath(b[0])


def _check_target_names(pairs) -> list[tuple[str, Target]]:
  """No two targets share a name (rows and output folders are keyed by
  it; a config file's target is named after the file).

  Args:
    pairs: (word, Target) as `_looked_up` gives them.

  Returns:
    `pairs` with repeats of one target (`x.txtpb` and `./x.txtpb`) dropped
    after their first.

  Raises:
    InvalidArgumentError: two targets share a name.
  """
  seen: dict[str, tuple[str, Target]] = {}
  for word, target in pairs:
    first = seen.get(target.name)
    if first is not None and not _same_target(first, (word, target)):
      raise InvalidArgumentError(
        f"targets {first[0]!r} and {word!r} are both named {target.name!r}; "
        "rows and output folders are keyed by the name: rename a config "
        "file (a config's target is named after its file)"
      )
    seen.setdefault(target.name, (word, target))
  return list(seen.values())


def check_case_sizes(plan: SweepPlan, inputs: Sequence[tuple | None]) -> None:
  """A batch size larger than a case's rows is bad input, found up front.

  Args:
    plan: the sweep.
    inputs: each of `plan.cases`' full-size inputs, in order; the caller
      keeps them (a case's `make_inputs` runs once).

  Raises:
    CaseError: the case's inputs disagree on the batch size or have no
      batched argument.
    InvalidArgumentError: names the case, its rows and the largest size.
  """
  for swept, full in zip(plan.cases, inputs):
    if full is None:  # a sized case makes its inputs at each size
      continue
    largest = max(plan.sizes_of(swept))
    rows = swept.case.full_size(full)
    if largest > rows:
      raise InvalidArgumentError(
        f"batch size {largest} exceeds the {rows} rows of case "
        f"{swept.source!r}; "
        f"use --batch_sizes up to {rows}"
      )


def spec_from_words(
  *,
  cases: Sequence[str],
  batch_sizes: str,
  precisions: Sequence[str],
  targets: Sequence[str],
  target_configs: Sequence[str] = (),
  explain_passes: bool = False,
  experiment_words: Sequence[str] = (),
  experiments_file: str | None = None,
  cache_dir: str | None = None,
  jobs: int = 1,
  case_timeout_s: float = DEFAULT_CASE_TIMEOUT_S,
  inputs: str | None = None,
  autotune_results: Sequence[str] = (),
  batch_arg: str | None = None,
  all_rows: bool = False,
  max_worker_mb: int | None = None,
  shard: str | None = None,
) -> SweepPlan:
  """The plan of the sweep the command line names, in its words.

  Args:
    cases, precisions, targets: names, as --case, --precisions, --targets.
    batch_sizes: as --batch_sizes, e.g. "1,2,4-9" (see `parse_batch_sizes`).
    target_configs: --target_config paths (see `config_file_words`), swept
      after `targets`.
    explain_passes, cache_dir, jobs, case_timeout_s: as `SweepSpec`'s
      fields.
    experiment_words: NAME:FLAGS or built-in names (--experiment).
    experiments_file: a file of NAME:FLAGS lines, or None.
    inputs: --inputs, the module-file cases' arguments, or None.
    batch_arg: --batch_arg, the module-file cases' batch parameter, or None.
    autotune_results: --autotune_results files, each an experiment
      (`compile.sweep_experiments`), after the others.
    all_rows, max_worker_mb: --all_rows and --max_worker_mb, as
      `SweepSpec`'s fields.
    shard: --shard, `I/N` or `auto/N` (`shard.parse_shard`, reading
      `auto` from `os.environ`): the plan cut to that part; None: whole.

  Raises:
    InvalidArgumentError: a bad name or size, or a list that is empty (as
      `plan_sweep`, whose look-ups come first); a bad --shard, after them.
  """
  found = sweep_experiments(
    experiment_words,
    experiments_file,
    autotune_results,
    tuple(targets) + config_file_words(target_configs),
  )
  plan = check_nonempty(
    plan_sweep(
      SweepSpec(
        cases=tuple(cases),
        batch_sizes=parse_batch_sizes(batch_sizes),
        precisions=tuple(precisions),
        targets=tuple(targets) + config_file_words(target_configs),
        explain_passes=explain_passes,
        experiments=tuple(found),
        cache_dir=cache_dir,
        jobs=jobs,
        case_timeout_s=case_timeout_s,
        inputs=inputs,
        batch_arg=batch_arg,
        all_rows=all_rows,
        max_worker_mb=max_worker_mb,
      )
    )
  )
  if shard is None:
    return plan
  return plan_sweep(plan, shard=parse_shard(shard, os.environ))
