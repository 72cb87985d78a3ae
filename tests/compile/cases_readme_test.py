"""The README's worked user case, saved as the README says and run as a
user would, from its folder: the command line in this process (a fresh
`python -m hloprobe` given a file case relative to its folder runs in
tests/report/files_test.py, and one given a case by module name in
tests/compile/cases_user_test.py)."""

from __future__ import annotations

import contextlib
import json
import os
import re

import numpy as np
import pytest
from absl.testing import absltest
from testutil import ROOT, run_hloprobe_here

# Compiles with XLA (`make test-fast` skips it).
pytestmark = pytest.mark.compiles


def _example() -> str:
  with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
    text = f.read()
  section = text[text.index("### Your own program as a case") :]
  return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _save_example(test: absltest.TestCase) -> str:
  """The README's example saved as `my_case.py` in a new folder."""
  folder = test.create_tempdir().full_path
  with open(os.path.join(folder, "my_case.py"), "w") as f:
    f.write(_example())
  return folder


def _numpy_y00(n: int) -> float:
  """y[0, 0] = (x @ w)[0, 0] of the README's inputs, numpy float64."""
  g = np.random.default_rng(0)
  x = g.standard_normal((16, 256)).astype(np.float32)[:n]
  w = g.standard_normal((256, 64)).astype(np.float32)
  return float((x.astype(np.float64) @ w.astype(np.float64))[0, 0])


def _in(folder: str, *args: str):
  """`hloprobe ARGS` run from `folder` (its workers start there too), in
  this process."""
  with contextlib.chdir(folder):
    return run_hloprobe_here(*args, timeout_s=600)


def _readme_commands(case: str) -> list[str]:
  """The README's command lines that name `case`."""
  with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
    return [line for line in f.read().splitlines() if f"--case={case}" in line]


class ReadmeCommandsFitTest(absltest.TestCase):
  """Found by review: the README's explain (default --batch_sizes 1-9) and
  golden update (1,2,9) exceeded the example's 8 rows and exited 2."""

  def test_every_command_asks_at_most_the_examples_rows(self):
    import importlib.util

    from hloprobe.api import DEFAULTS
    from hloprobe.engine.spec import parse_batch_sizes

    path = os.path.join(_save_example(self), "my_case.py")
    spec = importlib.util.spec_from_file_location("readme_my_case", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x, _ = module.inputs()
    commands = _readme_commands("my_case.py:make_case")
    self.assertGreaterEqual(len(commands), 3)  # explain, sweep, golden
    for line in commands:
      asked = re.search(r"--batch_sizes=(\S+)", line)
      sizes = parse_batch_sizes(asked[1] if asked else DEFAULTS.batch_sizes)
      self.assertLessEqual(max(sizes), x.shape[0], line)


class ReadmeExampleTest(absltest.TestCase):
  def test_verify_consistent_compares_y_not_the_loss(self):
    # The loss (a mean over the batch) changes with n by design; row 0 is
    # y's. Found by a user: the loss at n = 2 was compared with y at n = 1.
    folder = _save_example(self)
    done = _in(
      folder,
      "verify",
      "--case=my_case.py:make_case",
      "--targets=cpu",
      "--batch_sizes=1,2",
      "--precisions=float32",
      "--fix=float32",
      "--require=consistent",
    )
    self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
    match = re.search(
      r"cpu my_case n=2 float32: row 0 \['y'\] \(first values\) (\S+) vs "
      r"(\S+) at n=1",
      done.stdout,
    )
    self.assertIsNotNone(match, done.stdout)
    for got in match.groups():  # f32 error of a K = 256 sum: ~1e-5
      self.assertAlmostEqual(float(got), _numpy_y00(1), delta=1e-3)

  def test_worked_example_sweeps_on_cpu_and_a100(self):
    folder = _save_example(self)
    proc = _in(
      folder,
      "sweep",
      "--case=my_case.py:make_case",
      "--targets=cpu,a100",
      "--batch_sizes=1,2",
      "--precisions=default",
      "--format=json",
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    configs = json.loads(proc.stdout)["configs"]
    self.assertEqual(
      [(c["target"], c["n"], c["status"]) for c in configs],
      [
        ("cpu", 1, "ok"),
        ("cpu", 2, "ok"),
        ("a100", 1, "ok"),
        ("a100", 2, "ok"),
      ],
    )
    self.assertEqual(
      {leaf for c in configs for leaf, _ in c["prediction"]["leaf_verdicts"]},
      {"['loss']", "['y']"},
    )


if __name__ == "__main__":
  absltest.main()
