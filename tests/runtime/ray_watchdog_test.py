"""A local Ray cluster dies with hloprobe and listens on loopback only.

`WatchdogTest` (fast, no Ray): the watchdog kills a marked process and
its unmarked descendants (as Ray's agents are: their environment is
written over by their titles) when its owner is SIGKILLed, and when the
owner closes it.

`LocalClusterTest` (marker `slow`, `make test-slow`: two command-line
sweeps on a local Ray cluster, 15 to 25 s each to the first actor on 2
cores): while `sweep --executor=ray` runs, no listening socket of any
process of hloprobe's tree (Ray's GCS, raylet, agents, workers, actors,
hloprobe itself) is bound to anything but the loopback interface (read
from /proc/net/tcp{,6} and udp{,6} and each process's /proc/<pid>/fd);
after SIGKILL of hloprobe no process of that tree is alive 10 s later;
SIGTERM exits 143 with one line. The independent source is Linux's own
socket and process tables.

`RemoteWarningTest`: the warning for a cluster joined without a token or
TLS, from the environment Ray's client reads.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
import sys
import time

import pytest
import testutil
from absl.testing import absltest

from hloprobe.runtime import ray_pool, ray_watchdog

# The environment variable that marks a test's processes (and, inherited,
# every process they start) for `_marked`.
_TOKEN = "HLOPROBE_WATCHDOG_TEST"


def _stat(pid: int) -> tuple[int, int] | None:
  """(parent pid, start time) of a live, non-zombie process, or None."""
  try:
    with open(f"/proc/{pid}/stat", "rb") as f:
      fields = f.read().rsplit(b")", 1)[1].split()
  except OSError:
    return None
  return None if fields[0] == b"Z" else (int(fields[1]), int(fields[19]))


def _tree(root: int) -> dict[int, int]:
  """pid -> start time of `root` and its live descendants."""
  table = {}
  for name in filter(str.isdigit, os.listdir("/proc")):
    st = _stat(int(name))
    if st:
      table[int(name)] = st
  found, todo = {}, [root]
  while todo:
    pid = todo.pop()
    if pid in table and pid not in found:
      found[pid] = table[pid][1]
      todo.extend(p for p, (parent, _) in table.items() if parent == pid)
  return found


def _alive(seen: dict[int, int]) -> list[int]:
  """The processes of `seen` (pid -> start time) still alive."""
  return [p for p, start in seen.items() if (_stat(p) or (0, -1))[1] == start]


def _marked(token: str) -> list[int]:
  """Live processes whose environment holds `_TOKEN`=`token`."""
  word = f"{_TOKEN}={token}".encode()
  found = []
  for name in filter(str.isdigit, os.listdir("/proc")):
    try:
      with open(f"/proc/{name}/environ", "rb") as f:
        if word in f.read().split(b"\0") and _stat(int(name)):
          found.append(int(name))
    except OSError:
      continue
  return found


def _cmdline(pid: int) -> str:
  try:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
      return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
  except OSError:
    return "?"


def _listening() -> dict[int, tuple[str, str, int]]:
  """socket inode -> (table, address, port) of every listening TCP socket
  and every bound UDP socket, from /proc/net (state 0A: LISTEN; UDP 07:
  unconnected, as a bound server is; addresses are little-endian words)."""
  found = {}
  for table in ("tcp", "tcp6", "udp", "udp6"):
    try:
      with open(f"/proc/net/{table}") as f:
        rows = f.read().splitlines()[1:]
    except OSError:
      continue
    for row in rows:
      fields = row.split()
      local, state, inode = fields[1], fields[3], int(fields[9])
      if state != ("0A" if table.startswith("tcp") else "07"):
        continue
      hexaddr, hexport = local.split(":")
      raw = bytes.fromhex(hexaddr)
      raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
      found[inode] = (table, str(ipaddress.ip_address(raw)), int(hexport, 16))
  return found


def _sockets(pid: int) -> set[int]:
  """Inodes of the sockets process `pid` holds open."""
  inodes = set()
  try:
    fds = os.listdir(f"/proc/{pid}/fd")
  except OSError:
    return inodes
  for fd in fds:
    try:
      target = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
      continue
    if target.startswith("socket:["):
      inodes.add(int(target[8:-1]))
  return inodes


def _loopback(address: str) -> bool:
  """127.0.0.0/8, ::1, or an IPv4-mapped loopback (::ffff:127.x)."""
  ip = ipaddress.ip_address(address)
  if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
    ip = ip.ipv4_mapped
  return ip.is_loopback


def _python(code: str, token: str, **kwargs) -> subprocess.Popen:
  """`python -c code`, this checkout importable, marked with `token`."""
  env = dict(os.environ, **{_TOKEN: token})
  env["PYTHONPATH"] = os.pathsep.join(
    filter(None, [testutil.ROOT, env.get("PYTHONPATH")])
  )
  return subprocess.Popen([sys.executable, "-c", code], env=env, **kwargs)


def _wait(condition, timeout_s: float, step_s: float = 0.1) -> bool:
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    if condition():
      return True
    time.sleep(step_s)
  return condition()


# An owner: starts its watchdog, then (marked) a shell whose child runs
# with an empty environment (unmarked, as Ray's agents read), prints
# "ready" once the watchdog has recorded them, and waits (or closes the
# watchdog when told "close" on stdin).
_OWNER = """
import subprocess, sys, time
from hloprobe.runtime import ray_watchdog
dog = ray_watchdog.Watchdog()
with dog.marking():
  sh = subprocess.Popen(["sh", "-c", "env -i sleep 300 & sleep 300"])
