"""versions/children.py: child processes run from several threads, all
ended by `stop`, none started after it. The children are /bin/sh (no
Python: `sleep` and `echo`), so the expected return codes are the
kernel's (SIGKILL: -9) and the shell's."""

from __future__ import annotations

import signal
import subprocess
import threading
import time

from absl.testing import absltest

from hloprobe.versions.children import Children


class ChildrenTest(absltest.TestCase):
  def test_runs_like_subprocess_run(self):
    done = Children().run(
      ["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30
    )
    self.assertEqual(
      (done.returncode, done.stdout, done.stderr), (3, "out\n", "err\n")
    )

  def test_stop_kills_running_children_and_starts_none(self):
    children, got = Children(), []
    threads = [
      threading.Thread(
        target=lambda: got.append(children.run(["sleep", "60"], timeout=120))
      )
      for _ in range(2)
    ]
    for t in threads:
      t.start()
    deadline = time.monotonic() + 30
    while len(children._running) < 2 and time.monotonic() < deadline:
      time.sleep(0.05)
    children.stop()
    for t in threads:
      t.join(timeout=30)
    self.assertEqual([r.returncode for r in got], [-signal.SIGKILL] * 2)
    after = children.run(["echo", "never"], timeout=30)
    self.assertEqual(
      (after.returncode, after.stderr), (-signal.SIGKILL, "interrupted")
    )

  def test_timeout_kills_the_child(self):
    with self.assertRaises(subprocess.TimeoutExpired):
      Children().run(["sleep", "60"], timeout=0.2)


if __name__ == "__main__":
  absltest.main()
