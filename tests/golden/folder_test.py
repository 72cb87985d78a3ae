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


if __name__ == "__main__":
  absltest.main()
