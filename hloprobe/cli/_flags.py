"""The command line's flags: absl `FlagHolder`s and their validators.

Only `cli._main` reads them (`.value`), once per command, into the
command's args record (`hloprobe.commands`), whose fields are named after
them. Closed vocabularies (precisions, --require, --columns, --format) are
checked by absl at parse time; an empty list or a bad error
bound is a validator's usage error.

Private in intent: use the package, `hloprobe.cli`.
"""

from __future__ import annotations

import math

from absl import flags

from hloprobe import verify
from hloprobe.api import DEFAULTS
from hloprobe.cli._rules import EnumListParser
from hloprobe.engine import EXECUTORS
from hloprobe.ir import PRECISION_ALIASES, Precision
from hloprobe.report import OUTPUT_FORMS
from hloprobe.runtime import usable_cores

__all__ = [
  "ABS_ERROR_BOUND",
  "ALL_FIXES",
  "ALL_ROWS",
  "BAD",
  "BATCH_SIZES",
  "BROWSER",
  "CACHE",
  "CACHE_DIR",
  "CACHE_MAX_MB",
  "CASE_TIMEOUT",
  "CASE",
  "CHANGES_ONLY",
  "COLUMNS",
  "EXECUTOR",
  "EXPERIMENT",
  "EXPERIMENTS_FILE",
  "EXPLAIN_PASSES",
  "FIX",
  "FORMAT",
  "FORMATS",
  "GOLDEN_DIR",
  "GOOD",
  "INVARIANCE",
  "JAXLIB",
  "JOBS",
  "MAX_WORKER_MB",
  "MODEL_EXPLORER",
  "ONLY",
  "OUTPUT_DIR",
  "OVERWRITE",
  "PLOT",
  "PLOT_SHARED_Y",
  "PORT",
  "PRECISIONS",
  "PYTHON",
  "RAY_ADDRESS",
  "REL_ERROR_BOUND",
  "REQUIRE",
  "RESULTS",
  "SHARD",
  "SITES",
  "STRICT",
  "TARGETS",
  "TARGET_CONFIG",
  "TIMINGS",
  "TRY_FIXES",
  "WIDE",
  "old_spellings",
]


def _define_enum_list(name, default, enum_values, help_text, aliases=None):
  """A comma-separated list flag of closed vocabulary: --help shows the
  allowed values as DEFINE_enum does; a bad item is a flag error naming
  the nearest value (`aliases`: short names people type)."""
  return flags.DEFINE(
    EnumListParser(enum_values, aliases),
    name,
    default,
    f"<{'|'.join(enum_values)}>: {help_text}",
    serializer=flags.CsvListSerializer(","),
  )


