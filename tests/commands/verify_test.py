"""`verify` on module cases (found trying to break issue 25 as a user).

A module runs at its one size, so "consistent" (row 0 across batch sizes)
has nothing to compare: `verify --case=<module>` failed every time with
"consistent needs at least two batch sizes; got n=8", and its default
--require includes consistent.
"""

from __future__ import annotations

import os

from absl.testing import absltest

from hloprobe.commands import verify
from hloprobe.errors import InvalidArgumentError

_MODULE = os.path.join(
  os.path.dirname(os.path.dirname(__file__)),
  "testdata",
  "modfile",
  "jit_f.before_optimizations.txt",
)
_drop = verify._without_consistent_for_modules


class ConsistentOnModulesTest(absltest.TestCase):
  def test_dropped_for_module_cases_only(self):
    got = _drop(("consistent", "accurate"), (_MODULE,))
    self.assertEqual(got, ("accurate",))

  def test_kept_for_program_cases(self):
    got = _drop(("consistent", "accurate"), ("seed_mlp",))
    self.assertEqual(got, ("consistent", "accurate"))

  def test_refused_mixed_or_alone(self):
    with self.assertRaisesRegex(InvalidArgumentError, "verify the module"):
      _drop(("consistent", "accurate"), (_MODULE, "seed_mlp"))
    with self.assertRaisesRegex(InvalidArgumentError, "--require=accurate"):
      _drop(("consistent",), (_MODULE,))


if __name__ == "__main__":
  absltest.main()
