"""Developer tools kept apart from the library: benchmarks (bench: sweep
timing; bench_invariance, bench_memory, bench_ray, bench_shards,
bench_venv) and
maintainers' checks (autotune_template, kernel_model_check; fuzz_modules:
`make fuzz`; profile_workers: cProfile of a command and its workers), each run as
`python -m hloprobe.tools.NAME` (`TOOLS` lists them).

Like tests, a tool measures the library's internals: it may import the
modules behind a stage's face (tests/layering_test.py allows it). Nothing
in the library imports a tool.
"""

from __future__ import annotations

__all__ = ["TOOLS"]

# The tools' modules: each a tool run with `python -m hloprobe.tools.NAME`
# but bench_clock, what the benchmarks share.
TOOLS = (
  "autotune_template",
  "bench",
  "bench_clock",
  "bench_invariance",
  "bench_memory",
  "bench_models",
  "bench_ray",
  "bench_scale",
  "bench_shards",
  "bench_venv",
  "fuzz_modules",
  "kernel_model_check",
  "profile_workers",
)
