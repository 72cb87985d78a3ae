"""sites/frames.py: a site's stack cut at hloprobe's own machinery.

Frames are written here as JAX writes a StableHLO location's call stack
(`file:line:column`, innermost first); which files are hloprobe's is read
from the installed package's folder, as the module documents.
"""

from __future__ import annotations

import os

from absl.testing import absltest

import hloprobe
from hloprobe.sites import frames

_PKG = os.path.dirname(os.path.abspath(hloprobe.__file__))


class ProgramFramesTest(absltest.TestCase):
  def test_cut_before_the_first_frame_of_hloprobe(self):
    stack = (
      "/u/model.py:6:18",
      "/u/model.py:12:3",
      f"{_PKG}/compile/compat.py:139:11",
      "/u/notebook.py:11:5",
    )
    self.assertEqual(
      frames.program_frames(stack), ("/u/model.py:6:18", "/u/model.py:12:3")
    )

  def test_built_in_cases_are_the_program(self):
    stack = (
      f"{_PKG}/compile/builtin_cases.py:40:9",
      f"{_PKG}/compile/issue_cases.py:7:2",
      f"{_PKG}/engine/engine.py:1:1",
    )
    self.assertEqual(frames.program_frames(stack), stack[:2])

  def test_no_hloprobe_frame_keeps_all_and_innermost_always(self):
    recorded = ("model.py:1:1", "/elsewhere/hloprobe/engine/x.py:2:2")
    self.assertEqual(frames.program_frames(recorded), recorded)
    inner = (f"{_PKG}/engine/engine.py:1:1", f"{_PKG}/x.py:2:2")
    self.assertEqual(frames.program_frames(inner), inner[:1])
    self.assertEqual(frames.program_frames(()), ())


if __name__ == "__main__":
  absltest.main()
