"""`hloprobe versions` makes its venvs with uv (issue 26).

These download wheels from the package index (jax and jaxlib of one
release, CPU-only, about 80 MB; once per machine: uv's cache keeps them),
so they are marked `downloads` and `make test` deselects them; run them
with `pytest -m downloads tests/versions/venvs_uv_test.py`. `make bench`'s
`venv` line measures uv against venv + pip. tests/commands/versions_test.py makes
its release's venv the same way within `make test`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from absl.testing import absltest

from hloprobe.versions import venvs

# A release with CPU wheels for this Python (3.11 to 3.13).
_RELEASE = "0.10.2"


@pytest.mark.compiles  # uv and the venv's Python are processes
@pytest.mark.downloads
class UvVenvTest(absltest.TestCase):
  def test_versions_venv_is_made_by_uv_and_runs_its_release(self):
    if venvs.uv_binary() is None:
      self.skipTest("the uv package is not installed (pip install uv)")
    cache = self.create_tempdir().full_path
    python = venvs.this_python()
    venv = venvs.ensure_venv(
      _RELEASE, cache, sys.executable, python, cuda=False
    )
    self.assertTrue(venv.created)
    with open(os.path.join(venv.path, venvs.MARKER)) as f:
      marker = json.load(f)
    self.assertEqual(marker["installer"], "uv")
    # uv seeds no pip into the venv: this one was not made by venv + pip.
    self.assertFalse(os.path.exists(os.path.join(venv.path, "bin", "pip")))
    out = subprocess.run(
      [venv.python, "-c", "import jax, jaxlib; print(jaxlib.__version__)"],
      capture_output=True,
      text=True,
      check=True,
      env=dict(os.environ, JAX_PLATFORMS="cpu"),
      timeout=300,
    ).stdout
    self.assertEqual(out.strip(), _RELEASE)
    # Found again in the cache, not made again.
    again = venvs.ensure_venv(
      _RELEASE, cache, sys.executable, python, cuda=False
    )
    self.assertFalse(again.created)
    self.assertEqual(again.path, venv.path)

  def test_a_release_with_no_wheel_says_so_in_one_line(self):
    if venvs.uv_binary() is None:
      self.skipTest("the uv package is not installed (pip install uv)")
    cache = self.create_tempdir().full_path
    with self.assertRaisesRegex(
      venvs.VenvError,
      r"^no jaxlib==0\.4\.1 wheel for Python 3\.\d+ on the package index",
    ):
      venvs.ensure_venv(
        "0.4.1", cache, sys.executable, venvs.this_python(), cuda=False
      )
    self.assertEqual(os.listdir(cache), [])  # nothing left behind


if __name__ == "__main__":
  absltest.main()