time.sleep(4 * ray_watchdog._RECORD_S)
print("ready", sh.pid, flush=True)
if sys.stdin.readline().strip() == "close":
  dog.close()
  print("closed", flush=True)
time.sleep(300)
"""


@pytest.mark.compiles  # starts Python processes (an owner, its watchdog)
class WatchdogTest(absltest.TestCase):
  def _start_owner(self, token: str):
    owner = _python(
      _OWNER,
      token,
      stdin=subprocess.PIPE,
      stdout=subprocess.PIPE,
      text=True,
    )
    self.addCleanup(lambda: [os.kill(p, 9) for p in _marked(token)])
    self.addCleanup(owner.communicate)
    self.addCleanup(owner.kill)
    line = owner.stdout.readline().split()
    self.assertEqual(line[0], "ready")
    seen = _tree(owner.pid)
    # The owner, its watchdog, the shell, and its two sleeps.
    self.assertLen(seen, 5, {p: _cmdline(p) for p in seen})
    unmarked = [p for p in seen if p not in _marked(token)]
    self.assertLen(unmarked, 1)  # the `env -i` sleep
    self.assertIn("sleep", _cmdline(unmarked[0]))
    return owner, seen

  def test_owner_sigkill_kills_marked_processes_and_their_children(self):
    owner, seen = self._start_owner(f"kill{os.getpid()}")
    owner.kill()
    owner.communicate()
    self.assertTrue(
      _wait(lambda: not _alive(seen), 10.0),
      {p: _cmdline(p) for p in _alive(seen)},
    )

  def test_close_kills_what_is_left(self):
    owner, seen = self._start_owner(f"close{os.getpid()}")
    owner.stdin.write("close\n")
    owner.stdin.flush()
    self.assertEqual(owner.stdout.readline().strip(), "closed")
    self.assertEqual(_alive(seen), [owner.pid])  # only the owner is left
    owner.kill()
    owner.communicate()

  def test_marked_processes_reads_the_environment(self):
    self.assertEqual(ray_watchdog.marked_processes("NO_SUCH_MARK=1"), [])


class RemoteWarningTest(absltest.TestCase):
  def test_joined_without_token_or_tls_warns_in_one_line(self):
    line = ray_pool.unguarded_cluster_line("head:6379", {})
    self.assertNotIn("\n", line)
    self.assertRegex(
      line,
      r"^hloprobe: warning: the Ray cluster at head:6379 took this process "
      r"without a token or TLS: it has no authentication",
    )

  def test_token_or_tls_joins_quietly(self):
    for environ in (
      {"RAY_AUTH_MODE": "token"},
      {"RAY_USE_TLS": "1"},
      {"RAY_USE_TLS": "true", "RAY_AUTH_MODE": "disabled"},
    ):
      self.assertIsNone(ray_pool.unguarded_cluster_line("h:1", environ))
    self.assertIsNotNone(
      ray_pool.unguarded_cluster_line("h:1", {"RAY_AUTH_MODE": "disabled"})
    )


# A sweep long enough to be interrupted once the first actor runs: 72
# configs, compile-only GPU targets (each a Ray task) included.
_SWEEP = (
  "sweep",
  "--executor=ray",
  "--case=seed_mlp",
  "--targets=cpu,a100,t4",
  "--batch_sizes=1-8",
  "--nocache",
)


@pytest.mark.slow
@pytest.mark.compiles  # the command line on a local Ray cluster
class LocalClusterTest(absltest.TestCase):
  def _start_sweep(self, name: str):
    """hloprobe's sweep on its own local cluster, once an actor (`_Lane`)
    and the runtime-env agent run; returns the process and its tree."""
    token = f"{name}{os.getpid()}"
    out = self.create_tempdir().full_path
    env = dict(os.environ, **{_TOKEN: token})
    env["PYTHONPATH"] = os.pathsep.join(
      filter(None, [testutil.ROOT, env.get("PYTHONPATH")])
    )
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.Popen(
      [sys.executable, "-m", "hloprobe", *_SWEEP, f"--output_dir={out}"],
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
    )
    self.addCleanup(lambda: [os.kill(p, 9) for p in _marked(token)])
    self.addCleanup(proc.communicate)
    self.addCleanup(proc.kill)
    seen: dict[int, int] = {}

    def up() -> bool:
      self.assertIsNone(proc.poll(), "the sweep ended before its actor ran")
      seen.update(_tree(proc.pid))
      names = [_cmdline(p) for p in _alive(seen)]
      return any(n.startswith("ray::_Lane") for n in names) and any(
        n.startswith("ray::RuntimeEnvAgent") for n in names
      )

    self.assertTrue(_wait(up, 240.0, 0.2), "no Ray actor within 240 s")
    time.sleep(1.0)
    seen.update(_tree(proc.pid))
    return proc, seen

  def test_listens_on_loopback_only_and_sigkill_leaves_no_process(self):
    proc, seen = self._start_sweep("kill")
    sockets = _listening()
    bound = [
      (p, _cmdline(p)[:200], *sockets[i])
      for p in _alive(seen)
      for i in _sockets(p)
      if i in sockets
    ]
    programs = " ".join(b[1] for b in bound)
    # Hloprobe's own driver, the GCS and the raylet listen at least.
    for program in ("hloprobe", "gcs_server", "raylet"):
      self.assertIn(program, programs)
    self.assertEqual([b for b in bound if not _loopback(b[3])], [], bound)
    proc.kill()
    proc.communicate()
    time.sleep(10.0)
    self.assertEqual(
      {p: _cmdline(p) for p in _alive(seen)}, {}, "alive 10 s after SIGKILL"
    )

  def test_sigterm_exits_143_with_one_line(self):
    proc, seen = self._start_sweep("term")
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    self.assertEqual(proc.returncode, 128 + signal.SIGTERM, stderr)
    lines = [line for line in stderr.splitlines() if line.strip()]
    self.assertLen(lines, 1, stderr)
    self.assertRegex(lines[0], r"^hloprobe: interrupted after \d+ of 72 ")
    self.assertTrue(
      _wait(lambda: not _alive(seen), 10.0),
      {p: _cmdline(p) for p in _alive(seen)},
    )


if __name__ == "__main__":
  absltest.main()
