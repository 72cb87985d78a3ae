"""commands/_table.py: the command table. Each command has a frozen args
record whose fields are the flags it reads (the common ones under
`common`) and a `main`; the command line offers exactly these commands
(its refusal of an unknown one lists them, read here in process)."""

from __future__ import annotations

import dataclasses

import testutil
from absl.testing import absltest

from hloprobe.commands._table import COMMANDS


class TableTest(absltest.TestCase):
  def test_records_and_mains(self):
    for name, (record, main) in COMMANDS.items():
      self.assertTrue(dataclasses.is_dataclass(record), name)
      self.assertTrue(record.__dataclass_params__.frozen, name)
      self.assertIn(
        "common", [f.name for f in dataclasses.fields(record)], name
      )
      self.assertTrue(callable(main), name)

  def test_the_command_line_offers_these(self):
    proc = testutil.run_hloprobe_here("frobnicate")
    self.assertEqual(proc.returncode, 2)
    offered = proc.stderr.strip().split("choose from ", 1)[1].split(", ")
    self.assertEqual(offered, list(COMMANDS))


if __name__ == "__main__":
  absltest.main()
