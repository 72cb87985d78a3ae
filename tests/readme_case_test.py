"""The README's worked user case, saved as the README says and run as a user."""

from __future__ import annotations

import os
import re

import pytest
from absl.testing import absltest
from testutil import ROOT, run_hloprobe_json

# Compiles with XLA (`make test-fast` skips it).
pytestmark = pytest.mark.compiles


def _example() -> str:
  with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
    text = f.read()
  section = text[text.index("### Your own program as a case") :]
  return re.search(r"```python\n(.*?)```", section, re.S).group(1)


class ReadmeExampleTest(absltest.TestCase):
  def test_worked_example_sweeps_on_cpu_and_a100(self):
    folder = self.create_tempdir().full_path
    with open(os.path.join(folder, "my_case.py"), "w") as f:
      f.write(_example())
    configs = run_hloprobe_json(
      self,
      "sweep",
      "--case=my_case.py:make_case",
      "--targets=cpu,a100",
      "--batch_sizes=1,2",
      "--precisions=default",
      "--format=json",
      cwd=folder,
    )["configs"]
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
