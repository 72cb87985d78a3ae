"""What every command shares: the sweep words, exit codes, starting JAX,
the cache folder and the progress bar. A sweep runs through `api.run`
(streamed to --output_dir; its interrupt, `api.Interrupted`, carries the
configs finished).

Each command module (`hloprobe.commands.<name>`) has a frozen args record
whose fields are named after the flags it reads (`cli` builds it from the
absl flags and derives from those fields which command accepts which
flag), a library function, then `main(args) -> int` that prints.
"""

from __future__ import annotations

import ctypes
import dataclasses
import enum
import logging
import os
import sys
import threading

from tqdm import tqdm

from hloprobe.api import Interrupted
from hloprobe.compile import jaxlib_release
from hloprobe.errors import InvalidArgumentError
from hloprobe.runtime import RecordCache

__all__ = [
  "ExitStatus",
  "Interrupted",
  "SweepWords",
  "bound_cache",
  "cache_dir",
  "check_format",
  "check_module_words",
  "host",
  "progress_printer",
  "reported_cases",
  "start_jax",
  "sweep_spec",
  "sweep_values",
  "venv_dir",
  "with_executor",
]


class ExitStatus(enum.IntEnum):
  """hloprobe's exit statuses (an interrupt exits 128 + the signal's number).

  Attributes:
    OK: the command did what it was asked, and every config succeeded or
      every requirement held.
    FAILED: a config failed, a requirement or golden check did not hold, or
      an error that is not the input's (HloprobeError, OSError).
    USAGE: bad input (InvalidArgumentError): one line, nothing run.
  """

  OK = 0
  FAILED = 1
  USAGE = 2


@dataclasses.dataclass(frozen=True, slots=True)
class SweepWords:
  """The flags every command accepts (the sweep's words), as given.

  A command-specific flag is a field of a command's args record and not
  of this one; `cli` rejects it for the other commands.

  Attributes:
    case: --case, names as written.
    batch_sizes: --batch_sizes, e.g. "1-9".
    precisions: --precisions.
    targets: --targets.
    target_config: --target_config files.
    autotune_results: --autotune_results files (experiments, see
      `compile.autotune_experiment`).
    explain_passes: --explain_passes.
    output_dir: --output_dir, or None.
    format: --format: "table", "json", "markdown" or "html".
    jobs: --jobs, worker processes at once (>= 1).
    cache_dir: --cache_dir, or None (the default folder).
    cache: --cache (the default); False with --nocache.
    case_timeout: --case_timeout, seconds one worker call of a user case
      may take (see `engine.SweepSpec.case_timeout_s`).
    inputs: --inputs, an `.npz`/`.npy` file of a module case's arguments,
      or None.
    batch_arg: --batch_arg, a module case's batch parameter (number or
      name), or None.
    all_rows: --all_rows: judge every row.
    max_worker_mb: --max_worker_mb, a worker's resident memory bound in
      MiB, or None (a quarter of the machine's).
    given: the names of the flags above given on the command line.
  """

  case: tuple[str, ...] = ("seed_mlp",)
  batch_sizes: str = "1-9"
  precisions: tuple[str, ...] = ()
  targets: tuple[str, ...] = ("cpu",)
  target_config: tuple[str, ...] = ()
  autotune_results: tuple[str, ...] = ()
  explain_passes: bool = False
  output_dir: str | None = None
  format: str = "table"
  jobs: int = 1
  cache_dir: str | None = None
  cache: bool = True
  case_timeout: float = 600.0
  inputs: str | None = None
  batch_arg: str | None = None
  all_rows: bool = False
  max_worker_mb: int | None = None
  given: frozenset[str] = frozenset()


