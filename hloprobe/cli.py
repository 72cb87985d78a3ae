"""hloprobe's command line: `hloprobe <command> [--flags]`.

Commands:
  sweep     lower, compile, map dot sites and run every config (default)
  targets       list the targets
  experiments   list the built-in XLA_FLAGS experiments

Exit status: 0 when every config succeeded, 1 when any failed, 2 for bad
input (unknown case, target, precision, format, flag; bad batch size).
"""

from __future__ import annotations

import sys

from absl import app, flags

from hloprobe import cases, experiments, precisions, report, targets
from hloprobe.errors import HloprobeError, UsageError

__all__ = ["main", "run"]

_CASE = flags.DEFINE_list(
  "case", ["seed_mlp"], f"Cases to sweep, comma-separated; one of {sorted(cases.CASES)}."
)
_BATCH_SIZES = flags.DEFINE_string(
  "batch_sizes", "1-9", "Batch sizes: integers and ranges, e.g. '1,2,4-9,64,4096'."
)
_PRECISIONS = flags.DEFINE_list(
  "precisions", list(precisions.DEFAULT_PRECISIONS),
  "Matmul precisions: bfloat16, tensorfloat32, float32, default, high, "
  "highest, or DotAlgorithmPreset names such as TF32_TF32_F32.",
)
_TARGETS = flags.DEFINE_list(
  "targets", ["cpu"], "Targets, comma-separated; see `hloprobe targets`."
)
_OUTPUT_DIR = flags.DEFINE_string(
  "output_dir", None,
  "If set, write per-config stablehlo.mlir / optimized.hlo and results.json here.",
)
_SITES = flags.DEFINE_bool(
  "sites", False, "Also print one row per dot site (table and markdown formats)."
)
_EXPLAIN_PASSES = flags.DEFINE_bool(
  "explain_passes", False,
  "Name the XLA pass that rewrote each dot site (compiles each config once "
  "more in a worker process with pass dumps).",
)
_EXPERIMENT = flags.DEFINE_multi_string(
  "experiment", [],
  "An XLA_FLAGS experiment NAME:FLAGS (e.g. 'cublas:--xla_gpu_enable_triton_gemm=false') "
  "or a built-in name (see `hloprobe experiments`); repeatable. Each runs in "
  "its own worker process beside the baseline.",
)
_EXPERIMENTS_FILE = flags.DEFINE_string(
  "experiments_file", None, "A file of experiments, one NAME:FLAGS per line."
)
_FORMAT = flags.DEFINE_string(
  "format", "table", f"Output format: one of {', '.join(report.REPORT_FORMATS)}."
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _sweep_spec():
  from hloprobe import sweep

  return sweep.SweepSpec(
    cases=tuple(_CASE.value),
    batch_sizes=sweep.parse_batch_sizes(_BATCH_SIZES.value),
    precisions=tuple(_PRECISIONS.value),
    targets=tuple(_TARGETS.value),
    explain_passes=_EXPLAIN_PASSES.value,
    experiments=tuple(_experiments()),
  )


def _experiments() -> list:
  found = [experiments.parse_experiment(t) for t in _EXPERIMENT.value]
  if _EXPERIMENTS_FILE.value:
    found += experiments.parse_experiments_file(_EXPERIMENTS_FILE.value)
  return found


def _check_format() -> str:
  if _FORMAT.value not in report.REPORT_FORMATS:
    raise UsageError(
      f"unknown --format {_FORMAT.value!r}; choose from {', '.join(report.REPORT_FORMATS)}"
    )
  return _FORMAT.value


def _cmd_sweep() -> int:
  from hloprobe import lowering, sweep

  spec = _sweep_spec()
  fmt = _check_format()
  results = sweep.run_sweep(spec)
  versions = lowering.versions()
  print(report.render(results, fmt, versions))
  if _SITES.value and fmt != "json":
    print()
    print(report.render_sites(results, fmt))
  if _OUTPUT_DIR.value:
    paths = report.write_outputs(results, _OUTPUT_DIR.value, versions)
    print(f"wrote {len(paths)} files under {_OUTPUT_DIR.value}", file=sys.stderr)
  return EXIT_OK if all(r.ok for r in results) else EXIT_FAILED


def _cmd_targets() -> int:
  from tabulate import tabulate

  rows = [
    (t.name, t.platform, "compile only" if t.compile_only else "compile and run",
     t.compute_capability or "n/a", t.description)
    for t in targets.BUILTIN_TARGETS.values()
  ]
  print(tabulate(rows, headers=("target", "platform", "mode", "compute capability", "description")))
  return EXIT_OK


def _cmd_experiments() -> int:
  from tabulate import tabulate

  rows = [(e.name, e.flags_text, e.description)
          for e in experiments.BUILTIN_EXPERIMENTS.values()]
  print(tabulate(rows, headers=("experiment", "XLA_FLAGS", "what it does")))
  return EXIT_OK


_COMMANDS = {
  "sweep": _cmd_sweep,
  "targets": _cmd_targets,
  "experiments": _cmd_experiments,
}


def main(argv: list[str]) -> int:
  """Runs one command; returns the exit status."""
  command, *rest = argv[1:] or ["sweep"]
  try:
    if command not in _COMMANDS:
      raise UsageError(f"unknown command {command!r}; choose from {', '.join(_COMMANDS)}")
    if rest:
      raise UsageError(f"unexpected arguments {rest}; flags are written --name=value")
    return _COMMANDS[command]()
  except UsageError as e:
    print(f"hloprobe: error: {e}", file=sys.stderr)
    return EXIT_USAGE
  except HloprobeError as e:
    print(f"hloprobe: error: {e}", file=sys.stderr)
    return EXIT_FAILED


def _parse_flags(argv: list[str]) -> list[str]:
  """absl flag parsing with one clear line and exit 2 on a bad flag."""
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    print(f"hloprobe: error: {e}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def run() -> None:
  """The console-script entry point."""
  app.run(main, flags_parser=_parse_flags)
