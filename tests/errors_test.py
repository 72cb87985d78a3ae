"""`errors.first_line`: an exception in one line."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.errors import first_line


class FirstLineTest(absltest.TestCase):
  def test_keeps_the_first_line_of_a_long_message(self):
    e = ValueError("  INTERNAL: ptxas exited 255\n  at line 3\n")
    self.assertEqual(first_line(e), "ValueError: INTERNAL: ptxas exited 255")
    self.assertEqual(
      first_line(e, with_type=False), "INTERNAL: ptxas exited 255"
    )

  def test_empty_message_is_the_class_name(self):
    for with_type in (True, False):
      self.assertEqual(
        first_line(KeyboardInterrupt(), with_type=with_type),
        "KeyboardInterrupt",
      )


if __name__ == "__main__":
  absltest.main()
