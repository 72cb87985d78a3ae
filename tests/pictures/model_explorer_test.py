"""Issue 39 item 7: Model Explorer's MLIR adapter writes two log lines of
its own to stderr at its first conversion (absl's "WARNING: All log
messages before absl::InitializeLog() ..." and TensorFlow's `port.cc`
oneDNN line); hloprobe's conversions (`--model_explorer`, and `view`'s
server) drop them. Checked in a fresh process, where the first conversion
happens."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import recorded
import testutil
from absl.testing import absltest

from hloprobe.pictures import model_explorer

_CONVERT = """
import sys
from hloprobe.pictures.model_explorer import adapter_dot_nodes
print(sorted(adapter_dot_nodes(sys.argv[1])), file=sys.stderr)
"""


@pytest.mark.compiles  # starts a Python process
class QuietAdapterTest(absltest.TestCase):
  def test_the_first_conversion_writes_no_foreign_line(self):
    folder = self.create_tempdir().full_path
    result = recorded.config_result(recorded.load("seed_cpu_n2_bfloat16"))
    model_explorer.write_overlay([result], folder)
    mlir = next(f for f in os.listdir(folder) if f.endswith(".mlir"))
    proc = subprocess.run(
      [sys.executable, "-c", _CONVERT, os.path.join(folder, mlir)],
      capture_output=True,
      text=True,
      env=dict(os.environ, PYTHONPATH=testutil.ROOT),
      timeout=300,
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertNotIn("absl::InitializeLog", proc.stderr)
    self.assertNotIn("oneDNN", proc.stderr)
    self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)


if __name__ == "__main__":
  absltest.main()
