"""hloprobe's command line: `hloprobe <command> [--flags]`.

Commands:
  sweep           lower, compile, map dot sites, run or predict every
                  config (the default command)
  explain         sweep with --explain_passes and say in words why row 0
                  depends on batch size and precision, per target, and
                  what compile-only targets cannot settle (--format=json:
                  the same records for machines)
  verify          --fix=PRECISION_OR_EXPERIMENT --require=consistent,
                  accurate[,golden]: run baseline and fix, PASS or FAIL
  golden check    re-run the sweep recorded in the golden folder's
                  MANIFEST.json (flags override its parts) and compare
                  with the goldens; exit 0 when all match, 1 otherwise
  golden update   re-run it and write the goldens atomically (a sweep
                  within the manifest's replaces only its own files)
  targets         list the targets
  cases           list the built-in cases and the reports they come from
  experiments     list the built-in XLA_FLAGS experiments
  versions        --jaxlib=V1,V2,...: the sweep under each jaxlib release
                  (cached venvs), one table comparing them
  bisect          --good=V --bad=V --require=consistent: the first release
                  where the requirement's verdict changes
  cache [clear]   the cache folder, its records and venvs; `clear`
                  removes the records
  view DIR        start Google's Model Explorer (127.0.0.1 only) on a
                  --model_explorer folder: each config's StableHLO graph
                  with its dot sites coloured by error (at most 10 configs;
                  --case, --targets, --batch_sizes, --precisions pick them)

Exit status: 0 when everything succeeded (verify: passed; golden check:
matched), 1 when a config failed, a fix failed, goldens differ or a file
could not be written (`cannot write ...`, after any results), 2 for bad
input (unknown case, target, precision, format, flag, command; an empty
--case, --targets or --precisions; bad batch size; unparseable target
config), with one line `hloprobe: error: ...`; 130 / 143 when interrupted
by SIGINT / SIGTERM (see the README's list of rules).
"""

from __future__ import annotations

import _thread
import contextlib
import dataclasses
import logging
import os
import signal
import sys

from absl import app, flags

from hloprobe.compile import toolchain

# Importing jax loads the CUDA plugin, whose libraries each log "Could not
# find cuda drivers" on a machine without one; the command line drops those
# lines (toolchain.quiet_startup). The library leaves stderr alone.
with toolchain.quiet_startup():
  import jax  # noqa: F401

from hloprobe import cli_flags, verify
from hloprobe.compile import compat
from hloprobe.errors import HloprobeError, InvalidArgumentError
from hloprobe.report import render
from hloprobe.runtime import cache

__all__ = ["main", "run"]


EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _sweep_spec(explain_passes: bool = False):
  """The sweep the flags name, planned once (`sweep.SweepPlan`: every case,
  target and precision looked up here, and nowhere after).

  Args:
    explain_passes: name the passes even without --explain_passes (explain
      and --format=html need them).
  """
  from hloprobe.sweep import plan

  return plan.spec_from_words(
    cases=cli_flags.CASE.value,
    batch_sizes=cli_flags.BATCH_SIZES.value,
    precisions=cli_flags.PRECISIONS.value,
    targets=cli_flags.TARGETS.value,
    target_configs=cli_flags.TARGET_CONFIG.value,
    explain_passes=explain_passes or cli_flags.EXPLAIN_PASSES.value,
    experiment_words=cli_flags.EXPERIMENT.value,
    experiments_file=cli_flags.EXPERIMENTS_FILE.value,
    cache_dir=_cache_dir(),
    jobs=cli_flags.JOBS.value,
  )


def _cache_dir() -> str | None:
  if cli_flags.NOCACHE.value:
    return None
  return cli_flags.CACHE_DIR.value or cache.default_cache_dir()


def _venv_dir() -> str | None:
  """Where `versions`/`bisect` keep venvs: venvs/ under --cache_dir."""
  return (
    os.path.join(cli_flags.CACHE_DIR.value, "venvs")
    if cli_flags.CACHE_DIR.value
    else None
  )


def _bound_cache() -> None:
  """Evicts least recently used records down to --cache_max_mb; a folder
  that cannot be read costs disk space, not the command's results."""
  folder = _cache_dir()
  if not folder:
    return
  try:
    cache.RecordCache(folder).evict(cli_flags.CACHE_MAX_MB.value * 2**20)
  except OSError as e:
    logging.warning("hloprobe: cannot bound the cache %s: %s", folder, e)


