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
import dataclasses
import logging
import math
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

from hloprobe import verify
from hloprobe.compile import cache, compat, experiments, targets
from hloprobe.errors import HloprobeError, InvalidArgumentError
from hloprobe.ir import precisions
from hloprobe.report import render

__all__ = ["main", "run"]


class _EnumListParser(flags.ListParser):
  """A comma-separated list (absl's ListParser) whose every item is one of
  `enum_values` (checked by absl's EnumParser, as DEFINE_enum checks).

  absl has no list-of-enum flag, and DEFINE_multi_enum takes one value per
  flag (`--precisions=a --precisions=b`), which would break
  `--precisions=a,b`. An empty item is left to the flag's validator, which
  says "no empty ones".
  """

  def __init__(self, enum_values):
    super().__init__()
    self._item = flags.EnumParser(list(enum_values))

  def parse(self, argument):
    items = super().parse(argument)
    for item in filter(None, items):
      try:
        self._item.parse(item)
      except ValueError as e:
        raise ValueError(f"{item!r}: {e}") from None
    return items


def _define_enum_list(name, default, enum_values, help_text):
  """A comma-separated list flag of closed vocabulary: --help shows the
  allowed values as DEFINE_enum does; a bad item is a flag error."""
  return flags.DEFINE(
    _EnumListParser(enum_values),
    name,
    default,
    f"<{'|'.join(enum_values)}>: {help_text}",
    serializer=flags.CsvListSerializer(","),
  )


# Cases and targets are open vocabularies (a case may be
# package.module:factory or file.py:factory, a target a config file path),
# so they stay plain lists, checked when looked up.
_CASE = flags.DEFINE_list(
  "case",
  ["seed_mlp"],
  "Cases to sweep, comma-separated: built-in names (see `hloprobe cases`), "
  "package.module:factory or path/to/file.py:factory (a function "
  "returning a hloprobe.Case).",
)
_BATCH_SIZES = flags.DEFINE_string(
  "batch_sizes",
  "1-9",
  "Batch sizes: integers and ranges, e.g. '1,2,4-9,64,4096'.",
)
_PRECISIONS = _define_enum_list(
  "precisions",
  list(precisions.DEFAULT_PRECISIONS),
  precisions.PRECISION_NAMES,
  "Matmul precisions, comma-separated: bfloat16, tensorfloat32, float32, "
  "default, high, highest, or DotAlgorithmPreset names such as "
  "TF32_TF32_F32.",
)
_TARGETS = flags.DEFINE_list(
  "targets", ["cpu"], "Targets, comma-separated; see `hloprobe targets`."
)
_TARGET_CONFIG = flags.DEFINE_multi_string(
  "target_config",
  [],
  "A GpuTargetConfigProto .txtpb file to compile for as one more "
  "compile-only target (repeatable), e.g. "
  "hloprobe/compile/gpu_specs/a100_sxm_40.txtpb.",
)
_OUTPUT_DIR = flags.DEFINE_string(
  "output_dir",
  None,
  "If set, write per-config stablehlo.mlir / optimized.hlo and results.json "
  "here; for `golden check`, where candidate files go on a mismatch "
  "(default: a new temporary folder).",
)
_SITES = flags.DEFINE_bool(
  "sites",
  False,
  "Also print one row per dot site (table and markdown formats).",
)
_EXPLAIN_PASSES = flags.DEFINE_bool(
  "explain_passes",
  False,
  "Name the XLA pass that rewrote each dot site (each compile also dumps "
  "the module after every pass, to a temporary folder).",
)
_EXPERIMENT = flags.DEFINE_multi_string(
  "experiment",
  [],
  "An XLA_FLAGS experiment NAME:FLAGS (e.g. 'cublas:--xla_gpu_enable_triton_gemm=false') "
  "or a built-in name (see `hloprobe experiments`); repeatable. Each runs in "
  "its own worker process beside the baseline, with the XLA_FLAGS of the "
  "environment followed by its own (its value wins for a flag set in both).",
)
_EXPERIMENTS_FILE = flags.DEFINE_string(
  "experiments_file", None, "A file of experiments, one NAME:FLAGS per line."
)
_FIX = flags.DEFINE_string(
  "fix",
  None,
  "For `verify`: the candidate fix, a matmul precision (e.g. float32, "
  "F32_F32_F32) or an experiment (a built-in name or NAME:--xla_flag=value).",
)
_REQUIRE = _define_enum_list(
  "require",
  ["consistent", "accurate"],
  verify.REQUIREMENTS,
  "For `verify` (and `bisect`): requirements, comma-separated.",
)
_ABS_ERROR_BOUND = flags.DEFINE_float(
  "abs_error_bound",
  None,
  "For `verify --require=accurate`: max |err| allowed (as run_hlo_module).",
)
_REL_ERROR_BOUND = flags.DEFINE_float(
  "rel_error_bound",
  None,
  "For `verify --require=accurate`: max relative error allowed (as run_hlo_module).",
)
_FORMATS = (*render.REPORT_FORMATS, "html")
_FORMAT = flags.DEFINE_enum(
  "format",
  "table",
  _FORMATS,
  f"Output format: one of {', '.join(_FORMATS)}. html: one self-contained "
  "page (plot, explanation, tables) on stdout; it names passes, as "
  "--explain_passes.",
)
_WIDE = flags.DEFINE_bool(
  "wide",
  False,
  "--format=table: every column, unwrapped (the default table shows the "
  f"{render.TERMINAL_WIDTH}-column first screen).",
)
_COLUMNS = _define_enum_list(
  "columns",
  None,
  [key for key, _ in render.TABLE_COLUMNS],
  "--format=table or markdown: these columns, in this order, comma-separated.",
)
_PLOT = flags.DEFINE_string(
  "plot",
  None,
  "Write |row 0 - float64| against batch size as a PNG here (a panel per "
  "target; experiments side by side). Needs matplotlib (make installs it).",
)
_MODEL_EXPLORER = flags.DEFINE_string(
  "model_explorer",
  None,
  "Write each config's StableHLO and Model Explorer node data (dot sites "
  "by error, fate, algorithm, pass) here; open with `hloprobe view DIR`.",
)
_PORT = flags.DEFINE_integer(
  "port", 8080, "`hloprobe view`: the port (8080: the first free from 8080)."
)
_BROWSER = flags.DEFINE_bool(
  "browser", True, "`hloprobe view`: open the page in a browser tab."
)

