"""golden/ending.py: inside `case_cannot_end`, case code cannot end the
process: `os._exit` raises (and is restored after), `sys.exit` is a
`GoldenError` naming the command. In this process: the patched `os._exit`
is never the real one while the block runs, so nothing here can end it."""

from __future__ import annotations

import os
import sys

from absl.testing import absltest

from hloprobe.errors import GoldenError
from hloprobe.golden import ending


class CaseCannotEndTest(absltest.TestCase):
  def test_os_exit_raises_and_is_restored(self):
    real = os._exit
    with self.assertRaisesRegex(
      ending.CaseEndedError, r"golden check: a case called os._exit\(0\)"
    ):
      with ending.case_cannot_end("golden check"):
        self.assertIsNot(os._exit, real)
        os._exit(0)
    self.assertIs(os._exit, real)

  def test_sys_exit_is_a_failure_not_exit_0(self):
    with self.assertRaisesRegex(
      GoldenError, r"golden update: a case called sys.exit\(0\); .*FAILED"
    ):
      with ending.case_cannot_end("golden update"):
        sys.exit(0)

  def test_other_errors_pass_through(self):
    with self.assertRaises(KeyError):
      with ending.case_cannot_end("golden check"):
        raise KeyError("x")


if __name__ == "__main__":
  absltest.main()
