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
                            them for it (`_PLAIN_A100`). Goal <= 1.2.
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
                            is skipped: seed_mlp has 4096 rows.
  --jobs=1 / --jobs=2       `hloprobe sweep --targets=a100` with two
                            XLA_FLAGS experiments, whole processes, no
                            cache: the speed-up of two worker processes
                            over one (three flag sets: one lane each, the
                            third after the first to finish). Goal >= 1.6
                            on 2 cores. Alone: `... bench jobs`.

On a shared machine the absolute seconds move with the load; the ratios
pair runs made back to back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

__all__ = ["main"]

_PLAIN = """
import time
import jax
from hloprobe.compile import cases
from hloprobe.ir import precisions
start = time.perf_counter()
case = cases.get_case("seed_mlp")
xy, params = case.make_inputs()
fn = jax.jit(lambda xs, p: case.fn(xs, p))
for n in range(1, 10):
  for precision in precisions.DEFAULT_PRECISIONS:
    with jax.default_matmul_precision(precision):
      float(fn(xy[:n], params).ravel()[0])
print(time.perf_counter() - start)
"""

_PLAIN_A100 = """
import time
import jax
from jax.experimental import topologies
from hloprobe.compile import cases, targets
from hloprobe.ir import precisions
start = time.perf_counter()
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
print(time.perf_counter() - start)
"""

_SWEEP = """
import time
from hloprobe import sweep
from hloprobe.ir import precisions
start = time.perf_counter()
spec = sweep.SweepSpec(("seed_mlp",), {sizes}, {precisions}, ("{target}",))
results = sweep.run_sweep(spec)
assert all(r.ok for r in results), [r.failure for r in results if not r.ok]
print(time.perf_counter() - start)
"""

_EMULATOR = """
import time
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

# Compile-only GPU targets without a CUDA driver (as the command line does).
_ENV = {"JAX_PLATFORMS": "cpu", "JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1"}


def _time(script: str) -> float:
  """Runs a timing script in a fresh interpreter; returns its last number."""
  proc = subprocess.run(
    [sys.executable, "-c", script],
    capture_output=True,
    text=True,
    check=True,
    env=dict(os.environ, **_ENV),
  )
  return float(proc.stdout.strip().splitlines()[-1])


def _sweep(target="cpu", sizes=tuple(range(1, 10)), precisions=None) -> str:
  return _SWEEP.format(
    target=target,
    sizes=repr(tuple(sizes)),
    precisions=repr(precisions)
    if precisions
    else "precisions.DEFAULT_PRECISIONS",
  )


def _cli_seconds(*args: str) -> float:
  """Wall seconds of one whole `hloprobe` process."""
  start = time.perf_counter()
  subprocess.run(
    [sys.executable, "-m", "hloprobe", *args],
    capture_output=True,
    check=True,
    env=dict(os.environ, **_ENV),
  )
  return time.perf_counter() - start


def _report(what: str, ratio: float, goal: str, ok: bool, detail: str) -> None:
  verdict = "met" if ok else "NOT met"
  print(f"{what}: {ratio:.2f}x  (goal {goal}: {verdict}; {detail})", flush=True)


def _pair(plain: str, swept: str, repeats: int) -> tuple[float, float]:
  """Best-of-`repeats` seconds of two scripts, run alternately."""
  times = [(_time(plain), _time(swept)) for _ in range(repeats)]
  return min(t[0] for t in times), min(t[1] for t in times)


def main(repeats: int = 3) -> None:
  """Prints every ratio above with its goal."""
  plain, swept = _pair(_PLAIN, _sweep(), repeats)
  _report(
    "sweep / plain loop (27 configs, cpu)",
    swept / plain,
    "<= 1.2x",
    swept <= 1.2 * plain,
    f"{swept:.1f} s / {plain:.1f} s",
  )
  plain, swept = _pair(_PLAIN_A100, _sweep("a100"), repeats)
  _report(
    "sweep / plain compile loop (27 configs, a100)",
    swept / plain,
    "<= 1.2x",
    swept <= 1.2 * plain,
    f"{swept:.1f} s / {plain:.1f} s",
  )
  ratio = min(_time(_EMULATOR) for _ in range(repeats))
  _report(
    "emulator / CPU run (seed_mlp, n=4096, TF32 sites)",
    ratio,
    "<= 1.5x",
    ratio <= 1.5,
    "best of 20 calls each",
  )
  with tempfile.TemporaryDirectory(prefix="hloprobe-bench-") as folder:
    run = ("sweep", "--targets=cpu,a100,t4", f"--cache_dir={folder}")
    cold = _cli_seconds(*run)
    warm = min(_cli_seconds(*run) for _ in range(2))
  _report(
    "warm / cold rerun (make run: 81 configs, whole processes)",
    warm / cold,
    "<= 0.2x",
    warm <= 0.2 * cold,
    f"{warm:.1f} s / {cold:.1f} s",
  )
  one = _time(_sweep(sizes=(64,), precisions=("float32",)))
  three = _time(_sweep(sizes=(64,)))
  _report(
    "3 configs / 1 config (cpu, n=64)",
    three / one,
    "<= 3x (linear)",
    three <= 3 * one,
    f"{three:.1f} s / {one:.1f} s",
  )
  big = _time(_sweep(sizes=(4096,)))
  _report(
    "cost per config n=4096 / n=64 (cpu, 3 configs each)",
    big / three,
    "<= 2x",
    big <= 2 * three,
    f"{big / 3:.2f} s / {three / 3:.2f} s per config",
  )
  print("n=65536: skipped (seed_mlp has 4096 rows)")
  jobs()


def jobs() -> None:
  """Prints the --jobs=1 / --jobs=2 ratio with its goal (also alone:
  `python -m hloprobe.tools.bench jobs`)."""
  run = (
    "sweep",
    "--targets=a100",
    "--batch_sizes=1,2,3",
    "--nocache",
    "--experiment=a:--xla_gpu_enable_triton_gemm=false",
    "--experiment=b:--xla_gpu_autotune_level=0",
  )
  serial = _cli_seconds(*run, "--jobs=1")
  parallel = _cli_seconds(*run, "--jobs=2")
  _report(
    "two experiments --jobs=1 / --jobs=2 (a100, whole processes)",
    serial / parallel,
    ">= 1.6x",
    serial >= 1.6 * parallel,
    f"{serial:.1f} s / {parallel:.1f} s on {os.cpu_count()} cores",
  )


if __name__ == "__main__":
  jobs() if sys.argv[1:] == ["jobs"] else main()