# Cases and targets are open vocabularies (a case may be
# package.module:factory or file.py:factory, a target a config file path),
# so they stay plain lists, checked when looked up.
CASE = flags.DEFINE_list(
  "case",
  ["seed_mlp"],
  "Cases to sweep, comma-separated: built-in names (see `hloprobe cases`), "
  "package.module:factory or path/to/file.py:factory (a function "
  "returning a hloprobe.Case), or a module file (HLO text or proto, "
  "HloSnapshot, StableHLO text or bytecode, a jax.export artifact).",
)
INPUTS = flags.DEFINE_string(
  "inputs",
  None,
  "A module-file case's arguments: an .npz (its arrays in parameter "
  "order) or .npy (one parameter) file. Without it a module runs on an "
  "HloSnapshot's arguments, else on seeded random inputs.",
)
BATCH_ARG = flags.DEFINE_string(
  "batch_arg",
  None,
  "A module-file case's batch parameter, by 0-based number or name (x, "
  "Arg_1.2): its axis 0 is the batch. Without it, the parameter whose "
  "axis 0 the output's leading axis shares (the case's notes say which).",
)
BATCH_SIZES = flags.DEFINE_string(
  "batch_sizes",
  DEFAULTS.batch_sizes,
  "Batch sizes: integers and ranges, e.g. '1,2,4-9,64,4096'.",
)
PRECISIONS = _define_enum_list(
  "precisions",
  list(DEFAULTS.precisions),
  [p.value for p in Precision],
  "Matmul precisions, comma-separated: bfloat16, tensorfloat32, float32, "
  "default, high, highest, or DotAlgorithmPreset names such as "
  "TF32_TF32_F32.",
  aliases=PRECISION_ALIASES,
)
TARGETS = flags.DEFINE_list(
  "targets",
  list(DEFAULTS.targets),
  "Targets, comma-separated; see `hloprobe targets`.",
)
TARGET_CONFIG = flags.DEFINE_multi_string(
  "target_config",
  [],
  "A GpuTargetConfigProto .txtpb file to compile for as one more "
  "compile-only target (repeatable), e.g. "
  "hloprobe/compile/gpu_specs/a100_sxm_40.txtpb.",
)
AUTOTUNE_RESULTS = flags.DEFINE_multi_string(
  "autotune_results",
  [],
  "An autotune results file (xla.autotuner.AutotuneCache, text format: "
  "recorded on a GPU or written by `python -m "
  "hloprobe.tools.autotune_template`) replayed on the compile-only targets "
  "of the GPU it was recorded on (repeatable); each runs as an experiment "
  "'autotuned-<file stem>' in worker processes of its own.",
)
OUTPUT_DIR = flags.DEFINE_string(
  "output_dir",
  None,
  "If set, write per-config stablehlo.mlir / optimized.hlo, the PTX of "
  "each kernel a site's algorithm was read from (ptx/) and results.json "
  "here; for `golden check`, where candidate files go on a mismatch "
  "(default: a new temporary folder).",
)
OVERWRITE = flags.DEFINE_bool(
  "overwrite",
  False,
  "`sweep` / `explain` / `merge`: an --output_dir holding an earlier sweep's results "
  "(results.json or results.jsonl) is refused, so two sweeps never mix "
  "there; --overwrite removes those results (results.json, results.jsonl, "
  "report.html and the config folders results.json names) first.",
)
SITES = flags.DEFINE_bool(
  "sites",
  False,
  "Also print one row per contraction site (table and markdown formats).",
)
EXPLAIN_PASSES = flags.DEFINE_bool(
  "explain_passes",
  False,
  "Name the XLA pass that rewrote each contraction site (each compile also dumps "
  "the module after every pass, to a temporary folder).",
)
EXPERIMENT = flags.DEFINE_multi_string(
  "experiment",
  [],
  "An XLA_FLAGS experiment NAME:FLAGS (e.g. 'cublas:--xla_gpu_enable_triton_gemm=false') "
  "or a built-in name (see `hloprobe experiments`); repeatable. Each runs in "
  "its own worker process beside the baseline, with the XLA_FLAGS of the "
  "environment followed by its own (its value wins for a flag set in both).",
)
EXPERIMENTS_FILE = flags.DEFINE_string(
  "experiments_file", None, "A file of experiments, one NAME:FLAGS per line."
)
FIX = flags.DEFINE_string(
  "fix",
  None,
  "For `verify`: the candidate fix, a matmul precision (e.g. float32, "
  "F32_F32_F32) or an experiment (a built-in name or NAME:--xla_flag=value); "
  "none: the baseline is judged as it is.",
)
REQUIRE = _define_enum_list(
  "require",
  ["consistent", "accurate"],
  verify.REQUIREMENTS,
  "For `verify` (and `bisect`): requirements, comma-separated.",
)
ABS_ERROR_BOUND = flags.DEFINE_float(
  "abs_error_bound",
  None,
  "For `verify --require=accurate`: max |err| allowed (as run_hlo_module).",
)
REL_ERROR_BOUND = flags.DEFINE_float(
  "rel_error_bound",
  None,
  "For `verify --require=accurate`: max relative error allowed (as run_hlo_module).",
)
FORMATS = (*OUTPUT_FORMS.formats, "html")
FORMAT = flags.DEFINE_enum(
  "format",
  "table",
  FORMATS,
  f"Output format: one of {', '.join(FORMATS)}. html: one self-contained "
  "page (plot, explanation, tables) on stdout; it names passes, as "
  "--explain_passes.",
)
WIDE = flags.DEFINE_bool(
  "wide",
  False,
  "--format=table: every column, unwrapped (the default table shows the "
  f"{OUTPUT_FORMS.terminal_width}-column first screen).",
)
COLUMNS = _define_enum_list(
  "columns",
  None,
  [key for key, _ in OUTPUT_FORMS.columns],
  "--format=table or markdown: these columns, in this order, comma-separated.",
)
PLOT = flags.DEFINE_string(
  "plot",
  None,
  "Write |row 0 - float64| against batch size as a PNG here (a panel per "
  "target; experiments side by side). Needs matplotlib (make installs it).",
)
PLOT_SHARED_Y = flags.DEFINE_bool(
  "plot_shared_y",
  True,
  "The plot (--plot, the HTML page's): one error axis for every panel, so "
  "panels compare by height; --noplot_shared_y: each panel its own.",
)
MODEL_EXPLORER = flags.DEFINE_string(
  "model_explorer",
  None,
  "Write each config's StableHLO and Model Explorer node data (sites "
  "by error, fate, algorithm, pass) here; open with `hloprobe view DIR`.",
)
PORT = flags.DEFINE_integer(
  "port", 8080, "`hloprobe view`: the port (8080: the first free from 8080)."
)
BROWSER = flags.DEFINE_bool(
  "browser", True, "`hloprobe view`: open the page in a browser tab."
)
TRY_FIXES = flags.DEFINE_bool(
  "try_fixes",
  True,
  "`hloprobe explain`: try the candidate fixes that apply (float32 or a "
  "multi-pass preset, XLA flags that pin the gemm kernel or the split) on "
  "the configs at fault, one at a time until one passes (--all_fixes: "
  "every one), and print each with its `hloprobe verify` command; "
  "--notry_fixes lists them untried.",
)
ALL_FIXES = flags.DEFINE_bool(
  "all_fixes",
  False,
  "`hloprobe explain`: try every candidate fix, not only up to the first "
  "that passes (the rest are listed with their `verify` commands).",
)
INVARIANCE = flags.DEFINE_enum(
  "invariance",
  DEFAULTS.invariance,
  ["answer", "pin", "off"],
  "`hloprobe explain`: answer first which batch sizes give row 0 and an "
  "anchor row the same bits (the CPU: run and compared; a compile-only "
  "GPU: by kernel identity); `pin` also searches the settings that pin "
  "them and verifies each in one more sweep per group (a compile-only "
  "GPU's pinned-gemm autotune file, which the printed `verify` command "
  "reads, is kept in --output_dir/pins, else in pins/ under --cache_dir "
  "or the default cache folder, named by the case, target, precision "
  "and a hash of what it pins); `off`: neither.",
)
ONLY = flags.DEFINE_enum(
  "only",
  DEFAULTS.only,
  ["invariance"],
  "`hloprobe explain`: answer one question alone. `invariance`: the "
  "bitwise answer (--invariance's, pins included) with no accuracy "
  "numerics: each config compiled, its kernels read and, on the CPU, run "
  "for its rows' bits; no float64 reference, prediction or pass dumps "
  "(--explain_passes still names the passes). Default: every question.",
)
VERBOSE = flags.DEFINE_bool(
  "verbose",
  False,
  "`hloprobe explain`: print the detail per target (fates by batch size, "
  "effective algorithms, row 0, what a compile-only target cannot "
  "settle) and each fix's reason and command, not the one-screen answer.",
)

