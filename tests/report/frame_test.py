"""report/frame.py: the sweep table as values, on records made by hand.

What is expected is the module's contract read from its docstring: the
band cell is two numbers and a "by" text, numbers are None where the
table says n/a, text cells are plain `str` (a precision by its name),
and each column's kind comes from the column, not from the data.
"""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.compile import get_target
from hloprobe.ir import Precision
from hloprobe.records import Config, ConfigResult, Execution, Failure
from hloprobe.report import frame


def _config(target: str, n: int, precision: Precision) -> Config:
  return Config("seed_mlp", get_target(target), n, precision)


class TableValuesTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.results = [
      ConfigResult(
        _config("cpu", 2, Precision.bfloat16),
        execution=Execution(run_s=0.25),
        timings={"run": 0.25},
      ),
      ConfigResult(
        _config("a100", 1, Precision.float32),
        failure=Failure("compile", "XlaRuntimeError: boom"),
      ),
    ]
    self.headers, self.kinds, self.rows = frame.table_values(self.results)
    self.col = {h: i for i, h in enumerate(self.headers)}

  def test_band_is_two_numbers_and_who_predicted(self):
    i = self.col["pred row0"]
    self.assertEqual(
      self.headers[i : i + 3],
      ["pred row0", "pred row0 tolerance", "pred row0 by"],
    )
    self.assertEqual(self.kinds[i : i + 3], ["float", "float", "str"])
    self.assertEqual(
      [r[i : i + 3] for r in self.rows], [[None, None, "n/a"]] * 2
    )

  def test_values_by_column_kind(self):
    row = dict(zip(self.headers, self.rows[0]))
    self.assertEqual((row["n"], row["precision"]), (2, "bfloat16"))
    self.assertIs(type(row["precision"]), str)
    self.assertEqual(self.kinds[self.col["n"]], "int")
    self.assertIsNone(row["abs err row0"])  # no reference: n/a, not 0
    failed = dict(zip(self.headers, self.rows[1]))
    self.assertEqual(
      failed["status"], "FAILED (compile): XlaRuntimeError: boom"
    )

  def test_kinds_without_rows_are_the_same(self):
    headers, kinds, rows = frame.table_values([])
    self.assertEqual(rows, [])
    self.assertEqual(dict(zip(headers, kinds))["n"], "int")


if __name__ == "__main__":
  absltest.main()