def sweep_spec(
  words: SweepWords,
  experiments=(),
  experiments_file=None,
  explain_passes: bool = False,
  shard: str | None = None,
):
  """The sweep `words` (and the experiments, for the commands that take
  them) ask for, planned once (`engine.SweepPlan`: every case, target and
  precision looked up here, and nowhere after).

  Args:
    words: the common flags.
    experiments, experiments_file: --experiment and --experiments_file.
    explain_passes: name the passes even without --explain_passes
      (explain and --format=html need them).
    shard: --shard (sweep's), the part of the plan to run, or None.

  Raises:
    InvalidArgumentError: an unknown name or a bad batch size or --shard; --inputs
      without a module case; --batch_sizes with module cases only (a
      module runs at its own size; mixed with other cases, those take the
      sizes).
  """
  from hloprobe import api

  check_module_words(words)
  return api.plan(
    words.case,
    batch_arg=words.batch_arg,
    batch_sizes=default_sizes_fitted(words),
    precisions=words.precisions,
    targets=words.targets,
    target_configs=words.target_config,
    autotune_results=words.autotune_results,
    experiments=experiments,
    experiments_file=experiments_file,
    explain_passes=explain_passes or words.explain_passes,
    cache=words.cache,
    cache_dir=words.cache_dir,
    jobs=words.jobs,
    case_timeout_s=words.case_timeout,
    inputs=words.inputs,
    all_rows=words.all_rows,
    max_worker_mb=words.max_worker_mb,
    shard=shard,
  )


def with_executor(spec, args):
  """Plan `spec` (`engine.SweepPlan`) with --executor and --ray_address
  (`args.executor`, `args.ray_address`), Ray's presence checked now,
  before any work.

  Raises:
    InvalidArgumentError: --ray_address without --executor=ray; Ray not
      installed (`runtime.RAY_MISSING`).
  """
  from hloprobe.runtime import RayPool

  executor, address = args.executor, args.ray_address
  if address and executor != "ray":
    raise InvalidArgumentError(
      f"--ray_address={address} needs --executor=ray (it names the Ray "
      "cluster the configs run on)"
    )
  if executor == "ray":
    RayPool.import_ray()
  return dataclasses.replace(spec, executor=executor, ray_address=address)


def reported_cases(spec) -> list:
  """The `Case` records of plan `spec` as reports show them: an optimized
  module file's case with what the file itself computed added to its
  notes (`numerics.module_made_notes`; computed here, once)."""
  from hloprobe.numerics import module_made_notes

  out = []
  for swept in spec.cases:
    extra = module_made_notes(swept.source, swept.case)
    case = swept.case
    out.append(dataclasses.replace(case, notes=case.notes + extra))
  return out


# The built-in batch cases with fewer rows (their inputs' batch size)
# than the default batch sizes' largest, 9, known here so that no case's
# inputs are made before jax starts (`start_jax`); checked against each
# case's own inputs by tests/compile/builtin_cases_test.py.
_FEW_ROWS = {"jax_22557": 4, "jax_24909": 8}


def default_sizes_fitted(words: SweepWords) -> str:
  """--batch_sizes' words: as given (or recorded, explain --results);
  left out, the default's sizes up to the fewest rows of the built-in
  batch cases named (`_FEW_ROWS`: jax_22557 has 4 and jax_24909 8,
  against the default's 9), said in one line on stderr. A user's case
  keeps the default (its inputs are made in its worker): a size beyond
  its rows stops the sweep, naming them (`engine.check_case_sizes`)."""
  from hloprobe.api import DEFAULTS
  from hloprobe.engine import parse_batch_sizes

  default = DEFAULTS.batch_sizes
  if "batch_sizes" in words.given or words.batch_sizes != default:
    return words.batch_sizes
  rows = {name: _FEW_ROWS[name] for name in words.case if name in _FEW_ROWS}
  if not rows:
    return words.batch_sizes
  fewest = min(rows, key=rows.get)
  kept = [n for n in parse_batch_sizes(default) if n <= rows[fewest]]
  fitted = ",".join(map(str, kept))
  print(
    f"hloprobe: batch sizes {fitted} (the default {default} up to the "
    f"{rows[fewest]} rows of case {fewest!r}; --batch_sizes chooses)",
    file=sys.stderr,
  )
  return fitted


