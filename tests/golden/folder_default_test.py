"""Issue 39 item 5: goldens never touch hloprobe's own `golden/`.

Without --golden_dir, `golden` uses `./golden`, or `golden/` of the nearest
project folder (pyproject.toml or .git) above the current one that is not
hloprobe's own checkout; the checkout's `golden/` only from its root. A
manifest that `golden check` would refuse (a case outside the golden
folder and its repository) is refused by `golden update` in one line,
before it sweeps. The update from a fresh folder outside the checkout
leaves the checkout's goldens as they were.

The commands' sweeps are not under test here: they are read from the
committed goldens (`_recorded_sweep`, as tests/golden/update_test.py's
GoldenCliTest does; that file checks that recorded compiles reproduce
them, and re-runs one check and one update live).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from unittest import mock

import testutil
from absl.testing import absltest

from hloprobe import engine
from hloprobe.errors import GoldenError
from hloprobe.golden import folder, snapshot, update
from hloprobe.golden.update import golden_update

_REPO = testutil.ROOT
_GOLDEN = os.path.join(_REPO, "golden")

_CASE = """
import numpy as np
from hloprobe.compile import cases

def make_case():
  return cases.Case(
    "t_mine", "mine", lambda x: x @ x.T,
    lambda: (np.ones((2, 3), np.float32),),
  )
"""


def _recorded_sweep(spec) -> snapshot.Snapshot:
  """What `golden check|update` sweeping `spec` makes, read from the
  committed goldens: their files of `spec`'s configs, made with the
  manifest's jax/jaxlib."""
  made = folder.read_manifest(_GOLDEN)
  configs = folder.sweep_configs(folder.sweep_record(spec))
  files = {
    r: folder.read_golden_file(_GOLDEN, r)
    for r in folder.list_golden_files(_GOLDEN)
    if snapshot.in_scope(r, configs)
  }
  versions = {"jax": made["jax"], "jaxlib": made["jaxlib"]}
  return snapshot.Snapshot(files, versions, date=made["date"])


def _recorded(test: absltest.TestCase) -> None:
  """`golden check|update` take `_recorded_sweep` for their sweep within
  `test`."""
  for module in (snapshot, update):  # check's, and update's
    test.enter_context(
      mock.patch.object(module, "sweep_snapshot", _recorded_sweep)
    )


@contextlib.contextmanager
def _in(folder_path: str):
  here = os.getcwd()
  os.chdir(folder_path)
  try:
    yield
  finally:
    os.chdir(here)


def _golden_status() -> str:
  """`git status` of the checkout's golden/ (empty when untouched)."""
  return subprocess.run(
    ["git", "status", "--porcelain", "--", "golden"],
    cwd=_REPO,
    capture_output=True,
    text=True,
    check=True,
  ).stdout


class DefaultFolderTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.tmp = os.path.realpath(self.create_tempdir().full_path)

  def test_a_fresh_folder_outside_the_checkout_uses_its_own(self):
    self.assertEqual(
      folder.default_golden_dir(self.tmp), os.path.join(self.tmp, "golden")
    )

  def test_the_nearest_project_folder_above(self):
    for marker in ("pyproject.toml", ".git"):
      with self.subTest(marker):
        project = os.path.join(self.tmp, marker.strip("."))
        deep = os.path.join(project, "src", "pkg")
        os.makedirs(deep)
        open(os.path.join(project, marker), "w").close()
        self.assertEqual(
          folder.default_golden_dir(deep), os.path.join(project, "golden")
        )

  def test_an_existing_golden_folder_here_wins(self):
    project = os.path.join(self.tmp, "p")
    sub = os.path.join(project, "sub")
    os.makedirs(os.path.join(sub, "golden"))
    open(os.path.join(project, "pyproject.toml"), "w").close()
    self.assertEqual(
      folder.default_golden_dir(sub), os.path.join(sub, "golden")
    )

  def test_the_checkout_only_from_its_root(self):
    own = folder.own_checkout()
    self.assertEqual(own, os.path.realpath(_REPO))  # an editable checkout
    self.assertEqual(
      folder.default_golden_dir(_REPO), os.path.join(_REPO, "golden")
    )
    tests = os.path.join(_REPO, "tests")
    self.assertEqual(
      folder.default_golden_dir(tests), os.path.join(tests, "golden")
    )


class RefusedAtUpdateTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.tmp = os.path.realpath(self.create_tempdir().full_path)
    with open(os.path.join(self.tmp, "my.py"), "w") as f:
      f.write(_CASE)
    self.sweep = {
      "cases": ["seed_mlp", "my.py:make_case"],
      "targets": ["cpu"],
      "batch_sizes": [1],
      "precisions": ["float32"],
    }

  def test_a_case_outside_the_folder_and_no_repository(self):
    with _in(self.tmp), self.assertRaises(GoldenError) as e:
      folder.confine_sweep("gold", self.sweep, writing=True)
    line = str(e.exception)
    self.assertNotIn("\n", line)
    self.assertIn("golden update would write a MANIFEST.json", line)
    self.assertIn("case 'my.py:make_case' runs code from", line)
    self.assertIn("git init", line)

  def test_check_and_update_agree_inside_a_repository(self):
    os.makedirs(os.path.join(self.tmp, ".git"))
    with _in(self.tmp):
      folder.confine_sweep("gold", self.sweep, writing=True)
      folder.confine_sweep("gold", self.sweep)

  def test_the_command_refuses_in_one_line_before_sweeping(self):
    with _in(self.tmp):
      proc = testutil.run_hloprobe_here(
        "golden",
        "update",
        "--golden_dir=gold",
        "--case=my.py:make_case",
        "--targets=cpu",
        "--batch_sizes=1",
        "--precisions=float32",
      )
    self.assertEqual(proc.returncode, 1, proc.stderr)
    self.assertLen(proc.stderr.splitlines(), 1, proc.stderr)
    self.assertIn("`golden check` refuses", proc.stderr)
    self.assertFalse(os.path.exists(os.path.join(self.tmp, "gold")))


def _foreign_golden(test: absltest.TestCase) -> tuple[str, str]:
  """A new folder whose golden/ holds one file of the user's own:
  (the folder, that file)."""
  tmp = os.path.realpath(test.create_tempdir().full_path)
  mine = os.path.join(tmp, "golden", "golden_test.py")
  os.makedirs(os.path.dirname(mine))
  with open(mine, "w") as f:
    f.write("print('mine')\n")
  return tmp, mine


class NotAGoldenFolderTest(absltest.TestCase):
  """Found walking issue 39 as a user: from the checkout's tests/ (or a
  project whose `golden/` holds its own files), `./golden` was picked and
  `golden update` replaced the whole folder ("no readable MANIFEST.json:
  replaced the whole folder"), removing the files there. Refused now, in
  one line, before the sweep (these tests compile nothing)."""

  def setUp(self):
    super().setUp()
    self.tmp, self.mine = _foreign_golden(self)

  def test_the_command_refuses_and_keeps_the_files(self):
    with _in(self.tmp):
      proc = testutil.run_hloprobe_here(
        "golden",
        "update",
        "--case=seed_mlp",
        "--targets=cpu",
        "--batch_sizes=1",
        "--precisions=float32",
      )
    self.assertEqual(proc.returncode, 1, proc.stderr)
    self.assertLen(proc.stderr.splitlines(), 1, proc.stderr)
    self.assertIn("has no MANIFEST.json", proc.stderr)
    self.assertIn("(golden_test.py)", proc.stderr)
    self.assertEqual(os.listdir(os.path.dirname(self.mine)), ["golden_test.py"])

  def test_the_api_refuses_before_the_sweep(self):
    spec = engine.SweepSpec(("seed_mlp",), (1,), ("float32",), ("cpu",))
    golden = os.path.dirname(self.mine)
    with open(os.path.join(golden, "README.md"), "w") as f:
      f.write("mine\n")
    with self.assertRaisesRegex(GoldenError, r"\(README\.md and 1 more\)"):
      golden_update(spec, golden)
    self.assertLen(os.listdir(golden), 2)


class CheckNotAGoldenFolderTest(absltest.TestCase):
  """`golden check` of such a folder says what it is, before it sweeps:
  no sweep is taken here (`_recorded` is not patched in), and this
  unmarked test would fail in conftest had it compiled or started a
  worker."""

  def setUp(self):
    super().setUp()
    self.tmp, self.mine = _foreign_golden(self)

  def test_check_says_it_is_not_a_golden_folder(self):
    # Not "MANIFEST.json is missing; recreate the goldens with `hloprobe
    # golden update`", which would lead to the update above. The folder is
    # the default one (no --golden_dir).
    with _in(self.tmp):
      proc = testutil.run_hloprobe_here("golden", "check")
    self.assertEqual(proc.returncode, 1, proc.stderr)
    self.assertEqual(
      proc.stderr,
      f"hloprobe: error: {self.tmp}/golden is not a golden folder: no "
      "MANIFEST.json, and golden_test.py is not a golden file; give "
      "--golden_dir=DIR\n",
    )

  def test_check_of_a_missing_folder_fails_before_the_sweep(self):
    with _in(self.tmp):
      proc = testutil.run_hloprobe_here("golden", "check", "--golden_dir=nope")
    self.assertEqual(proc.returncode, 1, proc.stderr)
    self.assertLen(proc.stderr.splitlines(), 1, proc.stderr)
    self.assertIn("no golden folder at nope; create it with", proc.stderr)


class UpdateOutsideTheCheckoutTest(absltest.TestCase):
  def test_writes_here_and_leaves_the_checkout_alone(self):
    _recorded(self)
    before = _golden_status()
    tmp = os.path.realpath(self.create_tempdir().full_path)
    with _in(tmp):
      proc = testutil.run_hloprobe_here(
        "golden",
        "update",
        "--case=seed_mlp",
        "--targets=cpu",
        "--batch_sizes=1",
        "--precisions=float32",
      )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertIn(f"golden update of {tmp}/golden", proc.stdout)
    self.assertTrue(
      os.path.isfile(os.path.join(tmp, "golden", folder.MANIFEST))
    )
    self.assertEqual(_golden_status(), before)


if __name__ == "__main__":
  absltest.main()
