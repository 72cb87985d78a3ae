"""`make bench`: hloprobe's speed as ratios, each printed with its goal.

Ratios (each side in a fresh subprocess, so neither reuses the other's
traces or compiles; timed from after imports unless said; the best of
`--repeats` runs is kept for the first three):

  sweep / plain loop, cpu   `run_sweep` over the default 27 configs
                            (seed_mlp, n = 1..9, three precisions, cpu, no
                            cache) against the reporter's loop:
                            jit(vmap(forward)) run once per config under
                            `jax.default_matmul_precision`. Goal <= 1.2.
  sweep / plain loop, a100  the same 27 configs for the compile-only A100
                            against a loop that only lowers and compiles
                            them for it (`_PLAIN_A100`), the sweep
                            executing each optimized module as well
                            ("what XLA made", `numerics.made`). Goal <=
                            1.5 (issue 23). With a cache a rerun of it
                            reads every record: goal <= 0.2. Alone:
                            `... bench made`.
                            Both sweeps use the command line's default
                            --jobs (the number of cores).
  emulator / CPU run        the emulator (every seed dot site at
                            TF32_TF32_F32, compile excluded) against one
                            CPU run of the case, n = 4096, best of 20
                            calls each. Goal <= 1.5.
  warm / cold rerun         `make run`'s sweep (cpu,a100,t4; 81 configs) as
                            whole `hloprobe sweep` processes: a second run
                            reading the cache a first one (empty cache
                            folder) wrote. Goal <= 0.2.
  per-config cost           `run_sweep` on cpu at one batch size: 3 configs
                            (three precisions) against 1 (goal <= 3:
                            linear in configs), and a config at n = 4096
                            against one at n = 64 (goal <= 2). n = 65536
                            runs the seed MLP on a 256x256 grid (a
                            `file.py:factory` case written for the bench,
                            seed_mlp has 4096 rows); it has no goal.
  --jobs=1 / --jobs=2       `hloprobe sweep --targets=a100` (n = 1..9) with
                            two XLA_FLAGS experiments, 81 configs, whole
                            processes, no cache: the speed-up of two worker
                            processes over one (three flag sets: one lane
                            each, the third after the first to finish).
                            Goal >= 1.6 on 2 cores. Alone: `... bench jobs`.
  module file 10k / 1k      `read_module_file` of `big_hlo_module` (HLO
                            text), 10,000 against 1,000 instructions, best
                            of 3 after one read (about 10-15: XLA's parser,
                            translation and MLIR). Goal: 10,000 in <= 10 s.
  venv pip / uv             tools/bench_venv.py (`versions`' venvs; make bench).
  2 shards + merge / whole  see `bench_shards` (goal <= 1.1, CPU seconds).

Where measured, each side's CPU seconds (its own and its workers') over its
wall seconds say how many cores it kept busy: a run that already keeps
c of N cores busy can be made at most N / c times faster by more workers,
which the --jobs line prints.

On a shared machine the absolute seconds move with the load; the ratios
pair runs made back to back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from hloprobe.runtime import usable_cores
from hloprobe.tools.bench_clock import ENV as _ENV
from hloprobe.tools.bench_clock import Clock
from hloprobe.tools.bench_clock import cli as _cli
from hloprobe.tools.bench_clock import report as _report
from hloprobe.tools.bench_shards import shards

__all__ = ["main"]

# Every timing script starts its clocks with _START and ends with _STOP,
# which prints "wall_seconds cpu_seconds": the CPU seconds of the script and
# of every process it started and waited for (the sweep's workers).
_START = """
import resource, time
def _cpu():
  return sum(
    u.ru_utime + u.ru_stime
    for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
  )
start, start_cpu = time.perf_counter(), _cpu()
"""
_STOP = """
print(time.perf_counter() - start, _cpu() - start_cpu)
"""

_PLAIN = f"""
import time
from hloprobe.runtime import host
import jax
from hloprobe.compile import cases
from hloprobe.ir import precisions
{_START}
case = cases.get_case("seed_mlp")
xy, params = case.make_inputs()
fn = jax.jit(lambda xs, p: case.fn(xs, p))
for n in range(1, 10):
  for precision in precisions.DEFAULT_PRECISIONS:
    with jax.default_matmul_precision(precision):
      float(fn(xy[:n], params).ravel()[0])
{_STOP}
"""

_PLAIN_A100 = f"""
import time
from hloprobe.runtime import host
import jax
from jax.experimental import topologies
from hloprobe.compile import cases, targets
from hloprobe.ir import precisions
{_START}
case = cases.get_case("seed_mlp")
xy, params = case.make_inputs()
config = targets.get_target("a100").config_text
topo = topologies.get_topology_desc(
  "a100", "cuda", target_config=config, topology="1x1x1")
sharding = jax.sharding.SingleDeviceSharding(topo.devices[0])
spec = lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding)
for n in range(1, 10):
  args = jax.tree_util.tree_map(spec, (xy[:n], params))
  for precision in precisions.DEFAULT_PRECISIONS:
    with jax.default_matmul_precision(precision):
      lowered = jax.jit(case.fn).trace(*args).lower(lowering_platforms=("cuda",))
    lowered.compile().as_text()
{_STOP}
"""

_SWEEP = (
  """