def check_module_words(words: SweepWords) -> None:
  """--inputs and --batch_sizes against the module-file cases (see
  `sweep_spec`).

  Raises:
    InvalidArgumentError: as `sweep_spec` says.
  """
  from hloprobe.compile import is_module_case

  modules = [w for w in words.case if is_module_case(w)]
  if words.batch_arg is not None and not modules:
    raise InvalidArgumentError(
      f"--batch_arg={words.batch_arg} chooses a module file's batch "
      "parameter, and no --case is a module file"
    )
  if words.inputs is not None and not modules:
    raise InvalidArgumentError(
      f"--inputs={words.inputs} gives a module file's arguments, and no "
      "--case is a module file; e.g. --case=dump/module_0000.jit_f."
      "before_optimizations.txt --inputs=args.npz"
    )
  if (
    modules
    and len(modules) == len(words.case)
    and ("batch_sizes" in words.given)
  ):
    raise InvalidArgumentError(
      f"--batch_sizes does not apply to module file {modules[0]!r}: a "
      "module has one shape and runs at its own batch size; drop "
      "--batch_sizes (or give the program as path/to/file.py:factory)"
    )


def cache_dir(words: SweepWords) -> str | None:
  """The record cache's folder; None with --nocache."""
  if not words.cache:
    return None
  return words.cache_dir or RecordCache.default_dir()


def venv_dir(words: SweepWords) -> str | None:
  """Where `versions`/`bisect` keep venvs: venvs/ under --cache_dir."""
  return os.path.join(words.cache_dir, "venvs") if words.cache_dir else None


def bound_cache(words: SweepWords, max_mb: int) -> None:
  """Evicts least recently used records down to `max_mb` MiB; a folder
  that cannot be read costs disk space, not the command's results."""
  folder = cache_dir(words)
  # A folder that cannot hold records: the sweep warned and ran uncached.
  if not folder or RecordCache(folder, lambda line: None).usable() is None:
    return
  try:
    RecordCache(folder).evict(max_mb * 2**20)
  except OSError as e:
    logging.warning("hloprobe: cannot bound the cache %s: %s", folder, e)


def start_jax(swept) -> None:
  """Starts JAX here on the CPU only, without noise.

  Every config compiles and runs in a worker process (see
  `engine.run_sweep`); this process computes float64 references and
  emulations, on the CPU, so it never starts nor allocates on a GPU.
  Unless an attached GPU (`gpu`) is among `swept`'s Target records,
  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 is set (compile-only GPU targets need
  the CUDA plugin but no CUDA backend), which the workers inherit.

  Raises:
    InvalidArgumentError: an attached GPU target on a machine with no
      NVIDIA GPU (one usage line naming a compile-only target), before
      any config fails on it.
  """
  from hloprobe.compile import start_backends
  from hloprobe.runtime import WorkerPool

  WorkerPool.check_environment_xla_flags(os.environ.get("XLA_FLAGS", ""))
  attached = [t for t in swept if t.platform == "cuda" and not t.compile_only]
  if attached and _attached_gpu_count() == 0:
    raise InvalidArgumentError(
      f"--targets={attached[0].name} compiles and runs on an attached "
      "NVIDIA GPU, and this machine has none; compile for a GPU without "
      "one with a compile-only target, e.g. --targets=a100 (`hloprobe "
      "targets` lists them)"
    )
  # absl's app.run shows INFO records; JAX's backend probing logs some
  # ("Unable to initialize backend 'tpu'"), and matplotlib's first import
  # on a machine one ("generated new fontManager", --plot, `make run`).
  logging.getLogger("jax").setLevel(logging.WARNING)
  logging.getLogger("matplotlib").setLevel(logging.WARNING)
  if not any(t.platform == "cuda" and not t.compile_only for t in swept):
    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
  start_backends("cpu")
  warning = jaxlib_release().warning
  if warning:  # once per command: the checked jaxlib is another
    print(warning, file=sys.stderr)
  # Compile-only targets are loaded by the sweep, in a worker process (XLA
  # may die on a config); one XLA rejects is a TargetError, a usage error.


