"""`make bench`'s memory lines (issue 27 item 18): a sweep of large outputs.

  peak memory / outputs       `hloprobe sweep` of a case whose output is
                              64 MiB per batch row (cpu, n = 1 and 2,
                              float32: 192 MiB of outputs in all), in a
                              process of its own with --cache_dir: the
                              main process's peak resident memory
                              (`resource.getrusage(RUSAGE_SELF).ru_maxrss`,
                              read as the command ends), and its largest
                              worker's (RUSAGE_CHILDREN: where a user
                              case's references, emulations and made
                              runs are), each less the same sweep's of
                              the case with 64 bytes a row (what jax and
                              hloprobe take whatever the outputs), over
                              the outputs' bytes. Goal <= 4x: a sweep
                              keeps the errors it needs, not every
                              config's outputs.
  largest cache record        the largest `records/*/*.record` that sweep
                              wrote, over one row of outputs (64 MiB).
                              Goal <= 0.05x: a record holds errors and row
                              0's first values, not outputs.

Alone: `python -m hloprobe.tools.bench_memory`.

Private in intent: `python -m hloprobe.tools.bench_memory`.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile

__all__ = ["memory"]

_ROW_BYTES = 64 << 20  # one batch row of the case's output, float32
_OUTPUT_BYTES = 3 * _ROW_BYTES  # n = 1 and n = 2

_CASE = """\
import numpy as np

_WIDTH = {width}

import hloprobe


def _fn(x, w, v):
  y = x @ w  # [n, 64]: the dot site
  return y[:, :, None] * v[None, None, :]  # [n, 64, _WIDTH] float32


def _inputs():
  g = np.random.default_rng(0)
  return (
    g.standard_normal((2, 64)).astype(np.float32),
    g.standard_normal((64, 64)).astype(np.float32),
    g.standard_normal((_WIDTH,)).astype(np.float32),
  )


def make_case():
  return hloprobe.Case(
    name="big_outputs", description="64 MiB of outputs per batch row",
    fn=_fn, make_inputs=_inputs, in_axes=(0, None, None), output_axis=0,
  )
"""

# Runs the command line in this process and reports, last, its peak memory
# and its largest (ended) worker's.
_MEASURE = """\
import json, resource, runpy, sys
sys.argv = ["hloprobe", *sys.argv[1:]]
try:
  runpy.run_module("hloprobe", run_name="__main__")
except SystemExit:
  pass
finally:
  peaks = [
    resource.getrusage(who).ru_maxrss * 1024
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
  ]
  sys.stderr.write("\\nhloprobe-bench-peak " + json.dumps(peaks) + "\\n")
"""

_WIDE = 262144  # a row of 64 x 262144 float32: 64 MiB
_NARROW = 16  # 64 x 16 float32: the baseline


def _peak_and_record(folder: str, width: int) -> tuple[int, int, int, int]:
  """(main process's peak resident bytes, largest worker's, largest
  record's bytes, exit status) of the sweep of rows `width` wide."""
  folder = os.path.join(folder, str(width))
  os.makedirs(folder)
  with open(os.path.join(folder, "big_case.py"), "w") as f:
    f.write(_CASE.format(width=width))
  cache = os.path.join(folder, "cache")
  proc = subprocess.run(
    [
      sys.executable,
      "-c",
      _MEASURE,
      "sweep",
      "--case=big_case.py:make_case",
      "--targets=cpu",
      "--batch_sizes=1,2",
      "--precisions=float32",
      f"--cache_dir={cache}",
    ],
    cwd=folder,
    capture_output=True,
    text=True,
    check=False,
  )
  peaks = [
    json.loads(line.split(maxsplit=1)[1])
    for line in proc.stderr.splitlines()
    if line.startswith("hloprobe-bench-peak ")
  ]
  main, worker = peaks[0] if peaks else (0, 0)
  records = glob.glob(os.path.join(cache, "records", "*", "*.record"))
  largest = max((os.path.getsize(p) for p in records), default=0)
  return main, worker, largest, proc.returncode


def memory() -> None:
  """Prints the peak memory (main process and largest worker, less the
  narrow sweep's) and largest cache record of the large-output sweep
  against their goals."""
  from hloprobe.tools import bench

  with tempfile.TemporaryDirectory(prefix="hloprobe-bench-") as folder:
    main, worker, largest, status = _peak_and_record(folder, _WIDE)
    base_main, base_worker, _, base_status = _peak_and_record(folder, _NARROW)
  ran = "" if status == base_status == 0 else f"; the sweeps exited {status}"
  for what, peak, base in (
    ("main process", main, base_main),
    ("largest worker", worker, base_worker),
  ):
    grown = peak - base
    bench._report(
      f"sweep peak memory / outputs, {what} (64 MiB a row, cpu, n = 1, 2)",
      grown / _OUTPUT_BYTES,
      "<= 4x",
      status == 0 and grown <= 4 * _OUTPUT_BYTES,
      f"{peak / 2**20:.0f} MiB peak less {base / 2**20:.0f} MiB with "
      f"64-byte rows, for {_OUTPUT_BYTES / 2**20:.0f} MiB of outputs{ran}",
    )
  bench._report(
    "largest cache record / one output row (64 MiB)",
    largest / _ROW_BYTES,
    "<= 0.05x",
    status == 0 and largest <= 0.05 * _ROW_BYTES,
    f"{largest / 2**20:.1f} MiB",
  )


if __name__ == "__main__":
  memory()
