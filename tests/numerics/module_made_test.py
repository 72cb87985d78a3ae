"""numerics/module_made.py: only an optimized module file given as a case
is executed as it stands; a built-in case or an unoptimized dump (the
recorded `jit_f.before_optimizations.txt`, tests/testdata/modfile) gets
no sentence. The executed sentence itself, on a dump made by a real
compile, is checked in compile/module_case_story_test.py (compiles)."""

from __future__ import annotations

import os

import pytest
import testutil
from absl.testing import absltest

from hloprobe.compile import CASES, get_case
from hloprobe.numerics import module_made_notes

_BEFORE = os.path.join(
  testutil.ROOT, "tests/testdata/modfile/jit_f.before_optimizations.txt"
)


class NotesTest(absltest.TestCase):
  # Reads a module file: HLO text is parsed in module_guard's child first.
  @pytest.mark.compiles
  def test_nothing_for_a_builtin_or_an_unoptimized_module(self):
    self.assertEqual(module_made_notes("seed_mlp", CASES["seed_mlp"]), ())
    self.assertEqual(module_made_notes(_BEFORE, get_case(_BEFORE)), ())


if __name__ == "__main__":
  absltest.main()
