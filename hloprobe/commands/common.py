"""What every command shares: the sweep words, exit codes, starting JAX,
the cache folder, a sweep streamed to --output_dir, and the interrupt
that carries the configs finished.

Each command module (`hloprobe.commands.<name>`) has a frozen args record
whose fields are named after the flags it reads (`cli` builds it from the
absl flags and derives from those fields which command accepts which
flag), a library function, then `main(args) -> int` that prints.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys

from hloprobe.compile import version_warning
from hloprobe.runtime import RecordCache, default_cache_dir

__all__ = [
  "EXIT_FAILED",
  "EXIT_OK",
  "EXIT_USAGE",
  "Interrupted",
  "SweepWords",
  "bound_cache",
  "cache_dir",
  "check_format",
  "host",
  "progress_printer",
  "run_streamed",
  "start_jax",
  "sweep_spec",
  "sweep_values",
  "venv_dir",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


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
    explain_passes: --explain_passes.
    output_dir: --output_dir, or None.
    format: --format: "table", "json", "markdown" or "html".
    jobs: --jobs, worker processes at once (>= 1).
    cache_dir: --cache_dir, or None (the default folder).
    nocache: --nocache.
    given: the names of the flags above given on the command line.
  """

  case: tuple[str, ...] = ("seed_mlp",)
  batch_sizes: str = "1-9"
  precisions: tuple[str, ...] = ()
  targets: tuple[str, ...] = ("cpu",)
  target_config: tuple[str, ...] = ()
  explain_passes: bool = False
  output_dir: str | None = None
  format: str = "table"
  jobs: int = 1
  cache_dir: str | None = None
  nocache: bool = False
  given: frozenset[str] = frozenset()


class Interrupted(KeyboardInterrupt):
  """SIGINT or SIGTERM, raised where the program is so `finally` blocks run.

  Attributes:
    signum: the signal.
    done: the configs finished before it, when a sweep was running.
    total: the sweep's number of configs.
  """

  def __init__(self, signum: int, done=None, total: int = 0):
    super().__init__(signum)
    self.signum, self.done, self.total = signum, done, total


def sweep_spec(
  words: SweepWords,
  experiments=(),
  experiments_file=None,
  explain_passes: bool = False,
):
  """The sweep `words` (and the experiments, for the commands that take
  them) ask for, planned once (`sweep.SweepPlan`: every case, target and
  precision looked up here, and nowhere after).

  Args:
    words: the common flags.
    experiments, experiments_file: --experiment and --experiments_file.
    explain_passes: name the passes even without --explain_passes
      (explain and --format=html need them).

  Raises:
    InvalidArgumentError: an unknown name or a bad batch size.
  """
  from hloprobe.sweep import spec_from_words

  return spec_from_words(
    cases=list(words.case),
    batch_sizes=words.batch_sizes,
    precisions=list(words.precisions),
    targets=list(words.targets),
    target_configs=list(words.target_config),
    explain_passes=explain_passes or words.explain_passes,
    experiment_words=list(experiments),
    experiments_file=experiments_file,
    cache_dir=cache_dir(words),
    jobs=words.jobs,
  )


def cache_dir(words: SweepWords) -> str | None:
  """The record cache's folder; None with --nocache."""
  if words.nocache:
    return None
  return words.cache_dir or default_cache_dir()


def venv_dir(words: SweepWords) -> str | None:
  """Where `versions`/`bisect` keep venvs: venvs/ under --cache_dir."""
  return os.path.join(words.cache_dir, "venvs") if words.cache_dir else None


def bound_cache(words: SweepWords, max_mb: int) -> None:
  """Evicts least recently used records down to `max_mb` MiB; a folder
  that cannot be read costs disk space, not the command's results."""
  folder = cache_dir(words)
  if not folder:
    return
  try:
    RecordCache(folder).evict(max_mb * 2**20)
  except OSError as e:
    logging.warning("hloprobe: cannot bound the cache %s: %s", folder, e)


def start_jax(swept) -> None:
  """Starts JAX here on the CPU only, without noise.

  Every config compiles and runs in a worker process (see
  `sweep.run_sweep`); this process computes float64 references and
  emulations, on the CPU, so it never starts nor allocates on a GPU.
  Unless an attached GPU (`gpu`) is among `swept`'s Target records,
  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 is set (compile-only GPU targets need
  the CUDA plugin but no CUDA backend), which the workers inherit.
  """
  from hloprobe.compile import start_backends
  from hloprobe.runtime import check_environment_xla_flags

  check_environment_xla_flags(os.environ.get("XLA_FLAGS", ""))
  # absl's app.run shows INFO records; JAX's backend probing logs some
  # ("Unable to initialize backend 'tpu'").
  logging.getLogger("jax").setLevel(logging.WARNING)
  if not any(t.platform == "cuda" and not t.compile_only for t in swept):
    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
  start_backends("cpu")
  warning = version_warning()
  if warning:  # once per command: the checked jaxlib is another
    print(warning, file=sys.stderr)
  # Compile-only targets are loaded by the sweep, in a worker process (XLA
  # may die on a config); one XLA rejects is a TargetError, a usage error.


def host():
  """The CPU this process computes on, under the environment's XLA_FLAGS."""
  from hloprobe.runtime import host_cpu

  return host_cpu(os.environ.get("XLA_FLAGS"))


def progress_printer(stream):
  """A `sweep.run_sweep` progress callable drawing one line on `stream`
  ("[12/81] a100 seed_mlp n=3 bfloat16  42 s"), or None when `stream` is
  not a terminal (logs and pipes get no progress)."""
  import time

  if not stream.isatty():
    return None
  start = time.monotonic()

  def show(p) -> None:
    if not p.current:
      stream.write("\r\x1b[K")  # done: erase the line
    else:
      took = time.monotonic() - start
      stream.write(f"\r\x1b[K[{p.done}/{p.total}] {p.current}  {took:.0f} s")
    stream.flush()

  return show


def run_streamed(spec, output_dir: str | None, pool=None):
  """run_sweep, each finished config appended to
  `<output_dir>/results.jsonl`; a progress line on a terminal's stderr.
  `pool`: the `runtime.WorkerPool` to run on (`sweep.worker_pool`), or
  None for the sweep's own.

  Raises:
    Interrupted: on SIGINT/SIGTERM, carrying the configs finished.
  """
  from hloprobe import sweep
  from hloprobe.report import Progress, start_stream

  progress = Progress(spec.config_count, start_stream(output_dir))
  try:
    results = sweep.run_sweep(
      spec, progress_printer(sys.stderr), on_result=progress.add, pool=pool
    )
  except KeyboardInterrupt as e:
    signum = getattr(e, "signum", signal.SIGINT)
    raise Interrupted(signum, progress.done, progress.total) from None
  return results


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
  from hloprobe.pictures import check_extras
  from hloprobe.report import check_columns

  if columns is not None:
    check_columns(columns)
  check_extras(bool(plot), bool(model_explorer))
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
  from hloprobe import sweep

  values = {key: getattr(words, flag) for key, flag in _SWEEP_FLAGS.items()}
  values["batch_sizes"] = sweep.parse_batch_sizes(words.batch_sizes)
  given = [key for key, flag in _SWEEP_FLAGS.items() if flag in words.given]
  return values, given