GOLDEN_DIR = flags.DEFINE_string(
  "golden_dir",
  None,
  "`hloprobe golden`: the golden folder. Default: golden/ at the repository "
  "root when run from a source checkout (the folder above the hloprobe "
  "package holds pyproject.toml), else ./golden.",
)
STRICT = flags.DEFINE_bool(
  "strict",
  False,
  "`hloprobe golden check`: compare full StableHLO/HLO text even when "
  "jax/jaxlib differ from MANIFEST.json's (otherwise only dot summaries).",
)
TIMINGS = flags.DEFINE_bool(
  "timings",
  False,
  "`sweep`: after the results, print the seconds each config spent per "
  "stage (lower, compile, parse, sites, emulation, noise floor, ...) and "
  "the sums (to stderr with --format=json).",
)
CACHE_DIR = flags.DEFINE_string(
  "cache_dir",
  None,
  "`sweep`/`explain`/`verify`: folder of hloprobe's cache of per-config "
  "records, keyed by everything a record depends on (jax/jaxlib, hloprobe's "
  "source, case, inputs, target config, XLA_FLAGS, host CPU, ...), under "
  "records/; `versions`/`bisect` keep their per-jaxlib venvs under venvs/. "
  "Default: $XDG_CACHE_HOME/hloprobe or ~/.cache/hloprobe.",
)
JOBS = flags.DEFINE_integer(
  "jobs",
  DEFAULTS.jobs(),
  "How many worker processes compile and run configs at once (default: "
  "the number of cores this process may use); each flag set (the baseline, each experiment) "
  "gets max(1, jobs / flag sets); `versions` sweeps this many jaxlib "
  "versions at once. The output order does not change.",
  lower_bound=1,
  # Each is a process with its own jax (~0.5 GB); more than the cores only
  # queue for them.
  upper_bound=max(64, usable_cores()),
)
CASE_TIMEOUT = flags.DEFINE_float(
  "case_timeout",
  DEFAULTS.case_timeout_s,
  "Seconds one worker call of a user case (module:factory) may take: "
  "loading it, its inputs and float64 reference, one config's compile and "
  "run. Past it the worker is stopped and that case's configs fail with "
  "one line; the other cases go on. A user case's code never runs in "
  "hloprobe's own process.",
  lower_bound=1.0,
)
ALL_ROWS = flags.DEFINE_bool(
  "all_rows",
  False,
  "Judge every row of every config against its own f32 noise floor. By "
  "default a case whose rows are independent (declared rows_independent, "
  "or proven from its jaxpr), above 64 rows, judges "
  "row 0, 32 rows spread evenly and each leaf's 16 rows of largest error "
  "(a first pass over every row), and says which rows it judged; a large "
  "program (one whose dots do over 2^28 multiply-adds a row) judges fewer, "
  "its rows judged whole up to 2^34 multiply-adds of them, each against "
  "row 0's floor scaled to the row's values (or its own XLA-order error "
  "where larger).",
)
MAX_WORKER_MB = flags.DEFINE_integer(
  "max_worker_mb",
  None,
  "The resident memory, in MiB, one worker process may reach; past it the "
  "worker is stopped and its config fails with one line naming it and "
  "the bound, and the other configs go on (a fresh worker). Default: a "
  "quarter of the machine's memory.",
  lower_bound=64,
)
# Named `cache` so that help reads `--[no]cache`; `--nocache`, the spelling
# of the flag's first name (`nocache`), is absl's negation of it, and
# `old_spellings` keeps that name's other forms.
CACHE = flags.DEFINE_bool(
  "cache",
  True,
  "Read and write the record cache (--cache_dir); --nocache computes every "
  "config and neither reads nor writes it.",
)
CACHE_MAX_MB = flags.DEFINE_integer(
  "cache_max_mb",
  DEFAULTS.cache_max_mb,
  "Bound of --cache_dir's records/, in MiB: after `sweep`, `explain` and "
  "`verify`, the least recently used records are removed until the rest "
  "fit (venvs/ is not bounded; see `hloprobe cache`).",
  lower_bound=0,
)
RESULTS = flags.DEFINE_string(
  "results",
  None,
  "`golden check` / `verify` / `explain`: judge the records in this "
  "folder, written by `hloprobe merge --output_dir` (a sharded sweep "
  "joined), instead of sweeping; it must hold every config the command "
  "would sweep (explain still tries its fixes).",
)
SHARD = flags.DEFINE_string(
  "shard",
  None,
  "`sweep`: run part I of N of the configs, written I/N (0-based, e.g. "
  "0/3) or auto/N (I from HLOPROBE_SHARD_INDEX, JOB_COMPLETION_INDEX or "
  "SLURM_ARRAY_TASK_ID, 0-based); needs --output_dir. `hloprobe merge "
  "DIR... --output_dir=OUT` joins the shards into the unsharded sweep's "
  "results.",
)
EXECUTOR = flags.DEFINE_enum(
  "executor",
  "local",
  list(EXECUTORS),
  "`sweep`/`explain`/`verify`: where the configs compile and run: `local` "
  "worker processes (--jobs of them), or `ray`: actors of a Ray cluster "
  "(--ray_address, else RAY_ADDRESS, else a local cluster of --jobs CPUs "
  "on 127.0.0.1), --jobs of them at once; needs the extra `ray`. The "
  "results are the same.",
)
RAY_ADDRESS = flags.DEFINE_string(
  "ray_address",
  None,
  "With --executor=ray: the Ray cluster to join, e.g. ray://head:10001 or "
  "head:6379 (default: RAY_ADDRESS, else a local cluster).",
)

