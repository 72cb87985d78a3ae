"""Issue 27 items 11, 12 and 15: a golden folder given as a symlink is
updated through it; a killed venv build's folders are cleaned and a venv
whose python is broken is not reused; an unreachable package index is
named as such."""

from __future__ import annotations

import json
import os

from absl.testing import absltest

from hloprobe.golden import update
from hloprobe.golden.snapshot import Snapshot
from hloprobe.versions import install, stages

# What pip 25 and uv print when the index does not answer (recorded
# 2026-12-02 with --index-url http://127.0.0.1:9/simple).
_PIP_UNREACHABLE = (
  "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, "
  "status=None)) after connection broken by 'NewConnectionError(\"HTTPConnec"
  "tion(host='127.0.0.1', port=9): Failed to establish a new connection: "
  "[Errno 111] Connection refused\")': /simple/jaxlib/\n"
  "ERROR: Could not find a version that satisfies the requirement "
  "jaxlib==0.4.38 (from versions: none)\n"
  "ERROR: No matching distribution found for jaxlib==0.4.38\n"
)
_UV_UNREACHABLE = (
  "error: Request failed after 3 retries\n"
  "  Caused by: Failed to fetch: `http://127.0.0.1:9/simple/jaxlib/`\n"
  "  Caused by: error sending request for url "
  "(http://127.0.0.1:9/simple/jaxlib/)\n"
  "  Caused by: tcp connect error\n"
  "  Caused by: Connection refused (os error 111)\n"
)
_PIP_NO_WHEEL = (
  "ERROR: Could not find a version that satisfies the requirement "
  "jaxlib==0.4.1 (from versions: 0.4.38)\n"
  "ERROR: No matching distribution found for jaxlib==0.4.1\n"
)

_SWEEP = {
  "cases": ["seed_mlp"],
  "targets": ["cpu"],
  "batch_sizes": [1],
  "precisions": ["float32"],
}


def _snap(jaxlib: str) -> Snapshot:
  return Snapshot({}, {"jax": jaxlib, "jaxlib": jaxlib})


class GoldenSymlinkTest(absltest.TestCase):
  def test_update_through_a_link_updates_its_target(self):
    parent = self.create_tempdir().full_path
    real = os.path.join(parent, "real")
    link = os.path.join(parent, "link")
    update.update_goldens(real, _snap("0.10.2"), _SWEEP)
    os.symlink("real", link)
    result = update.update_goldens(link, _snap("0.12.0"), _SWEEP)
    self.assertEqual(result.golden_dir, link)
    self.assertTrue(os.path.islink(link))
    self.assertEqual(os.readlink(link), "real")
    with open(os.path.join(real, "MANIFEST.json")) as f:
      self.assertEqual(json.load(f)["jaxlib"], "0.12.0")
    # No staging folder, backup or lock file left beside them.
    self.assertEqual(sorted(os.listdir(parent)), ["link", "real"])


class VenvStagesTest(absltest.TestCase):
  def test_a_dead_builds_folders_are_removed_a_live_ones_kept(self):
    cache = self.create_tempdir().full_path
    dead = 4194303  # above Linux's default pid_max (4194304 - 1 is the top)
    names = {
      f".jaxlib-0.4.38-py3.11-{dead}-abc123": False,
      f".jaxlib-0.4.38-py3.11-{dead}-abc123.tmp": False,
      f".jaxlib-0.4.38-py3.11-cpu-{os.getpid()}-def456": True,
      "jaxlib-0.4.38-py3.11": True,  # a finished venv
    }
    for name in names:
      os.mkdir(os.path.join(cache, name))
    try:
      os.kill(dead, 0)
      self.skipTest(f"process {dead} exists here")
    except ProcessLookupError:
      pass
    removed = stages.clean_stages(cache)
    self.assertCountEqual(removed, [n for n, kept in names.items() if not kept])
    self.assertCountEqual(
      os.listdir(cache), [n for n, kept in names.items() if kept]
    )

  def test_a_broken_python_is_not_intact(self):
    venv = self.create_tempdir().full_path
    python = os.path.join(venv, "bin", "python")
    os.makedirs(os.path.dirname(python))
    self.assertFalse(stages.python_intact(venv, python))  # absent
    with open(python, "w") as f:
      f.write("#!/bin/sh\n")
    self.assertFalse(stages.python_intact(venv, python))  # not executable
    os.chmod(python, 0o755)
    self.assertTrue(stages.python_intact(venv, python))  # no pyvenv.cfg
    cfg = os.path.join(venv, "pyvenv.cfg")
    for home, intact in ((venv, True), ("/no/such/python/home", False)):
      with open(cfg, "w") as f:
        f.write(f"home = {home}\ninclude-system-site-packages = false\n")
      self.assertEqual(stages.python_intact(venv, python), intact, home)


class UnreachableIndexTest(absltest.TestCase):
  def test_named_as_unreachable_not_as_a_missing_wheel(self):
    for stderr, tool in ((_PIP_UNREACHABLE, "pip"), (_UV_UNREACHABLE, "uv")):
      with self.subTest(tool=tool):
        error = install._install_failed(
          stderr, ("jaxlib==0.4.38",), "3.11", tool
        )
        self.assertIn("the package index could not be reached", str(error))
        self.assertNotIn("wheel", str(error))

  def test_a_missing_wheel_is_still_named(self):
    self.assertIsNone(install.unreachable_index(_PIP_NO_WHEEL))
    error = install._install_failed(
      _PIP_NO_WHEEL, ("jaxlib==0.4.1",), "3.11", "pip"
    )
    self.assertIn("no jaxlib==0.4.1 wheel for Python 3.11", str(error))


if __name__ == "__main__":
  absltest.main()
