"""break26: a pytest-plugin golden folder's MANIFEST.json keeps a
function's case name as it is.

Found following the README as a new user: `pytest --hloprobe-update` run
from /tmp wrote `"cases": ["../../../../../../../mlp"]` for the function
`mlp` (its name taken for a module file relative to the current folder),
and `hloprobe golden check --golden_dir=...` then refused it as code from
/tmp/mlp outside the repository.
"""

from __future__ import annotations

import os
from unittest import mock

from absl.testing import absltest

from hloprobe.errors import GoldenError
from hloprobe.golden import folder


class FunctionCaseNameTest(absltest.TestCase):
  def test_a_name_that_is_no_file_is_kept(self):
    root = self.create_tempdir().full_path
    golden = os.path.join(root, "tests", "__hloprobe__", "t", "test_x", "mlp")
    sweep = {"cases": ["mlp"], "targets": ["cpu"]}
    with mock.patch("os.getcwd", return_value=root):
      kept = folder.manifest_words(golden, sweep)
    self.assertEqual(kept["cases"], ["mlp"])
    doc = {"schema_version": 3, "sweep": kept}
    self.assertEqual(folder.sweep_words(golden, doc)["cases"], ["mlp"])

  def test_a_module_file_in_the_golden_folder_is_found_from_anywhere(self):
    # Its relative path has no "/": found by its file in the golden folder.
    root = self.create_tempdir().full_path
    golden = os.path.join(root, "golden")
    hlo = self.create_tempfile(os.path.join(golden, "m.hlo")).full_path
    with mock.patch("os.getcwd", return_value=root):
      kept = folder.manifest_words(golden, {"cases": [hlo], "targets": []})
    self.assertEqual(kept["cases"], ["m.hlo"])
    other = self.create_tempdir().full_path
    doc = {"schema_version": 3, "sweep": kept}
    with mock.patch("os.getcwd", return_value=other):
      read = folder.sweep_words(golden, doc)
    self.assertEqual(read["cases"], [hlo])


class FifoTest(absltest.TestCase):
  """Issue 41 item 3: MANIFEST.json and the golden files are read only as
  regular files: a FIFO in their place is one GoldenError naming it, at
  once (a FIFO manifest was "missing"; a golden file read waits on it)."""

  def _golden(self) -> str:
    golden = os.path.join(self.create_tempdir().full_path, "golden")
    os.makedirs(golden)
    return golden

  def test_a_fifo_manifest_is_one_line(self):
    golden = self._golden()
    os.mkfifo(os.path.join(golden, folder.MANIFEST))
    for read in (folder.read_manifest, folder.manifest_sweep):
      with self.subTest(read=read.__name__):
        with self.assertRaises(GoldenError) as cm:
          read(golden)
        message = str(cm.exception)
        self.assertNotIn("\n", message)
        self.assertIn("MANIFEST.json: a FIFO, not a regular file", message)

  def test_a_manifest_that_is_a_folder_is_one_line(self):
    golden = self._golden()
    os.makedirs(os.path.join(golden, folder.MANIFEST))
    with self.assertRaisesRegex(GoldenError, "a directory, not a regular"):
      folder.read_manifest(golden)

  def test_no_manifest_is_still_none(self):
    self.assertIsNone(folder.manifest_sweep(self._golden()))

  def test_a_fifo_golden_file_is_one_line(self):
    golden = self._golden()
    os.makedirs(os.path.join(golden, "cpu"))
    os.mkfifo(os.path.join(golden, "cpu", "x.hlo.txt"))
    self.assertEqual(folder.list_golden_files(golden), ["cpu/x.hlo.txt"])
    with self.assertRaisesRegex(GoldenError, "a FIFO, not a regular file"):
      folder.read_golden_file(golden, "cpu/x.hlo.txt")


if __name__ == "__main__":
  absltest.main()
