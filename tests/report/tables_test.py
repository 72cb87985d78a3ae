"""report/tables.py: the sweep table on hand-made records. Expected text
is the layout the module names (tabulate's "simple" and GitHub's markdown
table, cells as given), the columns asked for in their order, and the
first screen within `TERMINAL_WIDTH` characters."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.compile import get_target
from hloprobe.errors import InvalidArgumentError
from hloprobe.ir import Precision
from hloprobe.records import Config, ConfigResult, Failure
from hloprobe.report import tables


def _results() -> list[ConfigResult]:
  ok = ConfigResult(
    Config("seed_mlp", get_target("cpu"), 2, Precision.bfloat16)
  )
  failed = ConfigResult(
    Config("seed_mlp", get_target("a100"), 1, Precision.float32),
    failure=Failure("compile", "XlaRuntimeError: boom"),
  )
  return [ok, failed]


class TableTest(absltest.TestCase):
  def test_plain_and_markdown_layouts_keep_cells_as_given(self):
    rows, headers = [["007", "1.50"]], ["a", "b"]
    self.assertEqual(
      tables.table(rows, headers), "a    b\n---  ----\n007  1.50"
    )
    self.assertEqual(
      tables.table(rows, headers, "markdown"),
      "| a   | b    |\n|-----|------|\n| 007 | 1.50 |",
    )

  def test_columns_chosen_in_their_order(self):
    text = tables.render(
      _results(), "markdown", {}, columns=["target", "n", "status"]
    )
    header, _, cpu, a100, *_ = text.splitlines()
    self.assertEqual(
      [c.strip() for c in header.strip("|").split("|")],
      ["target", "n", "status"],
    )
    self.assertEqual(
      [c.strip() for c in cpu.strip("|").split("|")], ["cpu", "2", "ok"]
    )
    self.assertIn("FAILED (compile)", a100)

  def test_first_screen_fits_the_terminal(self):
    text = tables.render(_results(), "table", {})
    self.assertTrue(
      all(len(l) <= tables.TERMINAL_WIDTH for l in text.splitlines()), text
    )

  def test_unknown_columns_and_formats(self):
    with self.assertRaisesRegex(
      InvalidArgumentError, "unknown --columns bogus; choose from"
    ):
      tables.OUTPUT_FORMS.check_columns(["case", "bogus"])
    with self.assertRaisesRegex(
      InvalidArgumentError, r"unknown --columns \(none\)"
    ):
      tables.OUTPUT_FORMS.check_columns([])
    with self.assertRaisesRegex(ValueError, "unknown --format 'csv'"):
      tables.render(_results(), "csv", {})


if __name__ == "__main__":
  absltest.main()
