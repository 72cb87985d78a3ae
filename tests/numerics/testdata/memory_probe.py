"""How much a case's judging grows the peak resident memory (memory_test).

`python memory_probe.py WIDTH PRECISIONS`: judges a case whose output row
is 64 x WIDTH float32 at n = 1 and 2 (`measure.CaseSetup`, as a sweep's
case worker does: float64 references, emulations, noise floor, made), once
16 wide to warm jax and the allocator, then WIDTH wide after resetting the
peak (/proc/self/clear_refs 5); prints {"grown": peak less the resident
bytes before, "outputs": the outputs' bytes}.
"""

import json
import sys

import numpy as np

import hloprobe
from hloprobe.compile import get_target
from hloprobe.engine import compiled, measure, plan
from hloprobe.ir import as_precision
from hloprobe.records import Config
from hloprobe.runtime import Stopwatch


def _status():
  """VmRSS and VmHWM of this process, bytes."""
  with open("/proc/self/status") as f:
    d = dict(l.split(":", 1) for l in f)
  return {k: int(d[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM")}


def _case(width):
  def fn(x, w, v):
    return (x @ w)[:, :, None] * v[None, None, :]

  def inputs():
    g = np.random.default_rng(0)
    return (
      g.standard_normal((2, 64)).astype(np.float32),
      g.standard_normal((64, 64)).astype(np.float32),
      g.standard_normal((width,)).astype(np.float32),
    )

  return hloprobe.Case(
    name=f"w{width}",
    description="outputs 64 x width wide a row",
    fn=fn,
    make_inputs=inputs,
    in_axes=(0, None, None),
    output_axis=0,
  )


def judge(width, precisions):
  """Every config of the case, finished as a sweep finishes it."""
  case = _case(width)
  setup = measure.CaseSetup(plan.SweptCase(case, case.name, False), (1, 2))
  watch = Stopwatch()
  full = setup.inputs(watch)
  for p in precisions:
    for n in (1, 2):
      config = Config(case.name, get_target("cpu"), n, as_precision(p))
      work = compiled.compile_and_run_case(case, full, config, False)
      r = setup.finish(work, watch)
      assert r.ok, r.failure
      del work, r


def main(width: int, precisions: list[str]) -> None:
  judge(16, precisions)  # warm: jax, jit caches, the allocator
  with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak (VmHWM) starts again from here
  before = _status()["VmRSS"]
  judge(width, precisions)
  grown = _status()["VmHWM"] - before
  print(json.dumps({"grown": grown, "outputs": 3 * 64 * width * 4}))


if __name__ == "__main__":
  main(int(sys.argv[1]), sys.argv[2].split(","))