def _check_format() -> str:
  from hloprobe.pictures import outputs

  if cli_flags.COLUMNS.value is not None:
    render.check_columns(cli_flags.COLUMNS.value)
  outputs.check_extras(
    bool(cli_flags.PLOT.value), bool(cli_flags.MODEL_EXPLORER.value)
  )
  return cli_flags.FORMAT.value


def _start_jax(swept) -> None:
  """Starts JAX here on the CPU only, without noise.

  Every config compiles and runs in a worker process (see
  `sweep.run_sweep`); this process computes float64 references and
  emulations, on the CPU, so it never starts nor allocates on a GPU.
  Unless an attached GPU (`gpu`) is among `swept`'s Target records,
  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 is set (compile-only GPU targets need
  the CUDA plugin but no CUDA backend), which the workers inherit.
  """
  from hloprobe.compile import lowering
  from hloprobe.runtime import pool

  pool.check_environment_xla_flags(os.environ.get("XLA_FLAGS", ""))
  # absl's app.run shows INFO records; JAX's backend probing logs some
  # ("Unable to initialize backend 'tpu'").
  logging.getLogger("jax").setLevel(logging.WARNING)
  if not any(t.platform == "cuda" and not t.compile_only for t in swept):
    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
  lowering.start_backends("cpu")
  warning = compat.version_warning()
  if warning:  # once per command: the checked jaxlib is another
    print(warning, file=sys.stderr)
  # Compile-only targets are loaded by the sweep, in a worker process (XLA
  # may die on a config); one XLA rejects is a TargetError, a usage error.


def _host():
  """The CPU this process computes on, under the environment's XLA_FLAGS."""
  from hloprobe.runtime import host

  return host.host_cpu(os.environ.get("XLA_FLAGS"))


class _Interrupted(KeyboardInterrupt):
  """SIGINT or SIGTERM, raised where the program is so `finally` blocks run.

  Attributes:
    signum: the signal.
    done: the configs finished before it, when a sweep was running.
    total: the sweep's number of configs.
  """

  def __init__(self, signum: int, done=None, total: int = 0):
    super().__init__(signum)
    self.signum, self.done, self.total = signum, done, total


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _on_signal(signum, frame) -> None:
  """Turns the first SIGINT/SIGTERM into `_Interrupted`; ignores the rest
  (clean-up, e.g. ending worker processes, is not interrupted again)."""
  del frame
  for s in _SIGNALS:
    signal.signal(s, signal.SIG_IGN)
  raise _Interrupted(signum)


def _on_unraisable(unraisable) -> None:
  """sys.unraisablehook: an `_Interrupted` that Python dropped is sent again.

  A handler runs between any two bytecodes of the main thread, also inside
  a callback whose exceptions Python prints as "Exception ignored" and
  drops (a gc callback such as jax's `_xla_gc_callback`, a `__del__`). The
  handlers are set again and the signal is sent from a new thread (a
  low-level one: `threading.Thread.start` waits, and the handler would run
  in that wait), so the main thread raises it once out of the callback;
  other exceptions go to Python's own hook.
  """
  e = unraisable.exc_value
  if not isinstance(e, _Interrupted):
    sys.__unraisablehook__(unraisable)
    return
  while True:
    try:
      for s in _SIGNALS:
        signal.signal(s, _on_signal)
      _thread.start_new_thread(os.kill, (os.getpid(), e.signum))
      return
    except _Interrupted:  # it came back here: send it again
      continue


def _run_streamed(spec, output_dir: str | None):
  """run_sweep, each finished config appended to output_dir/results.jsonl.

  Raises:
    _Interrupted: on SIGINT/SIGTERM, carrying the configs finished.
  """
  from hloprobe import sweep
  from hloprobe.pictures import outputs
  from hloprobe.report import stream

  progress = stream.Progress(spec.config_count, stream.start_stream(output_dir))
  try:
    results = sweep.run_sweep(
      spec, outputs.progress_printer(sys.stderr), on_result=progress.add
    )
  except KeyboardInterrupt as e:
    signum = getattr(e, "signum", signal.SIGINT)
    raise _Interrupted(signum, progress.done, progress.total) from None
  return results


def _cmd_sweep() -> int:
  # The HTML page explains: it names the passes.
  spec = _sweep_spec(explain_passes=cli_flags.FORMAT.value == "html")
  out = _outputs(_check_format())
  _start_jax(spec.targets)
  results = _run_streamed(spec, out.output_dir)
  try:
    _report_sweep(results, spec, out)
  except KeyboardInterrupt as e:  # every config finished and is streamed
    signum = getattr(e, "signum", signal.SIGINT)
    raise _Interrupted(signum, results, len(results)) from None
  return EXIT_OK if all(r.ok for r in results) else EXIT_FAILED


