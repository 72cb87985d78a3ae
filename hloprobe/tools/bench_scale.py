"""`make bench`'s real-size lines (issue 37): hloprobe on real-size
programs as ratios to a plain compile loop in the same run, with peak
memory.

  python -m hloprobe.tools.bench_scale [LINE ...] [--command=explain|sweep]

LINE is one of gpt2_1, gpt2_2, gpt2_4, gpt2_12, resnet, decode, growth
(the gpt2 lines' seconds against their layers) or all (the default).
Each line runs, in fresh processes, back to back:

  plain loop   what a user would write instead: per target (cpu, a100),
               batch size and precision (bfloat16, float32),
               `jax.jit(case.fn)` on the rows, run once on the CPU, and
               for the a100 lowered and compiled only (no GPU), as
               hloprobe compiles for it.
  hloprobe     `hloprobe explain` (or `sweep`) of the same configs, cold
               (--nocache), its output thrown away.

and prints the ratio with its goal, both sides' seconds, the peak resident
memory of the largest process of hloprobe's run (the main one or any
worker: `RUSAGE_CHILDREN` of a wrapper that waited for all of them), and
the load average before and after (the machine may be shared: the ratios
pair runs made back to back). Goals: gpt2_12 <= 2x, gpt2_1 <= 1.5x,
decode <= 1.5x, every process < 2 GB, the 12-layer ratio no worse than
the 1-layer one (linear in depth).

Before the first line, one untimed warm-up (gpt2_1 lowered and compiled
for the a100 at n = 1, hloprobe imported) puts jaxlib, the CUDA plugin and
hloprobe in the page cache, so that the first plain loop does not pay for
reading them.

The cases are `bench_models`' (`package.module:factory` cases).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

__all__ = ["main", "warm_up"]

_MODELS = "hloprobe.tools.bench_models"
_ENV = {"JAX_PLATFORMS": "cpu", "JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1"}
_TARGETS = ("cpu", "a100")
_PRECISIONS = ("bfloat16", "float32")
# line -> (factory in bench_models, batch sizes, goal ratio or None)
_LINES = {
  "gpt2_1": ("gpt2_1", (1, 2, 8), 1.5),
  "gpt2_2": ("gpt2_2", (1, 2, 8), None),
  "gpt2_4": ("gpt2_4", (1, 2, 8), None),
  "gpt2_12": ("gpt2_12", (1, 2, 8), 2.0),
  "resnet": ("resnet", (1, 2, 8), None),
  "decode": ("decode", (1, 2, 4, 8, 16, 32, 64), 1.5),
}
_MEMORY_GOAL_MB = 2048
_CASE_TIMEOUT_S = 7200

# Runs argv (a list) in a child, waits, and prints one JSON line: wall
# seconds, the largest resident set (KiB) of any process it waited for,
# and the user + system CPU seconds of all of them together.
_WRAP = """
import json, resource, subprocess, sys, time
argv = json.loads(sys.argv[1])
start = time.perf_counter()
proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
peak, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
over = proc.stdout.count("went over --max_worker_mb") + proc.stdout.count(
  "ran past --case_timeout")
print(json.dumps({"wall": wall, "peak_kb": peak, "cpu": cpu, "rc": proc.returncode,
                  "err": proc.stderr[-2000:], "over": over}))
"""

# The plain loops' common start (this line's and bench_invariance's): the
# case (argv[1]) at the sizes (argv[2]), and `spec`, an array's abstract
# value on a compile-only a100.
PLAIN_SETUP = """
import sys
from hloprobe.runtime import host
import jax
from jax.experimental import topologies
from hloprobe.compile import cases, targets
sizes = [int(s) for s in sys.argv[2].split(",")]
case = cases.get_case(sys.argv[1])
full = case.make_inputs()
config = targets.get_target("a100").config_text
topo = topologies.get_topology_desc(
  "a100", "cuda", target_config=config, topology="1x1x1")
gpu = jax.sharding.SingleDeviceSharding(topo.devices[0])
spec = lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=gpu)
"""

_PLAIN = (
  PLAIN_SETUP
  + """
for n in sizes:
  args = case.inputs_for(full, n)
  for precision in ("bfloat16", "float32"):
    with jax.default_matmul_precision(precision):
      jax.block_until_ready(jax.jit(case.fn)(*args))
      lowered = jax.jit(case.fn).trace(
        *jax.tree_util.tree_map(spec, args)
      ).lower(lowering_platforms=("cuda",))
    lowered.compile()
"""
)


# Run once before the first line, its time not counted: the plain loop
# runs first, and on a machine whose page cache does not hold jaxlib and
# the CUDA plugin yet its first run read them from disk (gpt2_1's plain
# loop took 28.8 s so, 18-19 s warm, 2026-12-06): the ratio was too kind.
_WARM = (
  PLAIN_SETUP
  + """
import hloprobe.cli
args = case.inputs_for(full, 1)
jax.jit(case.fn).trace(*jax.tree_util.tree_map(spec, args)).lower(
  lowering_platforms=("cuda",)).compile()
