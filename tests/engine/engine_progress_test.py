"""The sweep's progress bar (issue 26): on a terminal (a pty, in this
process) it shows the configs done, the next one and an ETA, and erases
itself at the end; piped, nothing."""

from __future__ import annotations

import io
import os
import pty
import re
import time

from absl.testing import absltest

from hloprobe.commands import common
from hloprobe.engine.engine import SweepProgress

_LABELS = [f"a100 seed_mlp n={n} bfloat16" for n in range(1, 5)]


def _sweep(show) -> None:
  """What run_sweep tells its progress callable for four configs, each
  taking about 20 ms."""
  for i, label in enumerate(_LABELS):
    show(SweepProgress(i, len(_LABELS), label))
    time.sleep(0.02)
  show(SweepProgress(len(_LABELS), len(_LABELS), ""))


def _read_all(fd: int) -> str:
  chunks = []
  os.set_blocking(fd, False)
  while True:
    try:
      chunk = os.read(fd, 65536)
    except (BlockingIOError, OSError):  # EIO: the other end is closed
      break
    if not chunk:
      break
    chunks.append(chunk)
  return b"".join(chunks).decode("utf-8", errors="replace")


class ProgressBarTest(absltest.TestCase):
  def test_terminal_gets_a_bar_with_an_eta(self):
    master, slave = pty.openpty()
    self.addCleanup(os.close, master)
    with os.fdopen(slave, "w", encoding="utf-8") as tty:
      self.assertTrue(tty.isatty())
      show = common.progress_printer(tty)
      self.assertIsNotNone(show)
      _sweep(show)
      tty.flush()
      text = _read_all(master)
    frames = [f for f in re.split(r"[\r\n]", text) if f.strip()]
    # Each config's frame: done/total, the next config, elapsed<remaining.
    third = [f for f in frames if "n=3" in f]
    self.assertTrue(third, text)
    self.assertRegex(
      third[-1],
      r"^\[2/4\] a100 seed_mlp n=3 bfloat16 \|.*\| 00:00<00:0\d$",
    )
    # The first frame has no rate yet: tqdm says "?" rather than guess.
    self.assertRegex(frames[0], r"^\[0/4\] a100 seed_mlp n=1 .*<\?$")
    # Erased at the end: the last thing written leaves a blank line.
    self.assertEqual(text.rsplit("\r", 1)[-1].strip(), "")

  def test_pipe_gets_nothing(self):
    self.assertIsNone(common.progress_printer(io.StringIO()))


if __name__ == "__main__":
  absltest.main()