def _report_sweep(results, spec, out) -> None:
  """Prints a finished sweep and writes `out`'s files (`outputs.Outputs`,
  read from the flags before the sweep)."""
  from hloprobe.compile import lowering
  from hloprobe.pictures import outputs

  why = _explanations(results, spec) if out.needs_explanations else []
  outputs.show_sweep(results, why, lowering.versions(), _host(), out)


def _explanations(results, spec):
  """`explain.explain` of a finished sweep of plan `spec`."""
  from hloprobe.report import explain

  return explain.explain(results, [c.case for c in spec.cases])


def _outputs(fmt: str):
  """The output flags as `outputs.Outputs`."""
  from hloprobe.pictures import outputs

  return outputs.Outputs(
    fmt=fmt,
    columns=cli_flags.COLUMNS.value,
    wide=cli_flags.WIDE.value,
    sites=cli_flags.SITES.value,
    timings=cli_flags.TIMINGS.value,
    output_dir=cli_flags.OUTPUT_DIR.value,
    plot=cli_flags.PLOT.value,
    model_explorer=cli_flags.MODEL_EXPLORER.value,
  )


def _cmd_explain() -> int:
  from hloprobe.compile import lowering
  from hloprobe.pictures import outputs

  fmt = _check_format()
  if fmt == "markdown":
    raise InvalidArgumentError(
      "explain prints text (--format=table), HTML (--format=html) or JSON "
      "(--format=json); got --format=markdown"
    )
  spec = _sweep_spec(explain_passes=True)
  out = _outputs(fmt)
  _start_jax(spec.targets)
  results = _run_streamed(spec, out.output_dir)
  versions = lowering.versions()
  explanations = _explanations(results, spec)
  cpu = _host()
  outputs.show_explanation(results, explanations, versions, cpu, out)
  return EXIT_OK if all(r.ok for r in results) else EXIT_FAILED


def _cmd_view(words: list[str]) -> int:
  """`hloprobe view DIR`: Model Explorer on a --model_explorer folder."""
  from hloprobe.pictures import model_explorer, outputs

  if len(words) != 1:
    raise InvalidArgumentError(
      f"`view` takes one folder, got {words}; e.g. `hloprobe view out/me`"
    )
  outputs.check_extras(plot=False, explorer=True)
  values, given = _sweep_flags()
  index_key = {
    "cases": "case",
    "targets": "target",
    "batch_sizes": "n",
    "precisions": "precision",
  }
  wanted = {index_key[key]: values[key] for key in given}
  model_explorer.view(
    words[0], wanted, cli_flags.PORT.value, cli_flags.BROWSER.value
  )
  return EXIT_OK


def _sweep_flags() -> tuple[dict, list[str]]:
  """({"cases", "batch_sizes", "precisions", "targets"} -> the flags'
  values, defaults included; the keys whose flags were given)."""
  from hloprobe import sweep

  holders = {
    "cases": cli_flags.CASE,
    "batch_sizes": cli_flags.BATCH_SIZES,
    "precisions": cli_flags.PRECISIONS,
    "targets": cli_flags.TARGETS,
  }
  values = {key: holder.value for key, holder in holders.items()}
  values["batch_sizes"] = sweep.parse_batch_sizes(cli_flags.BATCH_SIZES.value)
  return values, [key for key, holder in holders.items() if holder.present]


def _cmd_targets() -> int:
  from hloprobe.report import listings

  print(listings.targets_listing(cli_flags.TARGET_CONFIG.value))
  return EXIT_OK


def _cmd_cases() -> int:
  from hloprobe.report import listings

  print(listings.cases_listing())
  return EXIT_OK


def _cmd_experiments() -> int:
  from hloprobe.report import listings

  print(listings.experiments_listing())
  return EXIT_OK


def _cmd_golden(words: list[str]) -> int:
  from hloprobe.golden import commands, snapshot

  if words not in (["check"], ["update"]):
    raise InvalidArgumentError(
      f"`golden` takes one word, check or update; got {words}; e.g. `hloprobe golden check`"
    )
  if cli_flags.TARGET_CONFIG.value:
    raise InvalidArgumentError(
      "`golden` does not read --target_config; name config files in "
      "--targets (e.g. --targets=cpu,golden/configs/x.txtpb), as "
      "MANIFEST.json records them"
    )
  golden_dir = cli_flags.GOLDEN_DIR.value or snapshot.default_golden_dir()
  from hloprobe.sweep import spec as sweep_spec

  values, given = _sweep_flags()
  spec = sweep_spec.check_nonempty(
    commands.golden_spec(golden_dir, values, given)
  )
  spec = dataclasses.replace(spec, jobs=cli_flags.JOBS.value)
  _start_jax(spec.targets)
  if words == ["update"]:
    return commands.cmd_update(spec, golden_dir)
  return commands.cmd_check(
    spec, golden_dir, cli_flags.STRICT.value, cli_flags.OUTPUT_DIR.value
  )


