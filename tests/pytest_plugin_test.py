"""The pytest plugin (hloprobe.pytest_plugin) in a user's repository, run
by pytest's own `pytester`: the `hloprobe_golden` fixture writes goldens
under --hloprobe-update, passes, fails after a precision change with a
readable diff, passes again after --hloprobe-update, and runs from any
directory; `hloprobe golden check` of a file case from another directory
passes too (MANIFEST.json's paths relative to the golden folder).

The repeated runs of one program are record-cache hits (the test
process's cache, tests/conftest.py), so only the two programs compile."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil

import pytest
import testutil

pytest_plugins = ["pytester"]

_TEST = """
import jax.numpy as jnp
import numpy as np

PRECISION = "{precision}"


def mlp(x, w):
  h = jnp.tanh(jnp.dot(x, w, precision=PRECISION))
  return jnp.dot(h, w.T, precision=PRECISION)


def test_mlp(hloprobe_golden):
  x = np.linspace(-1, 1, 4 * 8, dtype=np.float32).reshape(4, 8)
  w = np.eye(8, dtype=np.float32)
  hloprobe_golden.check(
    mlp, x, w, in_axes=(0, None), targets=["cpu"], precisions=["float32"],
    batch_sizes=[1], jobs=1,
  )
"""
# The plugin by name, whether or not this venv's hloprobe has its entry
# point installed (`-p no:hloprobe` drops the entry point's registration).
# Hypothesis's plugin, which the user's tests do not use, is left out: its
# terminal summary imports hypothesis whole in each inner session.
_PLUGIN = (
  "-p",
  "no:hloprobe",
  "-p",
  "hloprobe.pytest_plugin",
  "-p",
  "no:hypothesispytest",
)


def _import_the_stages() -> None:
  """Imports here the hloprobe modules a check imports. pytester's inner
  sessions drop the modules they imported when they end, so each session
  would import them again, and this (outer) pytest's assertion rewriting,
  which covers the packages of every pytest plugin's distribution
  (hloprobe's among them), rewrites each again: 130 modules, some 3 CPU-s
  a session. Imported once here, the sessions share them, as the tests of
  one user's session do."""
  for name in (
    "hloprobe.api",
    "hloprobe.engine",
    "hloprobe.golden",
    "hloprobe.invariance",
    "hloprobe.numerics",
    "hloprobe.records",
    "hloprobe.report",
    "hloprobe.runtime",
    "hloprobe.sites",
    "hloprobe.verify",
    "tabulate",
  ):
    importlib.import_module(name)


def _run(pytester, where: str, *args: str):
  """pytest in `where` on the repository's tests (by absolute path)."""
  tests = str(pytester.path / "tests")
  os.chdir(where)
  return pytester.runpytest_inprocess(
    *_PLUGIN, "-p", "no:cacheprovider", tests, *args
  )


@pytest.mark.compiles  # pytest sessions in process, their sweeps' workers
def test_fixture_passes_fails_with_a_diff_and_updates(pytester, monkeypatch):
  monkeypatch.setenv("PYTHONPATH", testutil.ROOT)
  monkeypatch.chdir(pytester.path)
  test_file = pytester.path / "tests" / "test_model.py"
  test_file.parent.mkdir()
  test_file.write_text(_TEST.format(precision="highest"))
  elsewhere = str(pytester.mkdir("elsewhere"))
  repo = str(pytester.path)
  _import_the_stages()

  missing = _run(pytester, repo)
  missing.assert_outcomes(failed=1)
  missing.stdout.fnmatch_lines(
    ["*no goldens at *__hloprobe__*--hloprobe-update*"]
  )

  _run(pytester, repo, "--hloprobe-update").assert_outcomes(passed=1)
  golden = test_file.parent / "__hloprobe__" / "test_model" / "test_mlp" / "mlp"
  assert (golden / "MANIFEST.json").is_file()
  _run(pytester, elsewhere).assert_outcomes(passed=1)

  test_file.write_text(_TEST.format(precision="bfloat16"))
  changed = _run(pytester, elsewhere)
  changed.assert_outcomes(failed=1)
  changed.stdout.fnmatch_lines(
    [
      "*hloprobe goldens differ*",
      "*MISMATCH*",
      "*Semantic changes:*",
      "*--- golden/*",
      "*+++ candidate/*",
      "*pytest --hloprobe-update*",
    ]
  )
  # The diff names the precision the program changed (StableHLO's
  # precision_config: HIGHEST -> DEFAULT for jax's "bfloat16").
  text = changed.stdout.str()
  assert "-" in text and "HIGHEST" in text and "DEFAULT" in text, text

  _run(pytester, elsewhere, "--hloprobe-update").assert_outcomes(passed=1)
  _run(pytester, repo).assert_outcomes(passed=1)


_CASE = """
import jax.numpy as jnp
import numpy as np

import hloprobe


def make_case():
  x = np.linspace(-1, 1, 2 * 4, dtype=np.float32).reshape(2, 4)
  return hloprobe.Case(
    name="tiny", description="a file case", fn=lambda x: jnp.dot(x, x.T),
    make_inputs=lambda: (x,),
  )
"""


@pytest.mark.compiles  # `hloprobe golden` twice, their workers
def test_golden_check_of_a_file_case_from_another_directory(tmp_path):
  repo = tmp_path / "repo"
  (repo / "cases").mkdir(parents=True)
  # A repository: a manifest runs case code only from inside its golden
  # folder or repository (golden/folder.py `_confine_cases`).
  (repo / ".git").mkdir()
  (repo / "cases" / "tiny.py").write_text(_CASE)
  # The command line in this process, run from each folder (its workers
  # start there too); `hloprobe golden` runs whole in a fresh process in
  # tests/golden/update_test.py and tests/golden/folder_secure_test.py.
  flags = ("--targets=cpu", "--batch_sizes=1", "--precisions=float32")
  with contextlib.chdir(repo):
    made = testutil.run_hloprobe_here(
      "golden",
      "update",
      "--case=cases/tiny.py:make_case",
      "--golden_dir=golden",
      *flags,
      timeout_s=300,
    )
  assert made.returncode == 0, made.stderr
  manifest = json.loads((repo / "golden" / "MANIFEST.json").read_text())
  assert manifest["schema_version"] == 3
  assert manifest["sweep"]["cases"] == ["../cases/tiny.py:make_case"]
  # Another checkout, another current folder: the manifest reads the same.
  moved = tmp_path / "moved"
  shutil.copytree(repo, moved)
  with contextlib.chdir(tmp_path):
    checked = testutil.run_hloprobe_here(
      "golden", "check", f"--golden_dir={moved / 'golden'}", timeout_s=300
    )
  assert checked.returncode == 0, checked.stdout + checked.stderr
  assert "OK" in checked.stdout


def test_missing_goldens_fail_before_the_sweep(tmp_path, monkeypatch):
  # No folder to compare with: the test fails at once, without the sweep
  # (on a new user's first run it cost 40 s of compiles to say so).
  import numpy as np

  from hloprobe import api
  from hloprobe.pytest_plugin import HloprobeGolden

  def no_sweep(plan):
    raise AssertionError("swept before finding the goldens missing")

  monkeypatch.setattr(api, "run", no_sweep)
  golden = HloprobeGolden(str(tmp_path / "__hloprobe__" / "t"), False)
  x = np.ones((2, 3), np.float32)
  with pytest.raises(pytest.fail.Exception, match="no goldens at .*--hloprobe"):
    golden.check(lambda a: a @ a.T, x, targets=["cpu"], batch_sizes=[1])