"""
)


def warm_up() -> None:
  """`_WARM`, untimed: before the first plain loop of a bench run (this
  module's lines, `bench_invariance`'s)."""
  _wrapped([sys.executable, "-c", _WARM, f"{_MODELS}:gpt2_1", "1"])


def _wrapped(argv: list[str]) -> dict:
  out = subprocess.run(
    [sys.executable, "-c", _WRAP, json.dumps(argv)],
    capture_output=True,
    text=True,
    check=True,
    env=dict(os.environ, **_ENV),
  )
  found = json.loads(out.stdout.strip().splitlines()[-1])
  if found["rc"] != 0:
    raise RuntimeError(f"{argv[:4]} failed: {found['err']}")
  return found


def _load() -> str:
  return "/".join(f"{x:.1f}" for x in os.getloadavg())


def measure(line: str, command: str = "explain") -> dict:
  """One line's plain loop and hloprobe run, back to back.

  Returns:
    {"line", "plain_s", "hloprobe_s", "ratio", "plain_cpu_s",
    "hloprobe_cpu_s" (user + system, all processes), "peak_mb" (hloprobe's
    largest process), "plain_peak_mb", "load_before", "load_after",
    "goal", "over_bound" (lines of hloprobe's output naming a worker
    stopped by the memory bound: its configs failed)}.
  """
  factory, sizes, goal = _LINES[line]
  case = f"{_MODELS}:{factory}"
  batch = ",".join(map(str, sizes))
  before = _load()
  plain = _wrapped([sys.executable, "-c", _PLAIN, case, batch])
  run = _wrapped(
    [
      sys.executable,
      "-m",
      "hloprobe",
      command,
      f"--case={case}",
      f"--targets={','.join(_TARGETS)}",
      f"--batch_sizes={batch}",
      f"--precisions={','.join(_PRECISIONS)}",
      "--nocache",
      # A real-size case's first config (its float64 reference and
      # emulations) took over the default 600 s on a loaded machine
      # (gpt2_12 at load 15): its worker was stopped and every config
      # failed. A bench line measures the whole run.
      f"--case_timeout={_CASE_TIMEOUT_S}",
      "--format=json",
    ]
  )
  return {
    "line": line,
    "plain_s": plain["wall"],
    "hloprobe_s": run["wall"],
    "ratio": run["wall"] / plain["wall"],
    # CPU seconds, every process of each side: the work, which the load
    # of a shared machine moves less than the wall seconds.
    "plain_cpu_s": plain["cpu"],
    "hloprobe_cpu_s": run["cpu"],
    "peak_mb": run["peak_kb"] / 1024,
    "plain_peak_mb": plain["peak_kb"] / 1024,
    "load_before": before,
    "load_after": _load(),
    "goal": goal,
    # Lines of hloprobe's output naming a worker stopped by the memory
    # bound (`--max_worker_mb`) or the case timeout: its configs failed,
    # so the run is not a whole one and its seconds are too few.
    "over_bound": run.get("over", 0),
  }


def _print(found: dict, command: str) -> None:
  goal = found["goal"]
  ok = (goal is None or found["ratio"] <= goal) and (
    found["peak_mb"] < _MEMORY_GOAL_MB
  )
  cut = found.get("over_bound", 0)
  short = (
    f"; NOT A WHOLE RUN: {cut} of its lines name a worker stopped by "
    "--max_worker_mb or --case_timeout"
    if cut
    else ""
  )
  print(
    f"{found['line']:8s} {command} / plain loop: {found['ratio']:.2f}x "
    f"(goal {'-' if goal is None else f'<= {goal:g}x'}, < 2 GB a process: "
    f"{'ok' if ok else 'MISSED'}); {found['hloprobe_s']:.1f} s against "
    f"{found['plain_s']:.1f} s (CPU {found['hloprobe_cpu_s']:.0f} s against "
    f"{found['plain_cpu_s']:.0f} s); peak {found['peak_mb']:.0f} MB (plain "
    f"{found['plain_peak_mb']:.0f} MB); load {found['load_before']} -> "
    f"{found['load_after']}{short}",
    flush=True,
  )


def _growth(found: dict[str, dict]) -> None:
  layers = [
    (int(k.split("_")[1]), v) for k, v in found.items() if k.startswith("gpt2")
  ]
  if len(layers) < 2:
    return
  layers.sort()
  (l1, first), (lk, last) = layers[0], layers[-1]
  per = ", ".join(
    f"{n}: {v['hloprobe_s']:.0f} s ({v['ratio']:.2f}x)" for n, v in layers
  )
  linear = last["ratio"] <= first["ratio"] * 1.1
  print(
    f"growth   layers {per}; ratio at {lk} layers / at {l1}: "
    f"{last['ratio'] / first['ratio']:.2f} (goal <= 1: linear in depth: "
    f"{'ok' if linear else 'MISSED'})",
    flush=True,
  )


def main(argv: list[str]) -> None:
  """Prints the scale bench's lines named in `argv` (a line, "growth",
  "all"; `--command=` the command timed), each measured, then the growth;
  an unknown word exits with one line."""
  command = "explain"
  lines = []
  for a in argv:
    if a.startswith("--command="):
      command = a.split("=", 1)[1]
    elif a == "all":
      lines += list(_LINES)
    elif a == "growth":
      lines += [k for k in _LINES if k.startswith("gpt2")]
    elif a in _LINES:
      lines.append(a)
    else:
      sys.exit(
        f"bench_scale: unknown line {a!r}; choose from "
        f"{', '.join([*_LINES, 'growth', 'all'])}"
      )
  found = {}
  warm_up()
  for line in dict.fromkeys(lines or list(_LINES)):
    found[line] = measure(line, command)
    _print(found[line], command)
  _growth(found)


if __name__ == "__main__":
  main(sys.argv[1:])