def _cmd_verify() -> int:
  if not cli_flags.FIX.value:
    raise InvalidArgumentError(
      "verify needs --fix, e.g. --fix=float32 or --fix=no_triton_gemm"
    )
  fix = verify.parse_fix(cli_flags.FIX.value)
  requirements = verify.parse_requirements(_require())
  fmt = _check_format()
  spec = _sweep_spec()
  verify.check_batch_sizes(requirements, spec.batch_sizes)
  _start_jax(spec.targets)
  outcome = verify.verify_fix(
    spec,
    fix,
    requirements,
    golden_dir=cli_flags.GOLDEN_DIR.value or None,
    abs_error_bound=cli_flags.ABS_ERROR_BOUND.value,
    rel_error_bound=cli_flags.REL_ERROR_BOUND.value,
  )
  print(render.render_verification(outcome, fmt))
  return EXIT_OK if outcome.passed else EXIT_FAILED


def _require() -> str:
  """--require as `verify.parse_requirements` reads it (which rejects an
  empty item and drops a repeated one)."""
  return ",".join(cli_flags.REQUIRE.value)


def _cmd_versions() -> int:
  from hloprobe.versions import commands

  return commands.cmd_versions(
    _sweep_spec(),
    cli_flags.JAXLIB.value,
    _venv_dir(),
    _check_format(),
    cli_flags.CHANGES_ONLY.value,
    cli_flags.PYTHON.value,
  )


def _cmd_cache(words: list[str]) -> int:
  from hloprobe.versions import commands

  folder = cli_flags.CACHE_DIR.value or cache.default_cache_dir()
  return commands.cmd_cache(words, folder, cli_flags.CACHE_MAX_MB.value)


def _cmd_bisect() -> int:
  from hloprobe.versions import commands

  return commands.cmd_bisect(
    _sweep_spec(),
    cli_flags.GOOD.value,
    cli_flags.BAD.value,
    _require(),
    _venv_dir(),
    cli_flags.PYTHON.value,
  )


_COMMANDS = {
  "sweep": _cmd_sweep,
  "versions": _cmd_versions,
  "bisect": _cmd_bisect,
  "view": _cmd_view,
  "explain": _cmd_explain,
  "targets": _cmd_targets,
  "cases": _cmd_cases,
  "experiments": _cmd_experiments,
  "golden": _cmd_golden,
  "verify": _cmd_verify,
  "cache": _cmd_cache,
}
# Commands that write the record cache; it is bounded after each.
_CACHING = ("sweep", "explain", "verify")
# Flags only some commands read; given to another, a flag would be
# silently ignored (`sweep --fix=float32`), so it is a usage error.
_COMMAND_FLAGS = {
  "fix": ("verify",),
  "require": ("verify", "bisect"),
  "abs_error_bound": ("verify",),
  "rel_error_bound": ("verify",),
  "golden_dir": ("golden", "verify"),
  "strict": ("golden",),
  "port": ("view",),
  "browser": ("view",),
  "jaxlib": ("versions",),
  "changes_only": ("versions",),
  "python": ("versions", "bisect"),
  "good": ("bisect",),
  "bad": ("bisect",),
  "timings": ("sweep",),
  "sites": ("sweep",),
  "wide": ("sweep",),
  "columns": ("sweep",),
  "plot": ("sweep", "explain"),
  "model_explorer": ("sweep", "explain"),
  "cache_max_mb": (*_CACHING, "cache"),
  # verify's only experiment is its --fix; goldens record no experiments.
  "experiment": ("sweep", "explain"),
  "experiments_file": ("sweep", "explain"),
}


def _check_flags_for(command: str) -> None:
  """Every command-specific flag given is one `command` reads.

  Raises:
    InvalidArgumentError: names the flag and the commands that read it.
  """
  for name, commands in _COMMAND_FLAGS.items():
    if flags.FLAGS[name].present and command not in commands:
      raise InvalidArgumentError(
        f"--{name} is for `hloprobe {' / '.join(commands)}`, not "
        f"`hloprobe {command}`; drop it"
      )


# Commands that take positional words: `hloprobe golden check`.
_TAKES_WORDS = ("golden", "view", "cache")


