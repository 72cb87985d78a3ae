"""versions/stages.py: staging folders of dead builds removed, a live
build's kept; a venv whose interpreter folder is gone is not intact. On
folders made here: a dead process id is one this test started and
waited for (the kernel does not reuse it while nothing else forks
thousands of processes meanwhile), a live one is this process's."""

from __future__ import annotations

import os
import subprocess

from absl.testing import absltest

from hloprobe.versions import stages


def _dead_pid() -> int:
  proc = subprocess.Popen(["true"])
  proc.wait()
  return proc.pid


class CleanStagesTest(absltest.TestCase):
  def test_dead_builds_go_live_ones_and_others_stay(self):
    cache = self.create_tempdir().full_path
    dead = f".jaxlib-0.10.2-py3.13-cpu-{_dead_pid()}-abc123"
    live = f".jaxlib-0.10.2-py3.13-{os.getpid()}-def456.tmp"
    for name in (dead, dead + ".tmp", live, "jaxlib-0.10.2-py3.13"):
      os.mkdir(os.path.join(cache, name))
    self.assertCountEqual(stages.clean_stages(cache), [dead, dead + ".tmp"])
    self.assertCountEqual(os.listdir(cache), [live, "jaxlib-0.10.2-py3.13"])
    self.assertEqual(stages.clean_stages(os.path.join(cache, "none")), [])

  def test_stage_prefix_names_this_process(self):
    self.assertEqual(
      stages.stage_prefix("/c/jaxlib-0.10.2-py3.13"),
      f".jaxlib-0.10.2-py3.13-{os.getpid()}-",
    )


class PythonIntactTest(absltest.TestCase):
  def test_home_must_exist(self):
    venv = self.create_tempdir()
    python = venv.create_file("bin/python", "").full_path
    os.chmod(python, 0o755)
    cfg = os.path.join(venv.full_path, "pyvenv.cfg")
    with open(cfg, "w") as f:
      f.write(f"home = {venv.full_path}\nversion = 3.13.0\n")
    self.assertTrue(stages.python_intact(venv.full_path, python))
    with open(cfg, "w") as f:
      f.write("home = /no/such/interpreter/bin\n")
    self.assertFalse(stages.python_intact(venv.full_path, python))

  def test_missing_or_not_executable_python(self):
    venv = self.create_tempdir()
    python = venv.create_file("bin/python", "").full_path
    os.chmod(python, 0o644)
    self.assertFalse(stages.python_intact(venv.full_path, python))
    self.assertFalse(stages.python_intact(venv.full_path, python + "3"))


if __name__ == "__main__":
  absltest.main()