JAXLIB = flags.DEFINE_list(
  "jaxlib",
  [],
  "`hloprobe versions`: jaxlib releases to sweep under, e.g. "
  "0.4.35,0.6.2,0.10.2 (each in its own cached venv).",
)
PYTHON = flags.DEFINE_string(
  "python",
  None,
  "`hloprobe versions`/`bisect`: the Python interpreter (a path) that makes "
  "every release's venv, e.g. /usr/bin/python3.12; a release without a "
  "wheel for it is 'not installed'. Default: per release, the running "
  "interpreter when the release has a wheel for it, else the newest "
  "python3.N on PATH or under ~/.pyenv/versions that has one.",
)
GOOD = flags.DEFINE_string(
  "good", None, "`hloprobe bisect`: the release whose verdict is the old one."
)
BAD = flags.DEFINE_string(
  "bad", None, "`hloprobe bisect`: the release whose verdict is the new one."
)
CHANGES_ONLY = flags.DEFINE_bool(
  "changes_only",
  False,
  "`hloprobe versions`: show only configs where something changed.",
)


# A boolean flag's first name -> its name now; absl's negation `--noNEW`
# already reads as the old `--OLD` (a flag named `nocache` printed as
# `--[no]nocache`).
_RENAMED = {"nocache": "cache"}
_FALSE_WORDS = ("false", "f", "0")
# absl's boolean values (absl/flags/_argument_parser.py, BooleanParser.
# convert); another value is left for absl to refuse.
_BOOL_WORDS = ("true", "t", "1", *_FALSE_WORDS)


