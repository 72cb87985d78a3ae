"""A --case path that names no file says so, instead of "unknown case".

A new user's first typo in the README's round trip (`--case=dump/module_
0001.jit_f.before_optimizations.txt` for a dump that has module_0000) used
to read "unknown case ...; choose from conv_net, ..." -- the very message
issue 25 starts from. No built-in case name holds "/" or ".", so a word
that does is a path: it does not exist, or is a folder. Nothing compiles.
"""

from __future__ import annotations

import os

from absl.testing import absltest

from hloprobe.compile import get_case
from hloprobe.errors import CaseError


class CasePathTest(absltest.TestCase):
  def test_missing_module_file(self):
    path = os.path.join(self.create_tempdir().full_path, "m.before.txt")
    with self.assertRaises(CaseError) as e:
      get_case(path)
    self.assertEqual(
      str(e.exception).splitlines(),
      [
        f"module file {path!r} does not exist; give a module file, e.g. an "
        "XLA dump's dump/module_0000.jit_f.before_optimizations.txt"
      ],
    )

  def test_folder(self):
    path = self.create_tempdir().full_path
    with self.assertRaisesRegex(
      CaseError, f"^module file '{path}' is a folder"
    ):
      get_case(path)

  def test_other_words_stay_unknown_cases(self):
    with self.assertRaisesRegex(
      CaseError, r"^unknown case 'seed_mpl'; did you mean 'seed_mlp'\? choose"
    ):
      get_case("seed_mpl")


if __name__ == "__main__":
  absltest.main()
