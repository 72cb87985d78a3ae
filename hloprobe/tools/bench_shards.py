"""`make bench`'s shard line: 2 shards merged against the unsharded run.

  2 shards + merge / unsharded   `hloprobe sweep` of make run's targets
                                 (cpu,a100,t4; 81 configs) with
                                 --output_dir, no cache, whole processes:
                                 once unsharded, then as `--shard=0/2`,
                                 `--shard=1/2` and `hloprobe merge`, one
                                 after another. The ratio is of CPU seconds
                                 (every process's, workers included): what
                                 sharding costs in all, each shard's own
                                 start (jax imported, inputs, references
                                 and predictions made again) and the
                                 merge. Goal <= 1.1 (issue 29). The merged
                                 results.json must equal the unsharded one
                                 but for "created" and timings, or the line
                                 says it does not. Alone: `python -m
                                 hloprobe.tools.bench shards`.

Private in intent: `python -m hloprobe.tools.bench`.
"""

from __future__ import annotations

import json
import os
import tempfile

from hloprobe.tools.bench_clock import cli, report

__all__ = ["comparable", "shards"]

_RUN = ("sweep", "--targets=cpu,a100,t4", "--nocache")


def comparable(path: str) -> dict:
  """results.json without what differs between two runs of one sweep:
  "created" and each config's "timing_s"."""
  with open(path, encoding="utf-8") as f:
    doc = json.load(f)
  doc.pop("created")
  for c in doc["configs"]:
    c.pop("timing_s")
  return doc


def shards() -> None:
  """Prints the (2 shards + merge) / unsharded CPU ratio with its goal, and
  whether the merged results.json is the unsharded one."""
  with tempfile.TemporaryDirectory(prefix="hloprobe-bench-") as folder:
    out = lambda name: os.path.join(folder, name)
    whole = cli(*_RUN, f"--output_dir={out('whole')}")
    parts = [
      cli(*_RUN, f"--shard={i}/2", f"--output_dir={out(f's{i}')}")
      for i in range(2)
    ]
    merge = cli("merge", out("s0"), out("s1"), f"--output_dir={out('m')}")
    same = comparable(out("whole/results.json")) == comparable(
      out("m/results.json")
    )
  cpu = sum(c.cpu for c in parts) + merge.cpu
  wall = sum(c.wall for c in parts) + merge.wall
  report(
    "2 shards + merge / unsharded (81 configs, CPU seconds)",
    cpu / whole.cpu,
    "<= 1.1x, merged output identical",
    same and cpu <= 1.1 * whole.cpu,
    f"{cpu:.1f} / {whole.cpu:.1f} CPU s; shards {parts[0].wall:.1f} s + "
    f"{parts[1].wall:.1f} s, merge {merge.wall:.1f} s, one after another "
    f"{wall:.1f} s against {whole.wall:.1f} s; merged results.json "
    + ("identical" if same else "DIFFERS"),
  )
