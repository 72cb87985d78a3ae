"""`verify` on module cases (found trying to break issue 25 as a user).

A module runs at its one size, so "consistent" (row 0 across batch sizes)
has nothing to compare: `verify --case=<module>` failed every time with
"consistent needs at least two batch sizes; got n=8", and its default
--require includes consistent.

And `verify --require=invariant` on a user case (`path.py:factory`), the
command `explain` prints for its pins: it failed with "a user case's
program runs in hloprobe's worker processes only" (issue 38), because the
anchors' inputs were made in the main process. Expected values: the
case's program is exact in float32 (integer inputs in [-4, 4], 16
products of at most 16 summed, plus 1: every partial sum an integer below
2**24), so its rows have numpy's integer bits at every batch size,
whatever order XLA sums in: one class on the CPU.
"""

from __future__ import annotations

import os

import pytest
import testutil
from absl.testing import absltest
from testutil import run_hloprobe_here

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


_USER_CASE = testutil.EXACT_MM_CASE


@pytest.mark.compiles
class InvariantOnUserCaseTest(absltest.TestCase):
  def test_explains_printed_command_judges_every_group(self):
    path = os.path.join(self.create_tempdir().full_path, "exact_case.py")
    with open(path, "w") as f:
      f.write(_USER_CASE)
    # The pin `explain --case=PATH:make_case --targets=a100 ...` lists,
    # as it prints it (the CPU beside it).
    proc = run_hloprobe_here(
      "verify",
      f"--case={path}:make_case",
      "--targets=cpu,a100",
      "--batch_sizes=1,2,8",
      "--precisions=float32",
      "--fix=no_dot_strength_reduction",
      "--require=invariant",
      "--nocache",
      timeout_s=300,
    )
    self.assertNotIn("worker processes only", proc.stderr)
    self.assertIn(proc.returncode, (0, 1), proc.stderr)
    evidence = proc.stdout.split("\ninvariant:\n")[1].split("\n\n")[0]
    groups = evidence.splitlines()
    self.assertLen(groups, 2, evidence)
    # The CPU: run in the workers, one class by construction.
    cpu = next(g for g in groups if " on cpu " in g)
    self.assertIn(
      "row 0 is batch-invariant on cpu under float32 "
      "(no_dot_strength_reduction) (bits compared): identical for n = 1-8",
      cpu,
    )
    self.assertIn("the anchor row", cpu)
    # The a100: judged by its kernels, not left unknown for want of the
    # case's inputs (the kernel model's are made in the case's worker).
    a100 = next(g for g in groups if " on a100 " in g)
    self.assertIn("(by kernel identity)", a100)
    self.assertNotIn("not computed", a100)


if __name__ == "__main__":
  absltest.main()
