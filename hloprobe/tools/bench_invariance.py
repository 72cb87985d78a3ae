"""`make bench`'s invariance line (issue 38 item 6): the bitwise answer
for a GPT-2-small-shaped block over n = 1-64 on the compile-only a100, as
a ratio to a plain compile loop of the same configs.

  python -m hloprobe.tools.bench_invariance

Runs, in fresh processes, back to back:

  plain loop   what a user would write instead: for each batch size n in
               1, 2, 4, 8, 16, 32, 64, `jax.jit(case.fn)` on the rows
               under `jax.default_matmul_precision("float32")`, lowered
               for and compiled on hloprobe's compile-only a100 (no GPU),
               as hloprobe compiles for it.
  answer       `hloprobe explain --only=invariance --notry_fixes` of the
               same configs, cold (--nocache): the bitwise answer alone
               (no accuracy numerics: no float64 reference, prediction
               or pass dumps), by kernel identity (every kernel's PTX
               read) and the kernel model's bits where it is bit-exact.
  alone        explain's sweep (the same plan: the bits only, no cache)
               in one child, then `invariance.batch_invariance` alone on
               its pool, each timed: the answer's own seconds, measured
               rather than taken as the difference of two whole runs (the
               load moved those by more than the answer takes).

and prints one line: answer / plain (goal <= 2x, the issue's), the
answer's own share (its seconds / plain), each side's seconds, the peak
resident memory of the answer run's largest process, and the load average
before and after (the machine may be shared: the runs are back to back).

Measured (CONTRIBUTING.md, "Batch invariance"): 8.55x, share 2.75x
(answer - off, load 3) before each config's kernels were read on the
lane that compiled it; then 13.8x at load 6-12, where the answer's own
6.8 s (cProfile) was 0.15x and explain's accuracy sweep all the rest;
5.67x with the accuracy sweep (its answer 0.4 s); the bits only since.

The case is `gpt2_block` below: `bench_models`' one-layer GPT-2-small
block (d_model 768, 12 heads of 64, MLP 3072, seq 128) with 64 rows.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import sys
import tempfile

from hloprobe.compile import Case
from hloprobe.tools import bench_models

# The plain loop and explain run as bench_scale runs its lines: in a child
# that reports wall seconds and the largest process (`_wrapped`).
from hloprobe.tools.bench_scale import PLAIN_SETUP, _load, _wrapped, warm_up

__all__ = ["gpt2_block", "main", "measure"]

_CASE = "hloprobe.tools.bench_invariance:gpt2_block"
_SIZES = (1, 2, 4, 8, 16, 32, 64)
_GOAL = 2.0


def gpt2_block() -> Case:
  """One GPT-2-small-shaped block (`bench_models.gpt2_1`'s program) with
  64 rows, x f32[64, 128, 768], so n = 1-64 can be swept."""
  return Case(
    "gpt2_block",
    "GPT-2-small-shaped block (d 768, 12 heads, MLP 3072, seq 128, "
    "causal), 64 rows: make bench's invariance line",
    bench_models._gpt2(1),
    functools.partial(bench_models._gpt2_inputs, 1, rows=64),
    in_axes=(0, None),
    rows_independent=True,
  )


_PLAIN = (
  PLAIN_SETUP
  + """
for n in sizes:
  args = case.inputs_for(full, n)
  with jax.default_matmul_precision("float32"):
    lowered = jax.jit(case.fn).trace(
      *jax.tree_util.tree_map(spec, args)
    ).lower(lowering_platforms=("cuda",))
  lowered.compile()
"""
)


# The sweep explain runs, then the answer alone on its pool, each timed:
# the answer's own seconds measured, not taken as the difference of two
# whole runs (which the load moves by more than the answer takes).
_ALONE = """
import json, sys, time
from hloprobe import api, engine, invariance
from hloprobe.commands import common
plan = api.plan([sys.argv[1]], batch_sizes=sys.argv[2], precisions=["float32"],
                targets=["a100"], cache=False)
plan = engine.plan_sweep(plan, numerics=False)  # explain --only=invariance's
common.start_jax(plan.targets)
with engine.worker_pool(plan) as pool:
  start = time.perf_counter()
  results = api.run(plan, pool=pool)
  swept = time.perf_counter()
  found, _ = invariance.batch_invariance(plan, results, pool, None)
  done = time.perf_counter()
print(json.dumps({"sweep_s": swept - start, "answer_s": done - swept,
                  "groups": len(found)}))
"""


def _alone() -> dict:
  """The explain sweep and the answer alone on its pool (`_ALONE`), in a
  child under `_wrapped`: {"wall", "peak_kb", "sweep_s", "answer_s"}."""
  sizes = ",".join(map(str, _SIZES))
  with tempfile.TemporaryDirectory(prefix="bench-invariance-") as folder:
    path = os.path.join(folder, "alone.json")
    argv = [sys.executable, "-c", _ALONE, _CASE, sizes]
    command = " ".join(shlex.quote(a) for a in argv) + " > " + path
    found = _wrapped(["sh", "-c", command])
    with open(path, encoding="utf-8") as f:
      found.update(json.loads(f.read().strip().splitlines()[-1]))
  return found


def _explain(invariance: str) -> dict:
  """One explain run under `_wrapped` (wall seconds, peak), its JSON
  output read back from a file (the wrapper keeps none of it: the shell
  that redirects it is one more child waited for)."""
  argv = [
    sys.executable,
    "-m",
    "hloprobe",
    "explain",
    f"--case={_CASE}",
    "--targets=a100",
    f"--batch_sizes={','.join(map(str, _SIZES))}",
    "--precisions=float32",
    "--notry_fixes",
    f"--invariance={invariance}",
    "--only=invariance",
    "--nocache",
    "--format=json",
  ]
  with tempfile.TemporaryDirectory(prefix="bench-invariance-") as folder:
    path = os.path.join(folder, "explain.json")
    command = " ".join(shlex.quote(a) for a in argv) + " > " + path
    found = _wrapped(["sh", "-c", command])
    with open(path, encoding="utf-8") as f:
      found["out"] = f.read()
  return found


def _answer_words(out: str) -> str:
  """The answer's groups from explain's JSON: "invariant False, 3
  classes" or why not read."""
  try:
    doc = json.loads(out)
  except ValueError:
    return "answer not read (explain's JSON cut or absent)"
  found = (doc.get("answer") or {}).get("invariance") or {}
  groups = found.get("groups") or []
  if not groups:
    return "no invariance group in explain's JSON"
  g = groups[0]
  classes = len(g["rows"][0]["classes"]) if g.get("rows") else 0
  return f"invariant {g.get('invariant')}, {classes} classes ({g['basis']})"


def measure() -> dict:
  """The line's three runs, back to back.

  Returns:
    {"plain_s", "answer_s" (the whole explain), "ratio" (answer_s /
    plain_s), "sweep_s" and "own_s" (explain's sweep, then the answer
    alone on its pool: `_ALONE`), "share" (own_s / plain_s), "peak_mb"
    (the explain run's largest process), "answer" (its groups in
    words), "load_before", "load_after"}.
  """
  warm_up()  # a cold page cache slows the plain loop, which runs first
  before = _load()
  sizes = ",".join(map(str, _SIZES))
  plain = _wrapped([sys.executable, "-c", _PLAIN, _CASE, sizes])
  answer = _explain("answer")
  alone = _alone()
  return {
    "plain_s": plain["wall"],
    "answer_s": answer["wall"],
    "ratio": answer["wall"] / plain["wall"],
    "sweep_s": alone["sweep_s"],
    "own_s": alone["answer_s"],
    "share": alone["answer_s"] / plain["wall"],
    "peak_mb": answer["peak_kb"] / 1024,
    "answer": _answer_words(answer["out"]),
    "load_before": before,
    "load_after": _load(),
  }


def main() -> None:
  """Prints the bench line: the measured ratio against its goal."""
  f = measure()
  ok = "ok" if f["ratio"] <= _GOAL else "MISSED"
  print(
    f"invariance explain --only=invariance (a100 compile-only, gpt2 block, "
    f"n = 1-64, float32) / plain compile loop: {f['ratio']:.2f}x (goal "
    f"<= {_GOAL:g}x: {ok}); the answer's own share {f['share']:.2f}x "
    f"({f['own_s']:.1f} s after a {f['sweep_s']:.1f} s sweep); "
    f"{f['answer_s']:.1f} s against {f['plain_s']:.1f} s; peak "
    f"{f['peak_mb']:.0f} MB; {f['answer']}; load {f['load_before']} -> "
    f"{f['load_after']}",
    flush=True,
  )


if __name__ == "__main__":
  main()
