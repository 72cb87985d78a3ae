"""`plan`: the sweep a command names, in its words, planned once.

The command line's commands (sweep, explain, verify, ...) turn their flags
into this one call (`commands.common.sweep_spec`); each argument left out
takes `DEFAULTS`' value, as a flag left out does. A function or `Case` from
Python is planned by `calls.plan_case` with the same defaults.

Private in intent: use the package, `hloprobe.api`.
"""

from __future__ import annotations

from collections.abc import Sequence

from hloprobe.api.defaults import DEFAULTS
from hloprobe.engine import SweepPlan, spec_from_words

__all__ = ["plan"]


def plan(
  cases: Sequence[str],
  *,
  batch_sizes: str = DEFAULTS.batch_sizes,
  precisions: Sequence[str] = DEFAULTS.precisions,
  targets: Sequence[str] = DEFAULTS.targets,
  target_configs: Sequence[str] = (),
  autotune_results: Sequence[str] = (),
  experiments: Sequence[str] = (),
  experiments_file: str | None = None,
  explain_passes: bool = False,
  cache: bool = True,
  cache_dir: str | None = None,
  jobs: int | None = None,
  case_timeout_s: float = DEFAULTS.case_timeout_s,
  inputs: str | None = None,
  batch_arg: str | None = None,
  all_rows: bool = False,
  max_worker_mb: int | None = None,
  shard: str | None = None,
) -> SweepPlan:
  """The plan of a sweep named in the command line's words.

  Args:
    cases: case words (`seed_mlp`, `path/to/file.py:factory`, a module
      file), as --case.
    batch_sizes: as --batch_sizes, e.g. "1,2,4-9".
    precisions, targets: names, as --precisions and --targets.
    target_configs: --target_config files, swept after `targets`.
    autotune_results: --autotune_results files (experiments).
    experiments: NAME:FLAGS or built-in names (--experiment).
    experiments_file: a file of NAME:FLAGS lines, or None.
    explain_passes: name the XLA pass that rewrote each dot site.
    cache: keep and reuse records in `cache_dir` (False: --nocache).
    cache_dir: the record cache; None: `DEFAULTS.cache_dir()`.
    jobs: worker processes at once (>= 1); None: `DEFAULTS.jobs()`.
    case_timeout_s: seconds one worker call of a user case may take.
    inputs: a module case's arguments (.npz/.npy), or None.
    batch_arg: a module case's batch argument (--batch_arg: name or
      index), or None for the one whose axis 0 the output shares.
    all_rows: judge every row (--all_rows), not row 0, a sample and a
      first pass's worst rows (`engine.SweepSpec.all_rows`).
    max_worker_mb: a worker's resident memory bound in MiB
      (--max_worker_mb); None: a quarter of the machine's.
    shard: --shard (`I/N` or `auto/N`): the plan cut to that part of its
      configs (`engine.spec_from_words`); None: the whole plan.

  Raises:
    InvalidArgumentError: a bad name or size, an empty list or a bad
      --shard (`engine.spec_from_words`).
  """
  return spec_from_words(
    inputs=inputs,
    batch_arg=batch_arg,
    cases=list(cases),
    batch_sizes=batch_sizes,
    precisions=list(precisions),
    targets=list(targets),
    target_configs=list(target_configs),
    autotune_results=list(autotune_results),
    explain_passes=explain_passes,
    experiment_words=list(experiments),
    experiments_file=experiments_file,
    cache_dir=(cache_dir or DEFAULTS.cache_dir()) if cache else None,
    jobs=jobs or DEFAULTS.jobs(),
    case_timeout_s=case_timeout_s,
    all_rows=all_rows,
    max_worker_mb=max_worker_mb,
    shard=shard,
  )