from hloprobe import engine
from hloprobe.ir import precisions
"""
  + _START.replace("{", "{{").replace("}", "}}")
  + """
spec = engine.SweepSpec(
  ({case!r},), {sizes}, {precisions}, ("{target}",), jobs={jobs}
)
results = engine.run_sweep(spec)
assert all(r.ok for r in results), [r.failure for r in results if not r.ok]
"""
  + _STOP
)

_EMULATOR = """
import time
from hloprobe.runtime import host
import jax
from hloprobe.compile import cases
from hloprobe.numerics import emulate
case = cases.get_case("seed_mlp")
args = case.inputs_for(case.make_inputs(), 4096)
def best(f):
  jax.block_until_ready(f(*args))
  times = []
  for _ in range(20):
    start = time.perf_counter()
    jax.block_until_ready(f(*args))
    times.append(time.perf_counter() - start)
  return min(times)
run = best(jax.jit(case.fn))
emulated = best(emulate.make_emulator(case.fn, args, "TF32_TF32_F32"))
print(emulated / run)
"""


def _time(script: str) -> Clock:
  """Runs a timing script in a fresh interpreter; its last line holds the
  wall seconds, then optionally the CPU seconds (`_STOP`)."""
  return Clock(*_numbers(script))


def _numbers(script: str) -> list[float]:
  """The numbers on the last line a script run in a fresh interpreter
  prints."""
  proc = subprocess.run(
    [sys.executable, "-c", script],
    capture_output=True,
    text=True,
    check=True,
    env=dict(os.environ, **_ENV),
  )
  return [float(x) for x in proc.stdout.strip().splitlines()[-1].split()]


def _sweep(
  target="cpu",
  sizes=tuple(range(1, 10)),
  precisions=None,
  case="seed_mlp",
  jobs=usable_cores(),
) -> str:
  """The `run_sweep` timing script; `jobs` defaults to the command line's
  default (`--jobs`: the number of cores)."""
  return _SWEEP.format(
    jobs=jobs,
    case=case,
    target=target,
    sizes=repr(tuple(sizes)),
    precisions=repr(precisions)
    if precisions
    else "precisions.DEFAULT_PRECISIONS",
  )


def _pair(plain: str, swept: str, repeats: int) -> tuple[Clock, Clock]:
  """The best-of-`repeats` run (least wall time) of two scripts, run
  alternately."""
  times = [(_time(plain), _time(swept)) for _ in range(repeats)]
  best = lambda i: min((t[i] for t in times), key=lambda c: c.wall)
  return best(0), best(1)


def _seconds(a: Clock, b: Clock) -> str:
  """ "7.3 s / 4.6 s", with the cores each kept busy where measured."""
  if a.cpu is None or b.cpu is None:
    return f"{a.wall:.1f} s / {b.wall:.1f} s"
  return (
    f"{a.wall:.1f} s / {b.wall:.1f} s, using {a.cores()} / {b.cores()} "
    f"of {usable_cores()}"
  )


_BIG_CASE = """
import dataclasses
import numpy as np
from hloprobe.compile import builtin_cases

def _inputs():
  _, params = builtin_cases.seed_mlp.make_inputs()
  g = np.linspace(-1, 1, 256)
  xx, yy = np.meshgrid(g, g)
  xy = np.stack([xx.ravel(), yy.ravel()], axis=1).astype(np.float32)
  return xy, params

def make_case():
  return dataclasses.replace(
    builtin_cases.seed_mlp,
    name="seed_mlp_256x256",
    description="seed_mlp on a 256x256 grid (65536 rows), for make bench",
    make_inputs=_inputs,
  )
"""


def _per_config(repeats: int) -> None:
  """Linear in configs; n=4096 against n=64; n=65536 on a 256x256 seed."""
  one = _time(_sweep(sizes=(64,), precisions=("float32",)))
  three = _time(_sweep(sizes=(64,)))
  _report(
    "3 configs / 1 config (cpu, n=64)",
    three.wall / one.wall,
    "<= 3x (linear)",
    three.wall <= 3 * one.wall,
    _seconds(three, one),
  )
  big = _time(_sweep(sizes=(4096,)))
  _report(
    "cost per config n=4096 / n=64 (cpu, 3 configs each)",
    big.wall / three.wall,
    "<= 2x",
    big.wall <= 2 * three.wall,
    f"{big.wall / 3:.2f} s / {three.wall / 3:.2f} s per config",
  )
  with tempfile.TemporaryDirectory(prefix="hloprobe-bench-") as folder:
    path = os.path.join(folder, "seed_256.py")
    with open(path, "w") as f:
      f.write(_BIG_CASE)
    huge = _time(_sweep(sizes=(65536,), case=f"{path}:make_case"))
  _report(
    "cost per config n=65536 / n=64 (cpu, 3 configs each, seed on 256x256)",
    huge.wall / three.wall,
    None,
    True,
    f"{huge.wall / 3:.2f} s / {three.wall / 3:.2f} s per config",
  )


_MODULE_FILES = """
import os, tempfile, time
from hloprobe.compile.module_files import read_module_file
from hloprobe.tools.bench import big_hlo_module
def once(path):
  start = time.perf_counter(); read_module_file(path)
  return time.perf_counter() - start
