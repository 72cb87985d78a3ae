"""`make bench`: hloprobe's speed as ratios to plain JAX, never as seconds.

Ratio printed:
  sweep / plain loop   wall time of `run_sweep` over the default 27 configs
                       (seed_mlp, n = 1..9, three precisions, cpu) against
                       the reporter's loop: jit(vmap(forward)) run once per
                       config under `jax.default_matmul_precision`. Goal:
                       at most 1.5.

Each side runs in a fresh subprocess (so neither reuses the other's traces
or compiles), timed from after imports; the best of `--repeats` is kept.
"""

from __future__ import annotations

import subprocess
import sys

__all__ = ["main"]

_PLAIN = """
import time
import jax
from hloprobe import cases, precisions
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
from hloprobe import precisions, sweep
start = time.perf_counter()
spec = sweep.SweepSpec(("seed_mlp",), tuple(range(1, 10)),
                       precisions.DEFAULT_PRECISIONS, ("cpu",))
results = sweep.run_sweep(spec)
assert all(r.ok for r in results), [r.error for r in results if not r.ok]
print(time.perf_counter() - start)
"""


def _time(script: str) -> float:
  """Runs a timing script in a fresh interpreter; returns its seconds."""
  proc = subprocess.run(
    [sys.executable, "-c", script], capture_output=True, text=True, check=True
  )
  return float(proc.stdout.strip().splitlines()[-1])


def main(repeats: int = 3) -> None:
  """Prints the ratio hloprobe sweep / plain loop (best of `repeats`)."""
  plain = min(_time(_PLAIN) for _ in range(repeats))
  swept = min(_time(_SWEEP) for _ in range(repeats))
  print(f"sweep / plain loop (27 configs, cpu): {swept / plain:.2f}x  (goal <= 1.5x)")


if __name__ == "__main__":
  main()
