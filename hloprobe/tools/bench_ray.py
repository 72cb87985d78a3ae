"""`make bench`'s Ray line: `--executor=ray` against local `--jobs` on one
machine (issue 29).

  ray / local --jobs   `hloprobe sweep` of make run's targets (cpu,a100,t4;
                       81 configs) with --output_dir, no cache, whole
                       processes, the same --jobs (this machine's usable
                       cores): once with local worker processes, once
                       with --executor=ray on a Ray cluster of this
                       machine (127.0.0.1) started before and kept by a
                       process of its own, as a cluster is. The ratio is
                       of wall seconds: Ray's overhead per config (a
                       task, an actor's hop, its start) over the same
                       work. Goal <= 1.1. The CPU seconds of each side
                       are printed too, the Ray side's with what the
                       cluster's processes (raylet, actors, their
                       workers) spent meanwhile, read from /proc. The
                       two results.json must be equal but for "created"
                       and timings, or the line says they are not. The
                       cluster's own start (about 3 CPU s, 10 s on a busy
                       2-core machine) is a cluster's, not a config's:
                       it is left out.

Alone: `python -m hloprobe.tools.bench_ray`. Needs the extra `ray`.

Private in intent: `python -m hloprobe.tools.bench_ray`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from hloprobe.runtime import usable_cores
from hloprobe.tools import bench
from hloprobe.tools.bench_shards import comparable

__all__ = ["ray_overhead"]

_RUN = ("sweep", "--targets=cpu,a100,t4", "--nocache")
_AUTH = "RAY_AUTH_MODE"
# A process that holds a local cluster: prints its GCS address, then keeps
# it until its stdin closes (ray.shutdown ends the cluster's processes).
_HOLDER = """
import sys, ray
info = ray.init(num_cpus=1, include_dashboard=False,
                _node_ip_address="127.0.0.1", log_to_driver=False)
print(info.address_info["gcs_address"], flush=True)
sys.stdin.read()
ray.shutdown()
"""


def _tree_cpu(root: int) -> float:
  """CPU seconds (user + system, with the children each waited for) of
  process `root` and every process below it now."""
  tick, stats = os.sysconf("SC_CLK_TCK"), {}
  for name in filter(str.isdigit, os.listdir("/proc")):
    try:
      with open(f"/proc/{name}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
      continue
    cpu = sum(int(v) for v in fields[11:15]) / tick
    stats[int(name)] = (int(fields[1]), cpu)
  mine, grew = {root}, True
  while grew:
    below = {p for p, (parent, _) in stats.items() if parent in mine}
    grew = not below <= mine
    mine |= below
  return sum(stats[p][1] for p in mine if p in stats)


def ray_overhead() -> None:
  """Prints the ray / local wall ratio with its goal, both sides' CPU
  seconds, and whether their results.json are equal."""
  jobs = f"--jobs={usable_cores()}"
  holder = subprocess.Popen(
    [sys.executable, "-c", _HOLDER],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    text=True,
  )
  # Ray's token authentication (on by default for a local cluster, its
  # token in ~/.ray): the sweep joining it says so, as the README tells.
  saved = os.environ.get(_AUTH)
  os.environ[_AUTH] = "token"
  try:
    address = holder.stdout.readline().strip()
    with tempfile.TemporaryDirectory(prefix="hloprobe-bench-") as folder:
      out = lambda name: os.path.join(folder, name)
      local = bench._cli(*_RUN, jobs, f"--output_dir={out('local')}")
      before = _tree_cpu(holder.pid)
      on_ray = bench._cli(
        *_RUN,
        jobs,
        "--executor=ray",
        f"--ray_address={address}",
        f"--output_dir={out('ray')}",
      )
      cluster = _tree_cpu(holder.pid) - before
      same = comparable(out("local/results.json")) == comparable(
        out("ray/results.json")
      )
  finally:
    if saved is None:
      os.environ.pop(_AUTH)
    else:
      os.environ[_AUTH] = saved
    holder.stdin.close()
    holder.wait(timeout=120)
  bench._report(
    f"--executor=ray / local {jobs} (81 configs, whole processes)",
    on_ray.wall / local.wall,
    "<= 1.1x, results.json identical",
    same and on_ray.wall <= 1.1 * local.wall,
    f"{on_ray.wall:.1f} s / {local.wall:.1f} s; CPU {on_ray.cpu:.1f} s + "
    f"the cluster's {cluster:.1f} s / {local.cpu:.1f} s; results.json "
    + ("identical" if same else "DIFFERS"),
  )


if __name__ == "__main__":
  ray_overhead()