def read(n):
  path = os.path.join(tempfile.mkdtemp(), "m.txt")
  open(path, "w").write(big_hlo_module(n))
  return min(once(path) for _ in range(3))
read(10); print(read(1000), read(10000))
"""


def big_hlo_module(n: int) -> str:
  """HLO text of `n` f32[8,8] instructions: p0, adds, every tenth a dot."""
  dot = "dot({0}, {0}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"
  lines = ["HloModule big\n\nENTRY main {", "  p0 = f32[8,8]{1,0} parameter(0)"]
  for i in range(1, n):
    prev = f"i{i - 1}" if i > 1 else "p0"
    op = dot.format(prev) if i % 10 == 0 else f"add({prev}, p0)"
    lines.append(f"  {'ROOT ' * (i == n - 1)}i{i} = f32[8,8]{{1,0}} {op}")
  return "\n".join([*lines, "}", ""])


def modules() -> None:
  """Prints the module-file read ratio (`... bench modules`)."""
  small, big = _numbers(_MODULE_FILES)
  _report(
    "module file 10,000 / 1,000 instructions (HLO text read)",
    big / small,
    "10,000 in <= 10 s",
    big <= 10,
    f"{big:.2f} s / {small:.2f} s",
  )


def main(repeats: int = 3) -> None:
  """Prints every ratio above with its goal."""
  plain, swept = _pair(_PLAIN, _sweep(), repeats)
  _report(
    "sweep / plain loop (27 configs, cpu)",
    swept.wall / plain.wall,
    "<= 1.2x",
    swept.wall <= 1.2 * plain.wall,
    _seconds(swept, plain),
  )
  made(repeats)
  ratio = min(_time(_EMULATOR).wall for _ in range(repeats))
  _report(
    "emulator / CPU run (seed_mlp, n=4096, TF32 sites)",
    ratio,
    "<= 1.5x",
    ratio <= 1.5,
    "best of 20 calls each",
  )
  with tempfile.TemporaryDirectory(prefix="hloprobe-bench-") as folder:
    run = ("sweep", "--targets=cpu,a100,t4", f"--cache_dir={folder}")
    cold = _cli(*run)
    warm = min((_cli(*run) for _ in range(2)), key=lambda c: c.wall)
  _report(
    "warm / cold rerun (make run: 81 configs, whole processes)",
    warm.wall / cold.wall,
    "<= 0.2x",
    warm.wall <= 0.2 * cold.wall,
    _seconds(warm, cold),
  )
  _per_config(repeats)
  modules()
  jobs()
  shards()


def made(repeats: int = 1) -> None:
  """Prints the a100 sweep (what XLA made included) against the plain
  compile loop, and a cached rerun of that sweep against its cold run
  (also alone: `python -m hloprobe.tools.bench made`)."""
  plain, swept = _pair(_PLAIN_A100, _sweep("a100"), repeats)
  _report(
    "sweep / plain compile loop (27 configs, a100, what XLA made on)",
    swept.wall / plain.wall,
    "<= 1.5x",
    swept.wall <= 1.5 * plain.wall,
    _seconds(swept, plain),
  )
  with tempfile.TemporaryDirectory(prefix="hloprobe-bench-") as folder:
    run = ("sweep", "--targets=a100", f"--cache_dir={folder}")
    cold = _cli(*run)
    warm = _cli(*run)
  _report(
    "cached / cold rerun (27 configs, a100, whole processes)",
    warm.wall / cold.wall,
    "<= 0.2x",
    warm.wall <= 0.2 * cold.wall,
    _seconds(warm, cold),
  )


def jobs() -> None:
  """Prints the --jobs=1 / --jobs=2 ratio with its goal (also alone:
  `python -m hloprobe.tools.bench jobs`), and how many cores --jobs=1
  already kept busy: with c of them busy on N cores, more workers can
  speed the run up by at most N / c."""
  run = (
    "sweep",
    "--targets=a100",
    "--nocache",
    "--experiment=a:--xla_gpu_enable_triton_gemm=false",
    "--experiment=b:--xla_gpu_autotune_level=0",
  )
  serial = _cli(*run, "--jobs=1")
  parallel = _cli(*run, "--jobs=2")
  cores = usable_cores()
  _report(
    "two experiments --jobs=1 / --jobs=2 (81 configs, a100, whole processes)",
    serial.wall / parallel.wall,
    ">= 1.6x",
    serial.wall >= 1.6 * parallel.wall,
    f"{_seconds(serial, parallel)}; at most "
    f"{cores * serial.wall / serial.cpu:.2f}x left above --jobs=1",
  )


if __name__ == "__main__":
  {"jobs": jobs, "made": made, "modules": modules, "shards": shards}.get(
    " ".join(sys.argv[1:]), main
  )()
