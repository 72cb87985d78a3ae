"""Issue 27 item 12, end to end: a real `hloprobe versions` process against
a local package index (tests/versions_testdata/slow_index.py: no network)
whose wheels never arrive is interrupted mid-build (SIGINT), or killed
(SIGKILL) and run again; and a cached venv whose python cannot start is
named in one line and made again by the next run.

uv's own cache goes to the test's folder (UV_CACHE_DIR); the index's
pages list one fake wheel per project, so nothing is ever installed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from absl.testing import absltest
from testutil import ROOT

from hloprobe.versions import venvs

pytestmark = pytest.mark.compiles  # starts `python -m hloprobe`

_INDEX = os.path.join(
  os.path.dirname(os.path.dirname(__file__)),
  "versions_testdata",
  "slow_index.py",
)
_VERSION = "0.10.2"


def _wait_for(test, what: str, ready, timeout_s: float = 120.0) -> None:
  end = time.monotonic() + timeout_s
  while not ready():
    if time.monotonic() > end:
      test.fail(f"timed out waiting for {what}")
    time.sleep(0.1)


def _ended(proc: subprocess.Popen) -> None:
  """Kills `proc` if it runs, and closes its pipes."""
  if proc.poll() is None:
    proc.kill()
  proc.communicate()


class _Index:
  """The local index, in a process of its own (ended by `close`)."""

  def __init__(self, test, folder: str, mode: str):
    self.port_file = os.path.join(folder, f"index-{mode}.port")
    self.proc = subprocess.Popen(
      [sys.executable, _INDEX, self.port_file, mode],
      stdout=subprocess.DEVNULL,
      stderr=subprocess.DEVNULL,
    )
    _wait_for(test, "the index", lambda: os.path.exists(self.port_file), 30)
    with open(self.port_file) as f:
      self.url = f"http://127.0.0.1:{f.read().strip()}/simple"

  def asked(self) -> list[str]:
    try:
      with open(self.port_file + ".log") as f:
        return f.read().split()
    except FileNotFoundError:
      return []

  def close(self) -> None:
    self.proc.kill()
    self.proc.wait()


class VenvBuildTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.folder = self.create_tempdir().full_path
    self.cache = os.path.join(self.folder, "cache")
    self.venvs = os.path.join(self.cache, "venvs")

  def _start(self, index: _Index) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
    env.update(
      PYTHONPATH=ROOT,
      PIP_INDEX_URL=index.url,
      UV_INDEX_URL=index.url,
      UV_CACHE_DIR=os.path.join(self.folder, "uv-cache"),
      PIP_NO_CACHE_DIR="1",
      # A wheel that never arrives must hold the build until the signal
      # (uv's default is 30 s, then it retries and gives up).
      UV_HTTP_TIMEOUT="600",
      PIP_DEFAULT_TIMEOUT="600",
    )
    env.pop("PIP_FIND_LINKS", None)
    env.pop("PIP_EXTRA_INDEX_URL", None)
    return subprocess.Popen(
      [
        sys.executable,
        "-m",
        "hloprobe",
        "versions",
        f"--jaxlib={_VERSION}",
        "--targets=cpu",
        "--batch_sizes=1",
        "--precisions=float32",
        f"--cache_dir={self.cache}",
      ],
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
      env=env,
      cwd=self.folder,
    )

  def _mid_build(self, index: _Index) -> subprocess.Popen:
    """A versions run waiting on a wheel, its staging folder made."""
    proc = self._start(index)
    self.addCleanup(_ended, proc)
    _wait_for(
      self,
      "the installer to ask for a wheel",
      lambda: (
        any(p.startswith("/files/") for p in index.asked())
        or proc.poll() is not None
      ),
    )
    if proc.poll() is not None:  # ended before the installer asked
      self.fail(f"versions ended early: {proc.communicate()[1][-2000:]}")
    self.assertTrue(self._left(), "no staging folder while building")
    return proc

  def _left(self) -> list[str]:
    try:
      return sorted(os.listdir(self.venvs))
    except FileNotFoundError:
      return []

  def _processes_in_cache(self) -> list[str]:
    """Command lines of live processes naming the cache folder."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
      try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
          line = f.read().replace(b"\0", b" ").decode(errors="replace")
      except OSError:
        continue
      if self.cache in line and int(pid) != os.getpid():
        found.append(line)
    return found

  def test_sigint_mid_build_leaves_no_folder_nor_process(self):
    index = _Index(self, self.folder, "sleep")
    self.addCleanup(index.close)
    proc = self._mid_build(index)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    self.assertEqual(proc.returncode, 130, err)
    self.assertIn("hloprobe: interrupted", err)
    self.assertNotIn("Traceback", err)
    self.assertEqual(self._left(), [])  # no staging folder, no .tmp
    self.assertEqual(self._processes_in_cache(), [])  # no installer left

  def test_a_killed_builds_folders_are_removed_by_the_next_run(self):
    index = _Index(self, self.folder, "sleep")
    proc = self._mid_build(index)
    staged = self._left()
    _ended(proc)  # SIGKILL
    index.close()  # its installer, orphaned, fails and ends
    self.assertEqual(self._left(), staged)  # SIGKILL: nothing cleaned yet
    missing = _Index(self, self.folder, "missing")
    self.addCleanup(missing.close)
    again = self._start(missing)
    out, err = again.communicate(timeout=300)
    self.assertEqual(again.returncode, 1, err)
    self.assertNotIn("Traceback", err)
    self.assertIn(f"jaxlib {_VERSION}: not installed: ", err)
    self.assertEqual(self._left(), [])  # the dead build's folders went

  def test_a_venv_whose_python_cannot_start_is_made_again(self):
    path = os.path.join(
      self.venvs, f"jaxlib-{_VERSION}-py{venvs.this_python()}-cpu"
    )
    os.makedirs(os.path.join(path, "bin"))
    python = os.path.join(path, "bin", "python")
    with open(python, "w") as f:
      f.write("#!/bin/sh\nexit 1\n")  # starts, runs nothing
    os.chmod(python, 0o755)
    with open(os.path.join(path, venvs.MARKER), "w") as f:
      json.dump({"recipe": venvs.RECIPE, "packages": []}, f)
    missing = _Index(self, self.folder, "missing")
    self.addCleanup(missing.close)
    first = self._start(missing)
    _, err = first.communicate(timeout=300)
    self.assertEqual(first.returncode, 1, err)
    self.assertNotIn("Traceback", err)
    self.assertIn(
      f"its python cannot start ({python}: 1): the venv will be made again "
      "by the next run",
      err,
    )
    self.assertFalse(os.path.exists(os.path.join(path, venvs.MARKER)))
    second = self._start(missing)
    _, err = second.communicate(timeout=300)
    self.assertIn(f"jaxlib {_VERSION}: making its venv", err)
    self.assertIn(f"jaxlib {_VERSION}: not installed: ", err)
    self.assertNotIn("Traceback", err)
    self.assertEqual(self._left(), [os.path.basename(path)])  # no stage


if __name__ == "__main__":
  absltest.main()
