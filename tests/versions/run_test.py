"""Paths from any folder (issue 40, item 4): `versions` and `bisect` run
their workers in a folder of their own, so every path of the sweep is
resolved against the caller's folder first (`versions.spec_request`).

Expected paths are the caller's folder joined with the word (os.path), the
expected overflow count is numpy's (int64 sums of the case's inputs).
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import types

import numpy as np
import pytest
from absl.testing import absltest
from testutil import run_hloprobe_here

from hloprobe.versions import venvs
from hloprobe.versions.run import spec_request


class AbsoluteWordsTest(absltest.TestCase):
  def test_the_request_holds_no_relative_path(self):
    spec = types.SimpleNamespace(
      case_names=("c.py:make", "seed_mlp"),
      batch_sizes=(1,),
      precisions=("float32",),
      target_names=("cpu", "gpus/my.txtpb"),
      explain_passes=False,
      inputs="args.npz",
      experiments=(),
    )
    got = spec_request(spec)
    here = os.getcwd()
    self.assertEqual(
      got["cases"], [os.path.join(here, "c.py") + ":make", "seed_mlp"]
    )
    self.assertEqual(
      got["targets"], ["cpu", os.path.join(here, "gpus", "my.txtpb")]
    )
    self.assertEqual(got["inputs"], os.path.join(here, "args.npz"))


_CASE = textwrap.dedent(
  """
  import jax.numpy as jnp
  import numpy as np

  import hloprobe


  def inputs():
    g = np.random.default_rng(7)
    a = g.integers(-128, 128, (2, 64)).astype(np.int8)
    b = g.integers(-128, 128, (64, 16)).astype(np.int8)
    return a, b


  def make_case():
    return hloprobe.Case(
      "rel_int8", "int8 matmul", jnp.matmul, inputs, in_axes=(0, None)
    )
  """
)


def _fake_venv(venv_dir, jaxlib: str) -> None:
  """A cached CPU venv of `jaxlib` whose python is this interpreter (as
  tests/commands/versions_test.py makes them: no download)."""
  path = venv_dir / f"jaxlib-{jaxlib}-py{venvs.this_python()}-cpu"
  (path / "bin").mkdir(parents=True)
  python = path / "bin" / "python"
  python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
  python.chmod(0o755)
  marker = {"recipe": venvs.RECIPE, "packages": [], "cuda_plugin": False}
  (path / venvs.MARKER).write_text(json.dumps(marker))


@pytest.mark.compiles
def test_versions_with_a_relative_case_from_its_folder(tmp_path, monkeypatch):
  folder = tmp_path / "cases"
  folder.mkdir()
  (folder / "rel_case.py").write_text(_CASE)
  _fake_venv(tmp_path / "venvs", "0.0.1")
  monkeypatch.chdir(folder)
  got = run_hloprobe_here(
    "versions",
    "--jaxlib=0.0.1",
    f"--cache_dir={tmp_path}",
    "--case=rel_case.py:make_case",
    "--targets=cpu",
    "--batch_sizes=1",
    "--precisions=float32",
    "--format=json",
    timeout_s=600,
  )
  assert got.returncode == 0, got.stderr
  doc = json.loads(got.stdout)
  assert [v["status"] for v in doc["versions"]] == ["ok"], doc["versions"]
  (config,) = doc["configs"]
  cell = config["cells"]["0.0.1"]
  assert cell["status"] == "ok", cell
  g = np.random.default_rng(7)
  a = g.integers(-128, 128, (2, 64)).astype(np.int64)
  b = g.integers(-128, 128, (64, 16)).astype(np.int64)
  exact = a[:1] @ b  # n = 1
  over = int(np.count_nonzero((exact < -128) | (exact > 127)))
  assert f"overflow: {over} of {exact.size} elements" in cell["verdict"]


if __name__ == "__main__":
  absltest.main()
