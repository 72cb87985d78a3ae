"""The watchdog of a local Ray cluster: when the process that started the
cluster ends (however: SIGKILL included) or closes it, every process of
the cluster is killed.

Ray's own fate-sharing does not cover every process: Ray gives the GCS,
the raylet, the monitor and the log monitor `PR_SET_PDEATHSIG` of the
driver (`ray._private.services.start_ray_process`, `fate_share`), but the
raylet's children (the dashboard agent, the runtime-env agent) poll for
the raylet and outlived a SIGKILL of hloprobe by more than 10 s (Ray
2.60.0, 2026-12-05), and actors run in process groups of their own.

The cluster's processes are found by a mark in their environment: the
pool sets `MARK` (a name=value word unique to the cluster) in its
environment while `ray.init` starts the GCS and the raylet, and every
later process of the cluster (agents, workers, actors, the workers of
`process.Worker` that actors start) inherits it. Linux's
/proc/<pid>/environ is a process's environment as it was exec'd, readable
for the user's own processes; but a process that sets a long title
(setproctitle: Ray's dashboard and runtime-env agents) writes over it. So
the watchdog also records, every `_RECORD_S` while it waits, each
descendant of a marked process (the agents are the raylet's children)
with its start time: after the owner's death, the GCS and the raylet die
with it (`PR_SET_PDEATHSIG`) and their children are some other
process's, so they must be known before.

The watchdog is `python -c`, started by `Watchdog` in a session of its
own (a terminal's SIGINT does not reach it), with its stdin a pipe from
the owner. It waits until the pipe closes (`Watchdog.close`, or the
owner's death, which closes it) or the owner's pid ends
(`os.pidfd_open`, Linux 5.3+; else polled), then SIGKILLs every process
of the cluster (marked, recorded, or a descendant of either), again
until none is left (a process started meanwhile), and exits. It imports
nothing of hloprobe's but this module.

Private in intent: use the package, `hloprobe.runtime` (`RayPool` uses it).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
import uuid

__all__ = ["MARK_NAME", "Watchdog", "marked_processes"]

# The environment variable whose value marks one cluster's processes.
MARK_NAME = "HLOPROBE_RAY_CLUSTER"
# How often the watchdog records the cluster's processes while it waits.
_RECORD_S = 0.25
# How often the watchdog looks again for the cluster's processes after a
# kill round (one round is usually enough), and how many rounds at most.
_ROUND_S = 0.1
_ROUNDS = 100


def _table() -> dict[int, tuple[int, int]]:
  """pid -> (parent pid, start time in clock ticks) of every live process,
  from /proc/<pid>/stat."""
  table = {}
  for name in os.listdir("/proc"):
    if not name.isdigit():
      continue
    try:
      with open(f"/proc/{name}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
      continue  # ended meanwhile
    # After the name: state, ppid, ... starttime is the 20th (stat(5)).
    if fields[0] != b"Z":
      table[int(name)] = (int(fields[1]), int(fields[19]))
  return table


def _has_mark(pid: int, word: bytes) -> bool:
  try:
    with open(f"/proc/{pid}/environ", "rb") as f:
      return word in f.read().split(b"\0")
  except OSError:
    return False  # ended meanwhile, or not the user's


def marked_processes(mark: str) -> list[int]:
  """Pids of live processes (not this one) whose environment holds the
  word `mark` ("NAME=value"), read from /proc/<pid>/environ; processes of
  other users (unreadable), zombies, and processes that wrote over their
  environment (setproctitle with a long title: Ray's agents) are not
  listed."""
  word = mark.encode()
  return [p for p in _table() if p != os.getpid() and _has_mark(p, word)]


class _Cluster:
  """The processes of one cluster seen so far: the marked ones and their
  descendants, each with its start time (a pid used again by another
  process is not taken for it)."""

  def __init__(self, mark: str):
    self._word = mark.encode()
    self._marked: dict[tuple[int, int], bool] = {}  # (pid, start) -> mark
    self.seen: dict[int, int] = {}  # pid -> start time

  def record(self) -> dict[int, tuple[int, int]]:
    """Adds the cluster's live processes to `seen`; returns the table."""
    table = _table()
    me = os.getpid()
    roots = set()
    for pid, (_, start) in table.items():
      key = (pid, start)
      if key not in self._marked:
        self._marked[key] = pid != me and _has_mark(pid, self._word)
      if self._marked[key] or self.seen.get(pid) == start:
        roots.add(pid)
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
      children.setdefault(parent, []).append(pid)
    todo = list(roots)
    while todo:
      pid = todo.pop()
      if pid == me:
        continue
      self.seen[pid] = table[pid][1]
      todo.extend(c for c in children.get(pid, ()) if c not in self.seen)
    return table

  def alive(self) -> list[int]:
    """The cluster's processes alive now (recorded first)."""
    table = self.record()
    return [
      p for p, start in self.seen.items() if table.get(p, (0, -1))[1] == start
    ]


def kill_cluster(cluster: _Cluster) -> None:
  """SIGKILLs the cluster's processes, round after round, until a round
  finds none (or after `_ROUNDS`)."""
  for _ in range(_ROUNDS):
    pids = cluster.alive()
    if not pids:
      return
    for pid in pids:
      with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    time.sleep(_ROUND_S)


def _wait_for(owner: int, cluster: _Cluster) -> None:
  """Returns once `owner` ended or stdin (a pipe from it) closed,
  recording the cluster's processes every `_RECORD_S` meanwhile."""
  fds = [sys.stdin.fileno()]
  with contextlib.suppress(AttributeError, OSError):  # else polled
    fds.append(os.pidfd_open(owner))
  poller = select.poll()
  for fd in fds:
    poller.register(fd, select.POLLIN | select.POLLHUP)
  while True:
    cluster.record()
    for fd, _ in poller.poll(_RECORD_S * 1000):
      if fd != fds[0] or not os.read(fd, 1):  # the owner ended, or EOF
        return
    if len(fds) == 1 and not _alive(owner):
      return


def _alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True


def main(argv: list[str]) -> None:
  """`python -c ... OWNER_PID MARK`: waits (`_wait_for`), then kills the
  marked processes."""
  owner, mark = int(argv[1]), argv[2]
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  cluster = _Cluster(mark)
  _wait_for(owner, cluster)
  kill_cluster(cluster)


class Watchdog:
  """A watchdog process for a cluster this process starts.

  Use: `dog = Watchdog()`; start the cluster inside `with dog.marking():`
  (the mark in this process's environment, so the cluster's processes
  inherit it); `dog.close()` once the cluster is shut down, which kills
  what is left of it.

  Attributes:
    mark: the environment word ("HLOPROBE_RAY_CLUSTER=<uuid>").
  """

  def __init__(self):
    self.mark = f"{MARK_NAME}={uuid.uuid4().hex}"
    env = {k: v for k, v in os.environ.items() if k != MARK_NAME}
    self._proc = subprocess.Popen(
      [
        sys.executable,
        "-c",
        f"import sys, {__name__} as m; m.main(sys.argv)",
        str(os.getpid()),
        self.mark,
      ],
      stdin=subprocess.PIPE,
      stdout=subprocess.DEVNULL,
      stderr=subprocess.DEVNULL,
      env=env,
      start_new_session=True,
    )

  @contextlib.contextmanager
  def marking(self):
    """This process's environment holds the mark inside the block."""
    before = os.environ.get(MARK_NAME)
    os.environ[MARK_NAME] = self.mark.split("=", 1)[1]
    try:
      yield
    finally:
      if before is None:
        os.environ.pop(MARK_NAME, None)
      else:
        os.environ[MARK_NAME] = before

  def close(self, wait_s: float = 10.0) -> None:
    """Tells the watchdog to kill what is left of the cluster now, and
    waits for it (up to `wait_s`)."""
    with contextlib.suppress(OSError):
      self._proc.stdin.close()
    try:
      self._proc.wait(wait_s)
    except subprocess.TimeoutExpired:
      self._proc.kill()
      self._proc.wait()
