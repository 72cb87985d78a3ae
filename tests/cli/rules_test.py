"""cli_rules: the closed-vocabulary list parser and the refusals' reasons."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.cli import _main as cli
from hloprobe.cli import _rules as cli_rules


class EnumListParserTest(absltest.TestCase):
  def test_known_items_pass_and_empty_ones_are_left_to_validators(self):
    parser = cli_rules.EnumListParser(("a", "b"))
    self.assertEqual(parser.parse("a,b"), ["a", "b"])
    self.assertEqual(parser.parse("a,,b"), ["a", "", "b"])

  def test_unknown_item_is_named(self):
    parser = cli_rules.EnumListParser(("a", "b"))
    with self.assertRaisesRegex(ValueError, "^'c': "):
      parser.parse("a,c")


class NotForTest(absltest.TestCase):
  def test_each_reason_is_for_a_flag_the_command_really_refuses(self):
    table = cli.command_flags()  # flag -> the commands that take it
    self.assertNotEmpty(cli_rules.NOT_FOR)
    for flag, command in cli_rules.NOT_FOR:
      self.assertIn(flag, table)
      self.assertNotIn(command, table[flag])


if __name__ == "__main__":
  absltest.main()