def host():
  """The CPU this process computes on, under the environment's XLA_FLAGS."""
  from hloprobe.runtime import HostCpu

  return HostCpu.of(os.environ.get("XLA_FLAGS"))


def _attached_gpu_count() -> int:
  """How many NVIDIA GPUs the CUDA driver sees (0 without a driver), asked
  of the driver library itself (`cuInit`, `cuDeviceGetCount` of
  libcuda.so.1), so this process starts no CUDA backend and allocates no
  GPU memory (the workers compile and run)."""
  try:
    lib = ctypes.CDLL("libcuda.so.1")
  except OSError:
    return 0
  count = ctypes.c_int(0)
  if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
    return 0
  return count.value


def progress_printer(stream):
  """A `engine.run_sweep` progress callable drawing a bar with an ETA on
  `stream`, or None when `stream` is not a terminal (logs and pipes get no
  progress, as before).

  The bar is tqdm's (`_Bar`), one line, erased when the sweep ends, e.g.
  "[12/81] a100 seed_mlp n=3 bfloat16 |###   | 00:42<01:10": configs
  collected, the next one, elapsed and remaining time (tqdm's estimate from
  the configs so far; "?" until the first one is in).
  """
  if not stream.isatty():
    return None
  bar = None

  def show(p) -> None:
    nonlocal bar
    if bar is None:  # drawn at once
      bar = _Bar(
        desc=p.current,
        total=p.total,
        file=stream,
        leave=False,
        mininterval=0,
        ncols=_columns(stream),
        bar_format=_BAR_FORMAT,
      )
      return
    if not p.current:  # done: erase the line
      bar.close()
      return
    bar.set_description_str(p.current, refresh=False)
    if p.done > bar.n:
      bar.update(p.done - bar.n)
    else:
      bar.refresh()

  return show


class _Bar(tqdm):
  """tqdm without its monitor thread (a daemon that wakes every 10 s to
  refresh stalled bars; this one is refreshed by each config)."""

  monitor_interval = 0
  # Its write lock: a thread lock only. tqdm's default also makes a
  # multiprocessing lock (a POSIX semaphore, and a resource-tracker process
  # where workers start by forkserver); one bar in one process needs none.
  _lock = threading.RLock()


def _columns(stream) -> int:
  """The terminal's width, or 80 where it says none (a pty whose size
  was never set reports 0)."""
  try:
    return os.get_terminal_size(stream.fileno()).columns or 80
  except (OSError, ValueError, AttributeError):
    return 80


# "[12/81] a100 seed_mlp n=3 bfloat16 |###   | 00:42<01:10".
_BAR_FORMAT = "[{n_fmt}/{total_fmt}] {desc} |{bar}| {elapsed}<{remaining}"


def check_format(
  words: SweepWords,
  columns=None,
  plot: str | None = None,
  model_explorer: str | None = None,
) -> str:
  """--format, once --columns and the extras --plot and --model_explorer
  need are checked (before any sweep).

  Raises:
    InvalidArgumentError: an unknown column, or a missing extra.
  """
  from hloprobe.pictures import Outputs

  Outputs(
    words.format, columns=columns, plot=plot, model_explorer=model_explorer
  ).check()
  return words.format


# The sweep flags golden and view take (`sweep_values`'s keys): key -> flag.
_SWEEP_FLAGS = {
  "cases": "case",
  "batch_sizes": "batch_sizes",
  "precisions": "precisions",
  "targets": "targets",
}


def sweep_values(words: SweepWords) -> tuple[dict, list[str]]:
  """({"cases", "batch_sizes", "precisions", "targets"} -> the flags'
  values, defaults included, batch sizes as ints; the keys whose flags
  were given).

  Raises:
    InvalidArgumentError: a bad --batch_sizes.
  """
  from hloprobe import engine

  values = {key: getattr(words, flag) for key, flag in _SWEEP_FLAGS.items()}
  values["batch_sizes"] = engine.parse_batch_sizes(words.batch_sizes)
  given = [key for key, flag in _SWEEP_FLAGS.items() if flag in words.given]
  return values, given
