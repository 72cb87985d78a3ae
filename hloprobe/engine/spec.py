"""What a sweep runs, in words: the `SweepSpec` record and its batch sizes.

A spec only holds what it was given; nothing is looked up or checked when
one is made. `plan.plan_sweep` resolves it, once, into a `SweepPlan` of
records (and `plan.spec_from_words` goes from the command line's words to
the plan).

Private in intent: use the package, `hloprobe.engine`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence

from hloprobe.compile import Case, Experiment, Target, is_config_path
from hloprobe.errors import InvalidArgumentError

__all__ = [
  "BITS_ONLY",
  "DEFAULT_CASE_TIMEOUT_S",
  "EXECUTORS",
  "MAX_BATCH_SIZE",
  "MAX_BATCH_SIZES",
  "SweepSpec",
  "check_nonempty",
  "config_file_words",
  "parse_batch_sizes",
]

# Wall seconds one call of a user case's program may take in a worker
# (loading it, its inputs, its float64 reference, one config's compile and
# run) before the worker is stopped and the case's configs fail.
DEFAULT_CASE_TIMEOUT_S = 600.0
# Where a sweep's workers run (--executor): see `SweepSpec.executor`.
EXECUTORS = ("local", "ray")


@dataclasses.dataclass(frozen=True)
class SweepSpec:
  """What to sweep, as given: names, or records with the names they go by.

  Nothing is looked up or checked here (see `plan.plan_sweep`, which
  does both once). A name or size given twice is swept once, where it
  first appears.

  Attributes:
    cases: case names (`seed_mlp`, `path/to/file.py:factory`) or `Case`
      records.
    batch_sizes: batch sizes, in the order given.
    precisions: matmul precision names (see `precisions.parse_precision`).
    targets: target names, config file paths or `Target` records.
    explain_passes: also name the XLA pass that rewrote each dot site
      (each compile also dumps the module after every pass; see `passes`).
    experiments: XLA_FLAGS experiments run beside the baseline; their
      configs compile in workers under their flags, as the baseline's do
      under the user's (see `run_sweep`).
    cache_dir: folder of the persistent record cache (see `cache`), or None
      to compute every config. Only successful configs are stored.
    jobs: how many worker processes compile and run at once (see
      `run_sweep`); results keep their order whatever it is.
    case_timeout_s: wall seconds a user case's (`module:factory`) work may
      take in one worker call (loading it, its inputs and references, one
      config's compile and run); past it the worker is stopped and that
      case's configs fail (see `run_sweep`).
    case_names: for `Case` records, the name each goes by (same length as
      `cases`; a worker process finds a case by it), or () for their own
      names.
    target_names: for `Target` records, the word each goes by, or ().
    inputs: an `.npz`/`.npy` file of arguments for the module-file cases
      (--inputs), or None.
    batch_arg: the module-file cases' batch parameter (--batch_arg: number
      or name), or None to take the one the output's leading axis shares.
    executor: where the workers run: "local" (processes of this machine,
      `runtime.WorkerPool`) or "ray" (actors of a Ray cluster,
      `runtime.RayPool`); results are the same either way.
    ray_address: the Ray cluster's address (--ray_address), or None for
      RAY_ADDRESS, else a local cluster of `jobs` CPUs on 127.0.0.1.
    all_rows: judge every row of every config (--all_rows); else a
      rows_independent case above `numerics.rows.ALL_ROWS_UP_TO` rows
      judges row 0, a sample and the worst rows of a first pass.
    max_worker_mb: the resident memory, in MiB, a worker may reach
      (--max_worker_mb); past it the worker is stopped and its config
      fails with one line naming it (`runtime.Worker`); None: a quarter
      of the machine's memory (`runtime.default_max_worker_mb`).
    numerics: the accuracy numerics (True): each config's errors against
      the float64 reference, its prediction and what XLA made. False:
      the bits only (`explain --only=invariance`): each config compiled,
      its sites mapped and, where the target runs, run, and no reference,
      noise floor or emulation made (the record's `prediction_error`
      says so: `BITS_ONLY`).
  """

  cases: tuple[Case | str, ...]
  batch_sizes: tuple[int, ...]
  precisions: tuple[str, ...]
  targets: tuple[Target | str, ...]
  explain_passes: bool = False
  experiments: tuple[Experiment, ...] = ()
  cache_dir: str | None = None
  jobs: int = 1
  case_timeout_s: float = DEFAULT_CASE_TIMEOUT_S
  case_names: tuple[str, ...] = ()
  target_names: tuple[str, ...] = ()
  inputs: str | None = None
  batch_arg: str | None = None
  executor: str = "local"
  ray_address: str | None = None
  all_rows: bool = False
  max_worker_mb: int | None = None
  numerics: bool = True

  def nonempty(self) -> SweepSpec:
    """This spec, unless a list is empty (`check_nonempty`).

    Raises:
      InvalidArgumentError: names the empty lists.
    """
    return check_nonempty(self)


# Why a config of a sweep without numerics (`SweepSpec.numerics` False) has
# no prediction: its `ConfigResult.prediction_error`.
BITS_ONLY = (
  "not computed: the bits only (explain --only=invariance: no float64 "
  "reference, no prediction)"
)


# Stated maxima, checked before any list is built: a batch size (rows of
# the batched argument) and the number of batch sizes in one sweep.
MAX_BATCH_SIZE = 1 << 20
MAX_BATCH_SIZES = 4096
# ASCII digits only ([0-9], not \\d: `int` would read '١' and '１'), at most
# as many as MAX_BATCH_SIZE has, so no huge integer is ever made.
_ITEM_RE = re.compile(r"([0-9]{1,7})(?:-([0-9]{1,7}))?")


def _bad_batch_size(
  item: str, text: str, why: str = ""
) -> InvalidArgumentError:
  return InvalidArgumentError(
    f"bad batch size {item!r} in --batch_sizes={text!r}{why}; expected "
    f"positive integers and ascending ranges up to {MAX_BATCH_SIZE}, at "
    f"most {MAX_BATCH_SIZES} sizes, e.g. '1,2,4-9,64'"
  )


def parse_batch_sizes(text: str) -> tuple[int, ...]:
  """Parses `1,2,4-9,64` into (1, 2, 4, 5, 6, 7, 8, 9, 64).

  Sizes are ASCII integers in [1, MAX_BATCH_SIZE]; at most MAX_BATCH_SIZES
  of them, counted before any range is expanded. A size given twice is
  kept once, where it first appears.

  Raises:
    InvalidArgumentError: an item is not a positive integer or an ascending range,
      or the limits above are exceeded.
  """
  bounds, count = [], 0
  for item in text.split(","):
    item = item.strip()
    m = _ITEM_RE.fullmatch(item)
    if m is None:
      raise _bad_batch_size(item, text)
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if not 1 <= lo <= hi <= MAX_BATCH_SIZE:
      raise _bad_batch_size(item, text)
    count += hi - lo + 1
    if count > MAX_BATCH_SIZES:
      raise _bad_batch_size(item, text, f": more than {MAX_BATCH_SIZES} sizes")
    bounds.append((lo, hi))
  sizes = (n for lo, hi in bounds for n in range(lo, hi + 1))
  return tuple(dict.fromkeys(sizes))


def config_file_words(paths: Sequence[str]) -> tuple[str, ...]:
  """--target_config paths, as words `targets.get_target` reads as files.

  A bare file name (`--target_config=cpu`) becomes `./cpu`, so a file named
  like a built-in target is still read as a file.
  """
  return tuple(
    p if is_config_path(p) else os.path.join(os.curdir, p) for p in paths
  )


def check_nonempty(spec):
  """`spec` (a `SweepSpec` or a `plan.SweepPlan`), unless a list is empty:
  it would sweep nothing and pass. Outside the engine: `SweepSpec.nonempty`,
  `SweepPlan.nonempty`.

  Raises:
    InvalidArgumentError: names the empty lists.
  """
  empty = [
    name
    for name in ("cases", "targets", "batch_sizes", "precisions")
    if not getattr(spec, name)
  ]
  if empty:
    raise InvalidArgumentError(
      f"nothing to sweep: no {' and no '.join(empty)}; e.g. --case=seed_mlp "
      "--targets=cpu --batch_sizes=1,2 --precisions=float32"
    )
  return spec
