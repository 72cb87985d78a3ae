"""startup/_stderr.py: what native code writes to file descriptor 2
captured, the plugin's start-up lines dropped, and control characters
written escaped. The start-up lines are the ones the module quotes
(jaxlib 0.10.2's CUDA plugin, `cudart_stub.cc`; absl's pre-init warning);
the escapes are Python's own `repr` of each character."""

from __future__ import annotations

import io
import os
import sys
from unittest import mock

from absl.testing import absltest

from hloprobe.startup import _stderr

_NOISE = (
  "WARNING: All log messages before absl::InitializeLog() is called are "
  "written to STDERR\n"
  "W1205 12:00:00.000000    1234 cudart_stub.cc:31] Could not find cuda "
  "drivers on your machine, GPU will not be used.\n"
)


class CapturedTest(absltest.TestCase):
  def test_fd_2_captured_and_restored(self):
    with _stderr.captured_stderr() as log:
      os.write(2, b"from native code\n")
    self.assertEqual(log, ["from native code\n"])

  def test_startup_noise_dropped_the_rest_kept(self):
    text = _NOISE + "hloprobe: error: something real\n"
    self.assertEqual(
      _stderr.filter_startup_noise(text), "hloprobe: error: something real\n"
    )

  def test_quiet_startup_writes_back_what_is_not_noise(self):
    written = io.StringIO()  # where it writes back: sys.stderr
    with mock.patch.object(sys, "stderr", written):
      with _stderr.quiet_startup():
        os.write(2, _NOISE.encode() + b"kept\n")
    self.assertEqual(written.getvalue(), "kept\n")


class PrintableTest(absltest.TestCase):
  def test_controls_escaped_newlines_kept(self):
    self.assertEqual(
      _stderr.printable("a\x1b[31mb\tc\n\x9b"), "a\\x1b[31mb\tc\n\\x9b"
    )

  def test_escaping_stream(self):
    out = io.StringIO()
    stream = _stderr.EscapingStream(out)
    self.assertEqual(stream.write("x\x07"), 2)
    self.assertEqual(out.getvalue(), "x\\x07")
    self.assertIs(stream.getvalue.__self__, out)  # other attributes: its


if __name__ == "__main__":
  absltest.main()