def main(argv: list[str]) -> int:
  """Runs one command; returns the exit status."""
  command, *rest = argv[1:] or ["sweep"]
  try:
    if command not in _COMMANDS:
      raise InvalidArgumentError(
        f"unknown command {command!r}; choose from {', '.join(_COMMANDS)}"
      )
    _check_flags_for(command)
    if command in _TAKES_WORDS:
      return _COMMANDS[command](rest)
    if rest:
      raise InvalidArgumentError(
        f"unexpected arguments {rest}; flags are written --name=value"
      )
    status = _COMMANDS[command]()
    if command in _CACHING:
      _bound_cache()
    return status
  except KeyboardInterrupt as e:
    return _interrupted(e)
  except InvalidArgumentError as e:
    _error(e)
    return EXIT_USAGE
  except (HloprobeError, OSError) as e:
    _error(e)
    return EXIT_FAILED
  finally:
    _ignore_late_signals()


def _ignore_late_signals() -> None:
  """Once the command is done (results written), an interrupt changes
  nothing: the exit status stays the command's (only where `run` set
  the handlers, not in a caller's process)."""
  for s in _SIGNALS:
    if signal.getsignal(s) is _on_signal:
      signal.signal(s, signal.SIG_IGN)


def _interrupted(e: KeyboardInterrupt) -> int:
  """Says what an interrupt kept, in one line; returns 128 + the signal."""
  signum = getattr(e, "signum", signal.SIGINT)
  done = getattr(e, "done", None)
  line = "hloprobe: interrupted"
  if done is not None:
    line += f" after {len(done)} of {e.total} configs"
    if cli_flags.OUTPUT_DIR.value:
      where = os.path.join(cli_flags.OUTPUT_DIR.value, render.RESULTS_STREAM)
      line += f"; results so far in {where}"
    else:
      line += " (--output_dir=DIR keeps each finished config's results)"
  print(line, file=sys.stderr)
  return 128 + signum


def _error(e: Exception) -> None:
  """The one `hloprobe: error: ...` line (library messages say [hloprobe])."""
  print(
    f"hloprobe: error: {str(e).removeprefix('[hloprobe] ')}", file=sys.stderr
  )


def _parse_flags(argv: list[str]) -> list[str]:
  """absl flag parsing with one clear line and exit 2 on a bad flag."""
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    print(f"hloprobe: error: {e}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def run() -> None:
  """Runs the command line; entered through `hloprobe.__main__.main` (both
  `python -m hloprobe` and the console script), which blocks SIGINT and
  SIGTERM while this module imports jax."""
  # absl's --help prints the __main__ module's docstring as the usage and
  # the key flags of the main program (sys.argv[0]): make those this
  # module's, so --help lists them (closed vocabularies with their values).
  sys.modules["__main__"].__doc__ = __doc__
  for flag in flags.FLAGS.get_flags_for_module(cli_flags.__name__):
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
  # `hloprobe sweep | head`: end quietly when the reader goes away.
  signal.signal(signal.SIGPIPE, signal.SIG_DFL)
  # An interrupt ends the run through `finally` blocks: worker processes and
  # temporary folders go, finished results stay (see `_run_streamed`).
  for s in _SIGNALS:
    signal.signal(s, _on_signal)
  sys.unraisablehook = _on_unraisable
  try:
    # `hloprobe.__main__.main` (`python -m hloprobe` and the console
    # script) blocks them while importing jax.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    app.run(main, flags_parser=_parse_flags)
  except KeyboardInterrupt as e:  # before `main` (flag parsing)
    _exit_interrupted(_interrupted(e))
  except SystemExit as e:
    if isinstance(e.code, int) and e.code - 128 in _SIGNALS:
      _exit_interrupted(e.code)
    raise


def _exit_interrupted(status: int) -> None:
  """Ends an interrupted run without the interpreter's teardown.

  By now the `finally` blocks have run (workers killed, temporary folders
  removed, finished results streamed) and the one line is printed. Tearing
  the interpreter down with jax's runtime mid-work then sometimes crashed:
  exit 139 (SIGSEGV) after the line, in about 3 of 8 SIGINTs or SIGTERMs
  4.2 s into a cpu,a100 sweep (jaxlib 0.10.2, 2026-11-30; 130/143 at 0.3,
  1.5, 3 and 5 s). So the process ends here, with the status the line
  promised.
  """
  for stream in (sys.stdout, sys.stderr):
    with contextlib.suppress(OSError, ValueError):
      stream.flush()
  os._exit(status)
