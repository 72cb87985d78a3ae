"""engine/shell.py: a user case's shell, made by the request a loader
worker runs, here called in this process (no worker, no XLA): the
shell's program cannot run outside a worker, it keeps the folder of the
file defining the case, and the worker loads the case once. The case is
tests/program_cases.py:conv_only, whose folder is tests/."""

from __future__ import annotations

import os
import sys

import testutil
from absl.testing import absltest

from hloprobe.engine import shell
from hloprobe.errors import CaseError

_WORDS = os.path.join(testutil.ROOT, "tests", "program_cases.py") + ":conv_only"


class ShellTest(absltest.TestCase):
  def test_shell_keeps_fields_and_folder_not_the_program(self):
    memo = {}
    stub = shell.CaseShellRequest(_WORDS).run(memo)
    self.assertEqual(stub.name, "conv_only")
    self.assertEqual(stub.in_axes, (0, None))
    self.assertEqual(
      os.path.realpath(shell.source_folder(stub)),
      os.path.realpath(os.path.join(testutil.ROOT, "tests")),
    )
    with self.assertRaisesRegex(
      CaseError, "runs in hloprobe's worker processes only"
    ):
      stub.make_inputs()
    # The worker keeps the loaded case: a second request loads nothing.
    (key,) = memo
    loaded = memo[key]
    shell.CaseShellRequest(_WORDS).run(memo)
    self.assertIs(memo[key], loaded)

  def test_search_path_entries_put_in_front_once(self):
    # An entry already there is not added again. Counted against what was
    # there before, not against 1: a pytest-xdist worker's sys.path holds
    # tests/ twice already (seen under plain `pytest -n 2`: sys.path[0]
    # and [1] both tests/; once without -n), so "count == 1" failed there.
    saved = list(sys.path)
    try:
      new = "/no/such/folder/for/shell_test"
      shell.with_search_path((new, sys.path[0]))
      self.assertEqual(sys.path[0], new)
      self.assertEqual(sys.path.count(new), 1)
      self.assertEqual(sys.path.count(saved[0]), saved.count(saved[0]))
      self.assertEqual(sys.path[1:], saved)
    finally:
      sys.path[:] = saved

  def test_a_loader_that_started_no_worker_is_closed(self):
    with shell.case_loader() as pool:
      self.assertEqual(pool.started, 0)


if __name__ == "__main__":
  absltest.main()
