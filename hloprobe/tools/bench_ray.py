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
                       workers) spent meanwhile, sampled from /proc. The
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
import threading

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


def _tree(root: int, known: set[int]) -> dict[int, float]:
  """pid -> CPU seconds (user + system) of each process now below `root`
  (or in `known`, which grows by the processes found)."""
  tick, stats = os.sysconf("SC_CLK_TCK"), {}
  for name in filter(str.isdigit, os.listdir("/proc")):
    try:
      with open(f"/proc/{name}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
      continue
    stats[int(name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])))
  known.add(root)
  grew = True
  while grew:
    below = {p for p, (parent, _) in stats.items() if parent in known}
    grew = not below <= known
    known |= below
  return {p: stats[p][1] / tick for p in known if p in stats}


class _Meter:
  """The CPU seconds a process tree spends while the block runs, sampled
  every 0.2 s from /proc (each process's last sample: a process that ends
  between two loses at most 0.2 s)."""

  def __init__(self, root: int):
    self._root, self._known, self._stop = root, set(), threading.Event()
    self._start = _tree(root, self._known)
    self._last = dict(self._start)
    self.cpu = 0.0

  def _run(self) -> None:
    while not self._stop.wait(0.2):
      self._last.update(_tree(self._root, self._known))

  def __enter__(self) -> _Meter:
    self._thread = threading.Thread(target=self._run, daemon=True)
    self._thread.start()
    return self

  def __exit__(self, *exc) -> None:
    self._stop.set()
    self._thread.join()
    self._last.update(_tree(self._root, self._known))
    self.cpu = sum(self._last.values()) - sum(self._start.values())


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
      with _Meter(holder.pid) as cluster:
        on_ray = bench._cli(
          *_RUN,
          jobs,
          "--executor=ray",
          f"--ray_address={address}",
          f"--output_dir={out('ray')}",
        )
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
    f"the cluster's {cluster.cpu:.1f} s = "
    f"{(on_ray.cpu + cluster.cpu) / local.cpu:.2f}x {local.cpu:.1f} s; "
    "results.json " + ("identical" if same else "DIFFERS"),
  )


if __name__ == "__main__":
  ray_overhead()