_GOLDEN_DIR = flags.DEFINE_string(
  "golden_dir",
  None,
  "`hloprobe golden`: the golden folder. Default: golden/ at the repository "
  "root when run from a source checkout (the folder above the hloprobe "
  "package holds pyproject.toml), else ./golden.",
)
_STRICT = flags.DEFINE_bool(
  "strict",
  False,
  "`hloprobe golden check`: compare full StableHLO/HLO text even when "
  "jax/jaxlib differ from MANIFEST.json's (otherwise only dot summaries).",
)
_TIMINGS = flags.DEFINE_bool(
  "timings",
  False,
  "`sweep`: after the results, print the seconds each config spent per "
  "stage (lower, compile, parse, sites, emulation, noise floor, ...) and "
  "the sums (to stderr with --format=json).",
)
_CACHE_DIR = flags.DEFINE_string(
  "cache_dir",
  None,
  "`sweep`/`explain`: folder of hloprobe's cache of per-config records, "
  "keyed by everything a record depends on (jax/jaxlib, hloprobe's "
  "source, case, inputs, target config, XLA_FLAGS, host CPU, ...), under "
  "records/; `versions`/`bisect` keep their per-jaxlib venvs under venvs/. "
  "Default: $XDG_CACHE_HOME/hloprobe or ~/.cache/hloprobe.",
)
_JOBS = flags.DEFINE_integer(
  "jobs",
  os.cpu_count() or 1,
  "How many worker processes compile and run configs at once (default: "
  "the number of cores); each flag set (the baseline, each experiment) "
  "gets max(1, jobs / flag sets); `versions` sweeps this many jaxlib "
  "versions at once. The output order does not change.",
  lower_bound=1,
)
_NOCACHE = flags.DEFINE_bool(
  "nocache", False, "Compute every config; neither read nor write the cache."
)
_CACHE_MAX_MB = flags.DEFINE_integer(
  "cache_max_mb",
  cache.DEFAULT_MAX_MB,
  "Bound of --cache_dir's records/, in MiB: after `sweep`, `explain` and "
  "`verify`, the least recently used records are removed until the rest "
  "fit (venvs/ is not bounded; see `hloprobe cache`).",
  lower_bound=0,
)