def old_spellings(argv: list[str]) -> list[str]:
  """`argv` with a renamed boolean's other old forms in its new name:
  `--nonocache` -> `--cache`, `--nocache=false` -> `--cache` and
  `--nocache=true` -> `--nocache` (one or two dashes; words after a lone
  `--` are left as they are, and so is a value that is not a boolean, for
  absl to refuse). `cli` gives it a flag file's lines too, expanded.
  """
  out = list(argv)
  for i, word in enumerate(argv):
    if word == "--":
      break
    dashes = "--" if word.startswith("--") else "-"
    name, eq, value = word.removeprefix(dashes).partition("=")
    for old, new in _RENAMED.items():
      if not word.startswith("-") or name not in (old, f"no{old}"):
        continue
      if eq and value.lower() not in _BOOL_WORDS:
        continue
      on = (name == old) == (value.lower() in _FALSE_WORDS)
      if eq or name != old:
        out[i] = f"{dashes}{'' if on else 'no'}{new}"
  return out


def _names_given(names: list[str]) -> bool:
  """A list flag names something: not `--case=` (empty) nor `--case=a,,b`."""
  return bool(names) and all(names)


def _error_bound_ok(value: float | None) -> bool:
  return value is None or (math.isfinite(value) and value >= 0)


def _register_validators() -> None:
  """An empty list would sweep nothing and pass vacuously: a usage error;
  an error bound is a finite number >= 0; a case timeout is not NaN."""
  for holder in (ABS_ERROR_BOUND, REL_ERROR_BOUND):
    flags.register_validator(
      holder,
      _error_bound_ok,
      message=f"--{holder.name} must be a finite number >= 0, e.g. "
      f"--{holder.name}=1e-3",
    )
  flags.register_validator(  # NaN passes absl's lower_bound
    CASE_TIMEOUT,
    lambda v: not math.isnan(v),
    message="--case_timeout must be a number of seconds >= 1, not NaN",
  )
  for holder, example in ((CASE, "seed_mlp"), (PRECISIONS, "float32")):
    flags.register_validator(
      holder,
      _names_given,
      message=f"--{holder.name} needs at least one name and no empty ones, "
      f"e.g. --{holder.name}={example}",
    )
  flags.register_multi_flags_validator(
    [TARGETS, TARGET_CONFIG],
    lambda v: (
      _names_given(v["targets"] + v["target_config"]) and all(v["targets"])
    ),
    message="--targets needs at least one target (or a --target_config) "
    "and no empty ones, e.g. --targets=cpu,a100",
  )


_register_validators()
