"""hloprobe.tools.profile_workers: the profile lines of a stats file, its
usage errors, and the worker hook's stats written after a reply."""

from __future__ import annotations

import cProfile
import os
import subprocess
import sys
import tempfile

import pytest
from absl.testing import absltest

from hloprobe.tools import profile_workers


def _leaf(k: int) -> int:
  return sum(range(k))


def _outer() -> int:
  return _leaf(10) + _leaf(20) + _leaf(30)


class TopLinesTest(absltest.TestCase):
  def test_lines_are_by_cumulative_seconds_with_exact_call_counts(self):
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(4):
      _outer()
    prof.disable()
    path = os.path.join(self.create_tempdir().full_path, "x.prof")
    prof.dump_stats(path)
    lines = profile_workers.top_lines(path, 50)
    outer = [x for x in lines if "(_outer)" in x]
    leaf = [x for x in lines if "(_leaf)" in x]
    self.assertLen(outer, 1)
    self.assertLen(leaf, 1)
    # 4 calls of _outer, 3 of _leaf in each: 12 (counted by hand).
    self.assertEqual(outer[0].split()[2], "4")
    self.assertEqual(leaf[0].split()[2], "12")
    cum = [float(x.split()[0]) for x in lines]
    self.assertEqual(cum, sorted(cum, reverse=True))
    self.assertLess(lines.index(outer[0]), lines.index(leaf[0]))
    self.assertLen(profile_workers.top_lines(path, 1), 1)


class UsageTest(absltest.TestCase):
  def test_bad_arguments_are_one_line(self):
    for argv in ([], ["out"], ["--", "sweep"], ["out", "--top=x", "--", "a"]):
      with self.assertRaises(SystemExit) as e:
        profile_workers.main(argv)
      self.assertIn("profile_workers:", str(e.exception.code))

  def test_a_folder_with_files_is_refused(self):
    out = self.create_tempdir()
    out.create_file("kept.txt")
    with self.assertRaises(SystemExit) as e:
      profile_workers.main([out.full_path, "--", "sweep"])
    self.assertIn("is not empty", str(e.exception.code))


def _hook_run(out: str, code: str, cpu: bool) -> str:
  """Runs `python -c code` with the worker hook of `profile_workers` on;
  returns what it printed (stripped)."""
  site = os.path.join(out, "site")
  os.makedirs(site, exist_ok=True)
  with open(os.path.join(site, "sitecustomize.py"), "w") as f:
    f.write(profile_workers._SITE)
  env = dict(os.environ, PYTHONPATH=site, HLOPROBE_PROFILE_DIR=out)
  env.pop("HLOPROBE_PROFILE_CPU", None)
  if cpu:
    env["HLOPROBE_PROFILE_CPU"] = "1"
  return subprocess.run(
    [sys.executable, "-c", code],
    env=env,
    capture_output=True,
    text=True,
    check=True,
  ).stdout.strip()


@pytest.mark.compiles
class WorkerHookTest(absltest.TestCase):
  def test_a_reply_writes_the_worker_stats(self):
    with tempfile.TemporaryDirectory() as out:
      code = (
        "import os, hloprobe.runtime.serve as m\n"
        "r, w = os.pipe()\n"
        "m._reply(w, 'ok', 7, RuntimeError)\n"
        "print(os.getpid())\n"
      )
      pid = _hook_run(out, code, cpu=False)
      path = os.path.join(out, f"{pid}.prof")
      self.assertTrue(os.path.exists(path))
      self.assertNotEmpty(profile_workers.top_lines(path, 5))
      self.assertTrue(os.path.exists(os.path.join(out, f"{pid}.times")))

  def test_cpu_samples_credit_the_busy_function(self):
    # About 0.4 CPU s in `burn`, sampled every 5 ms: its line holds most
    # of the sampled seconds, and the process made few system calls (no
    # clock read per Python call, as cProfile with a CPU clock did).
    with tempfile.TemporaryDirectory() as out:
      code = (
        "import os, time, hloprobe.runtime.serve as m\n"
        "def burn():\n"
        "  t, s = time.process_time(), 0\n"
        "  while time.process_time() - t < 0.4:\n"
        "    for i in range(10000): s = abs(s - i)\n"
        "  return s\n"
        "burn()\n"
        "r, w = os.pipe()\n"
        "m._reply(w, 'ok', 7, RuntimeError)\n"
        "print(os.getpid())\n"
      )
      pid = _hook_run(out, code, cpu=True)
      lines = profile_workers.top_lines(os.path.join(out, f"{pid}.prof"), 50)
      burn = [x for x in lines if "(burn)" in x]
      self.assertLen(burn, 1)
      cum, own, samples = burn[0].split()[:3]
      self.assertGreater(float(cum), 0.2)
      self.assertGreater(int(samples), 10)
      with open(os.path.join(out, f"{pid}.times")) as f:
        user, system = (float(x) for x in f.read().split()[:2])
      self.assertGreater(user, 0.3)
      self.assertLess(system, 0.3)


if __name__ == "__main__":
  absltest.main()