_JAXLIB = flags.DEFINE_list(
  "jaxlib",
  [],
  "`hloprobe versions`: jaxlib releases to sweep under, e.g. "
  "0.4.35,0.6.2,0.10.2 (each in its own cached venv).",
)
_GOOD = flags.DEFINE_string(
  "good", None, "`hloprobe bisect`: the release whose verdict is the old one."
)
_BAD = flags.DEFINE_string(
  "bad", None, "`hloprobe bisect`: the release whose verdict is the new one."
)
_CHANGES_ONLY = flags.DEFINE_bool(
  "changes_only",
  False,
  "`hloprobe versions`: show only configs where something changed.",
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _names_given(names: list[str]) -> bool:
  """A list flag names something: not `--case=` (empty) nor `--case=a,,b`."""
  return bool(names) and all(names)


def _error_bound_ok(value: float | None) -> bool:
  return value is None or (math.isfinite(value) and value >= 0)


def _register_validators() -> None:
  """An empty list would sweep nothing and pass vacuously: a usage error;
  an error bound is a finite number >= 0."""
  for holder in (_ABS_ERROR_BOUND, _REL_ERROR_BOUND):
    flags.register_validator(
      holder,
      _error_bound_ok,
      message=f"--{holder.name} must be a finite number >= 0, e.g. "
      f"--{holder.name}=1e-3",
    )
  for holder, example in ((_CASE, "seed_mlp"), (_PRECISIONS, "float32")):
    flags.register_validator(
      holder,
      _names_given,
      message=f"--{holder.name} needs at least one name and no empty ones, "
      f"e.g. --{holder.name}={example}",
    )
  flags.register_multi_flags_validator(
    [_TARGETS, _TARGET_CONFIG],
    lambda v: (
      _names_given(v["targets"] + v["target_config"]) and all(v["targets"])
    ),
    message="--targets needs at least one target (or a --target_config) "
    "and no empty ones, e.g. --targets=cpu,a100",
  )


_register_validators()


def _sweep_spec():
  from hloprobe import sweep

  return _nonempty(
    sweep.SweepSpec(
      cases=tuple(_CASE.value),
      batch_sizes=sweep.parse_batch_sizes(_BATCH_SIZES.value),
      precisions=tuple(_PRECISIONS.value),
      targets=tuple(_TARGETS.value) + _target_configs(),
      explain_passes=_EXPLAIN_PASSES.value,
      experiments=tuple(_experiments()),
      cache_dir=_cache_dir(),
      jobs=_JOBS.value,
    )
  )


def _cache_dir() -> str | None:
  if _NOCACHE.value:
    return None
  return _CACHE_DIR.value or cache.default_cache_dir()


def _venv_dir() -> str | None:
  """Where `versions`/`bisect` keep venvs: venvs/ under --cache_dir."""
  return os.path.join(_CACHE_DIR.value, "venvs") if _CACHE_DIR.value else None


def _bound_cache() -> None:
  """Evicts least recently used records down to --cache_max_mb; a folder
  that cannot be read costs disk space, not the command's results."""
  folder = _cache_dir()
  if not folder:
    return
  try:
    cache.RecordCache(folder).evict(_CACHE_MAX_MB.value * 2**20)
  except OSError as e:
    logging.warning("hloprobe: cannot bound the cache %s: %s", folder, e)


def _target_configs() -> tuple[str, ...]:
  """--target_config paths, as words `targets.get_target` reads as files.

  A bare file name (`--target_config=cpu`) becomes `./cpu`, so a file named
  like a built-in target is still read as a file.
  """
  return tuple(
    p if targets.is_config_path(p) else os.path.join(os.curdir, p)
    for p in _TARGET_CONFIG.value
  )


def _nonempty(spec):
  """`spec`, unless a list is empty: it would sweep nothing and pass."""
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


def _experiments() -> list:
  found = [experiments.parse_experiment(t) for t in _EXPERIMENT.value]
  if _EXPERIMENTS_FILE.value:
    found += experiments.parse_experiments_file(_EXPERIMENTS_FILE.value)
  return found


def _check_format() -> str:
  from hloprobe.pictures import outputs

  if _COLUMNS.value is not None:
    render.check_columns(_COLUMNS.value)
  outputs.check_extras(bool(_PLOT.value), bool(_MODEL_EXPLORER.value))
  return _FORMAT.value


def _start_jax(swept) -> None:
  """Starts JAX here on the CPU only, without noise.

  Every config compiles and runs in a worker process (see
  `sweep.run_sweep`); this process computes float64 references and
  emulations, on the CPU, so it never starts nor allocates on a GPU.
  Unless an attached GPU (`gpu`) is among `swept`'s Target records,
  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 is set (compile-only GPU targets need
  the CUDA plugin but no CUDA backend), which the workers inherit.
  """
  from hloprobe.compile import lowering, worker

  worker.check_environment_xla_flags()
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
  from hloprobe.compile import host

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


def _run_streamed(spec):
  """run_sweep, each finished config appended to --output_dir/results.jsonl.

  Raises:
    _Interrupted: on SIGINT/SIGTERM, carrying the configs finished.
  """
  from hloprobe import sweep
  from hloprobe.pictures import outputs
  from hloprobe.report import stream

  progress = stream.Progress(
    spec.config_count, stream.start_stream(_OUTPUT_DIR.value)
  )
  try:
    results = sweep.run_sweep(
      spec, outputs.progress_printer(sys.stderr), on_result=progress.add
    )
  except KeyboardInterrupt as e:
    signum = getattr(e, "signum", signal.SIGINT)
    raise _Interrupted(signum, progress.done, progress.total) from None
  return results


def _cmd_sweep() -> int:
  spec = _sweep_spec()
  fmt = _check_format()
  if fmt == "html":  # the page explains: name the passes
    spec = dataclasses.replace(spec, explain_passes=True)
  _start_jax(spec.targets)
  results = _run_streamed(spec)
  try:
    _report_sweep(results, spec, fmt)
  except KeyboardInterrupt as e:  # every config finished and is streamed
    signum = getattr(e, "signum", signal.SIGINT)
    raise _Interrupted(signum, results, len(results)) from None
  return EXIT_OK if all(r.ok for r in results) else EXIT_FAILED


def _report_sweep(results, spec, fmt: str) -> None:
  """Prints a finished sweep and writes --output_dir's and the pictures'
  files."""
  from hloprobe.compile import lowering
  from hloprobe.pictures import outputs

  out = _outputs(fmt)
  why = _explanations(results) if out.needs_explanations else []
  outputs.show_sweep(results, why, lowering.versions(), _host(), out)


def _explanations(results):
  from hloprobe.report import explain

  return explain.explain(results)


def _outputs(fmt: str):
  """The output flags as `outputs.Outputs`."""
  from hloprobe.pictures import outputs

  return outputs.Outputs(
    fmt=fmt,
    columns=_COLUMNS.value,
    wide=_WIDE.value,
    sites=_SITES.value,
    timings=_TIMINGS.value,
    output_dir=_OUTPUT_DIR.value,
    plot=_PLOT.value,
    model_explorer=_MODEL_EXPLORER.value,
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
  spec = dataclasses.replace(_sweep_spec(), explain_passes=True)
  _start_jax(spec.targets)
  results = _run_streamed(spec)
  versions = lowering.versions()
  explanations = _explanations(results)
  cpu = _host()
  outputs.show_explanation(results, explanations, versions, cpu, _outputs(fmt))
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
  model_explorer.view(words[0], wanted, _PORT.value, _BROWSER.value)
  return EXIT_OK


def _sweep_flags() -> tuple[dict, list[str]]:
  """({"cases", "batch_sizes", "precisions", "targets"} -> the flags'
  values, defaults included; the keys whose flags were given)."""
  from hloprobe import sweep

  holders = {
    "cases": _CASE,
    "batch_sizes": _BATCH_SIZES,
    "precisions": _PRECISIONS,
    "targets": _TARGETS,
  }
  values = {key: holder.value for key, holder in holders.items()}
  values["batch_sizes"] = sweep.parse_batch_sizes(_BATCH_SIZES.value)
  return values, [key for key, holder in holders.items() if holder.present]


def _cmd_targets() -> int:
  from hloprobe.report import listings

  print(listings.targets_listing(_TARGET_CONFIG.value))
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
  if _TARGET_CONFIG.value:
    raise InvalidArgumentError(
      "`golden` does not read --target_config; name config files in "
      "--targets (e.g. --targets=cpu,golden/configs/x.txtpb), as "
      "MANIFEST.json records them"
    )
  golden_dir = _GOLDEN_DIR.value or snapshot.default_golden_dir()
  values, given = _sweep_flags()
  spec = _nonempty(commands.golden_spec(golden_dir, values, given))
  _start_jax(spec.targets)
  if words == ["update"]:
    return commands.cmd_update(spec, golden_dir)
  return commands.cmd_check(spec, golden_dir, _STRICT.value, _OUTPUT_DIR.value)


def _cmd_verify() -> int:
  if not _FIX.value:
    raise InvalidArgumentError(
      "verify needs --fix, e.g. --fix=float32 or --fix=no_triton_gemm"
    )
  fix = verify.parse_fix(_FIX.value)
  requirements = verify.parse_requirements(_require())
  fmt = _check_format()
  spec = _sweep_spec()
  verify.check_batch_sizes(requirements, spec.batch_sizes)
  _start_jax(spec.targets)
  outcome = verify.verify_fix(
    spec,
    fix,
    requirements,
    golden_dir=_GOLDEN_DIR.value or None,
    abs_error_bound=_ABS_ERROR_BOUND.value,
    rel_error_bound=_REL_ERROR_BOUND.value,
  )
  print(render.render_verification(outcome, fmt))
  return EXIT_OK if outcome.passed else EXIT_FAILED


def _require() -> str:
  """--require as `verify.parse_requirements` reads it (which rejects an
  empty item and drops a repeated one)."""
  return ",".join(_REQUIRE.value)


def _cmd_versions() -> int:
  from hloprobe.versions import commands

  return commands.cmd_versions(
    _sweep_spec(),
    _JAXLIB.value,
    _venv_dir(),
    _check_format(),
    _CHANGES_ONLY.value,
  )


def _cmd_cache(words: list[str]) -> int:
  from hloprobe.versions import commands

  folder = _CACHE_DIR.value or cache.default_cache_dir()
  return commands.cmd_cache(words, folder, _CACHE_MAX_MB.value)


def _cmd_bisect() -> int:
  from hloprobe.versions import commands

  return commands.cmd_bisect(
    _sweep_spec(), _GOOD.value, _BAD.value, _require(), _venv_dir()
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
  "good": ("bisect",),
  "bad": ("bisect",),
  "timings": ("sweep",),
  "sites": ("sweep",),
  "wide": ("sweep",),
  "columns": ("sweep",),
  "plot": ("sweep", "explain"),
  "model_explorer": ("sweep", "explain"),
  "cache_max_mb": (*_CACHING, "cache"),
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
    if _OUTPUT_DIR.value:
      where = os.path.join(_OUTPUT_DIR.value, render.RESULTS_STREAM)
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
  """The console-script entry point."""
  # absl's --help prints the __main__ module's docstring as the usage and
  # the key flags of the main program (sys.argv[0]): make those this
  # module's, so --help lists them (closed vocabularies with their values).
  sys.modules["__main__"].__doc__ = __doc__
  for flag in flags.FLAGS.get_flags_for_module(__name__):
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
  # `hloprobe sweep | head`: end quietly when the reader goes away.
  signal.signal(signal.SIGPIPE, signal.SIG_DFL)
  # An interrupt ends the run through `finally` blocks: worker processes and
  # temporary folders go, finished results stay (see `_run_streamed`).
  for s in _SIGNALS:
    signal.signal(s, _on_signal)
  sys.unraisablehook = _on_unraisable
  try:
    # `python -m hloprobe` blocks them while importing (see __main__).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    app.run(main, flags_parser=_parse_flags)
  except KeyboardInterrupt as e:  # before `main` (flag parsing)
    sys.exit(_interrupted(e))
