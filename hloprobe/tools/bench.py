"""`make bench`: hloprobe's speed as ratios to plain JAX, never as seconds.

Ratio printed:
  sweep / plain loop   wall time of `run_sweep` over the default 27 configs
                       (seed_mlp, n = 1..9, three precisions, cpu) against
                       the reporter's loop: jit(vmap(forward)) run once per
                       config under `jax.default_matmul_precision`. Goal:
                       at most 1.5.

  emulator / CPU run  run time of the emulator (every seed dot site at
                       TF32_TF32_F32, jit-compiled, compile excluded) against
                       one run of the compiled case on the CPU, n = 4096,
                       best of 20 calls each. Goal: at most 3.

Each side of the first ratio runs in a fresh subprocess (so neither reuses the other's traces
or compiles), timed from after imports; the best of `--repeats` is kept.
"""

from __future__ import annotations

import subprocess
import sys

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

_SWEEP = """
import time
from hloprobe import sweep
from hloprobe.ir import precisions
start = time.perf_counter()
spec = sweep.SweepSpec(("seed_mlp",), tuple(range(1, 10)),
                       precisions.DEFAULT_PRECISIONS, ("cpu",))
results = sweep.run_sweep(spec)
assert all(r.ok for r in results), [r.error for r in results if not r.ok]
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


def _time(script: str) -> float:
  """Runs a timing script in a fresh interpreter; returns its seconds."""
  proc = subprocess.run(
    [sys.executable, "-c", script], capture_output=True, text=True, check=True
  )
  return float(proc.stdout.strip().splitlines()[-1])


def main(repeats: int = 3) -> None:
  """Prints the ratios above (each the best of `repeats`)."""
  plain = min(_time(_PLAIN) for _ in range(repeats))
  swept = min(_time(_SWEEP) for _ in range(repeats))
  print(
    f"sweep / plain loop (27 configs, cpu): {swept / plain:.2f}x  (goal <= 1.5x)"
  )
  ratio = min(_time(_EMULATOR) for _ in range(repeats))
  print(
    f"emulator / CPU run (seed_mlp, n=4096, TF32 sites): {ratio:.2f}x  (goal <= 3x)"
  )


if __name__ == "__main__":
  main()
