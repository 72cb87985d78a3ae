"""A golden check or update narrowed to a `file.py:factory` or module case.

Golden files are named by a case's own name (`Case.name`) at the size it
runs (a module file's case at its own), while the sweep's record keeps the
words the case was given by (a path): a narrowed check once compared 0
files and said OK, and a narrowed update kept its case's files the
snapshot no longer made. The folder here is built from the committed
seed_mlp goldens: the same bodies filed under a factory case's name
(`break25_named`, given as `<golden>/.cases/case.py:make_case`) and under
the module file tests/testdata/modfile/jit_f.before_optimizations.txt's
(`jit_f`, at its own batch size 2 while the sweep asks for 1), both kept
in the folder (a manifest names no case outside it). Nothing compiles: cases
are looked up (the factory called, the module file read), never run.
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap

import pytest
import testutil
from absl.testing import absltest

from hloprobe.engine import SweepSpec
from hloprobe.golden import folder, format, snapshot, update

_GOLDEN = os.path.join(testutil.ROOT, "golden")
_MODULE_FILE = os.path.join(
  testutil.ROOT, "tests/testdata/modfile/jit_f.before_optimizations.txt"
)
_CASE = textwrap.dedent("""
  import numpy as np
  import hloprobe

  def make_case():
    return hloprobe.Case(
      name="break25_named",
      description="a factory case whose name is not its words",
      fn=lambda x: x,
      make_inputs=lambda: (np.zeros((4, 2), np.float32),),
    )
""")
# (case name, n) -> the committed seed_mlp config whose files it gets.
_FILED = {("seed_mlp", 1): 1, ("break25_named", 1): 1, ("jit_f", 2): 2}


def _renamed(text: str, case: str, n: int) -> str:
  """A committed seed_mlp golden file's text with its header's case and n."""
  text = re.sub(r"case=seed_mlp n=\d+", f"case={case} n={n}", text, count=1)
  return re.sub(
    r'"case": "seed_mlp", "n": \d+',
    f'"case": "{case}", "n": {n}',
    text,
    count=1,
  )


@pytest.mark.compiles  # a user case loads in a worker process (guard)
class GoldenScopeTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.dir = os.path.join(self.create_tempdir().full_path, "golden")
    # Inside the folder (a manifest names no code outside it), hidden from
    # its file list.
    os.makedirs(os.path.join(self.dir, ".cases"))
    self.factory = os.path.join(self.dir, ".cases/case.py") + ":make_case"
    with open(os.path.join(self.dir, ".cases/case.py"), "w") as f:
      f.write(_CASE)
    self.module = os.path.join(self.dir, ".cases/jit_f.txt")
    shutil.copyfile(_MODULE_FILE, self.module)
    made = folder.read_manifest(_GOLDEN)
    files = {}
    for (case, n), seed_n in _FILED.items():
      for kind in ("hlo", "dots.json", "stablehlo.mlir"):
        key = format.ConfigKey("cpu", case, n, "float32")
        rel = key.path(kind)
        seed = format.ConfigKey("cpu", "seed_mlp", seed_n, "float32")
        text = folder.read_golden_file(_GOLDEN, seed.path(kind))
        files[rel] = _renamed(text, case, n)
    self.snap = snapshot.Snapshot(
      files, {"jax": made["jax"], "jaxlib": made["jaxlib"]}, date=made["date"]
    )
    snapshot.write_snapshot(self.snap, self.dir)
    sweep = {
      "cases": ["seed_mlp", self.factory, self.module],
      "targets": ["cpu"],
      "batch_sizes": [1],
      "precisions": ["float32"],
    }
    with open(os.path.join(self.dir, folder.MANIFEST), "w") as f:
      f.write(format.manifest_text(self.snap.versions, sweep, made["date"]))

  def _spec(self, case: str) -> SweepSpec:
    return SweepSpec(
      cases=(case,), targets=("cpu",), batch_sizes=(1,), precisions=("float32",)
    )

  def test_narrowed_check_compares_the_case_files(self):
    for case in ("seed_mlp", "factory", "module"):
      with self.subTest(case):
        word = {"factory": self.factory, "module": self.module}.get(case, case)
        result = snapshot.check(self.dir, self.snap, self._spec(word))
        self.assertTrue(result.ok, result.render())
        self.assertEqual(result.compared, 3, result.render())

  def test_narrowed_check_finds_a_change_in_the_case(self):
    rel = "cpu/break25_named/n1-float32.dots.json"
    path = os.path.join(self.dir, rel)
    with open(path) as f:
      text = f.read()
    self.assertIn('"K": 2,', text)  # site 0's
    with open(path, "w") as f:
      f.write(text.replace('"K": 2,', '"K": 3,', 1))
    result = snapshot.check(self.dir, self.snap, self._spec(self.factory))
    self.assertFalse(result.ok)
    self.assertEqual([c.path for c in result.changed], [rel])

  def test_narrowed_update_replaces_only_the_case_files(self):
    gone = "cpu/jit_f/n2-float32.hlo"
    files = {
      r: t for r, t in self.snap.files.items() if "/jit_f/" in r and r != gone
    }
    snap = snapshot.Snapshot(files, self.snap.versions, date=self.snap.date)
    result = update.update_goldens(self.dir, snap, self._spec(self.module))
    self.assertEqual(result.removed, (gone,), result.render())
    self.assertEqual((result.unchanged, result.kept), (2, 6), result.render())
    self.assertFalse(os.path.exists(os.path.join(self.dir, gone)))
    sweep = folder.manifest_sweep(self.dir)
    self.assertEqual(sweep["cases"], ["seed_mlp", self.factory, self.module])


if __name__ == "__main__":
  absltest.main()
