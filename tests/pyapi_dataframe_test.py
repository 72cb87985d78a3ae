"""`Results.to_dataframe()` and `_repr_html_` (issue 26's leftovers): text
cells are plain strings, number cells numbers, unrounded, from the
records (the table rounds them for people).

Records without XLA: the recorded compiles of the seed at n = 2 on the cpu
and the a100 (their fates), with a run's errors planted on the cpu one and
a prediction on the a100 one; each planted number is expected back whole.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas
import recorded
from absl.testing import absltest

from hloprobe import api
from hloprobe.ir import Precision
from hloprobe.numerics import ErrorStats, NoiseFloor, Prediction
from hloprobe.records import Execution

_ROW0, _ERR, _REL = 0.08197825402021408, 0.6100485523676333, 0.7019442246581789


def _stats(err: float) -> ErrorStats:
  return ErrorStats(_ROW0, _ROW0 + err, err, err, _REL)


def _results() -> api.Results:
  def one(name: str):
    r = recorded.config_result(recorded.load(name))
    config = dataclasses.replace(r.config, precision=Precision.bfloat16)
    return dataclasses.replace(r, config=config)

  cpu = one("seed_cpu_n2_bfloat16")
  cpu = dataclasses.replace(
    cpu,
    execution=Execution(
      0.0123456, (_stats(1.25e-5),), headline=0, ulp_vs_n1=np.int64(3)
    ),
  )
  a100 = one("seed_a100_n2_bfloat16")
  prediction = Prediction(
    ("TF32_TF32_F32",) * 3 + ("F32_F32_F32",),
    _stats(_ERR),
    NoiseFloor(1.0118e-4, 1.25e-4, 2e-5),
    3.970414400100708e-05,
    (),
    np.int64(0),
    (),
    None,
    "explained by TF32_TF32_F32 at sites [0, 1, 2]",
  )
  a100 = dataclasses.replace(a100, prediction=prediction)
  return api.Results((cpu, a100))


class DataFrameTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.frame = _results().to_dataframe()

  def test_text_columns_are_plain_strings(self):
    for column in (
      "case",
      "target",
      "precision",
      "site fates",
      "effective algorithms",
      "verdict",
      "status",
    ):
      for value in self.frame[column]:
        self.assertIs(type(value), str, f"{column}: {value!r}")
    self.assertEqual(list(self.frame["precision"]), ["bfloat16"] * 2)
    self.assertEqual(
      self.frame["effective algorithms"][1], "TF32_TF32_F32 x3, F32_F32_F32 x1"
    )

  def test_numbers_are_numbers_unrounded(self):
    f = self.frame
    self.assertEqual(f["n"].dtype, "Int64")
    self.assertEqual(list(f["n"]), [2, 2])
    self.assertEqual(f["ULP vs n=1"][0], 3)
    self.assertTrue(pandas.isna(f["ULP vs n=1"][1]))
    self.assertEqual(f["abs err row0"].dtype, np.float64)
    self.assertEqual(f["abs err row0"][0], 1.25e-5)
    self.assertEqual(f["run s"][0], 0.0123456)
    self.assertEqual(f["pred abs err row0"][1], _ERR)  # the table: 6.10e-01
    self.assertEqual(f["pred row0"][1], _ROW0)
    self.assertEqual(f["pred row0 tolerance"][1], 3.970414400100708e-05)
    self.assertEqual(f["noise floor"][1], 1.0118e-4)
    self.assertEqual(f["top site"][1], 0)
    self.assertTrue(pandas.isna(f["pred abs err row0"][0]))  # not predicted
    self.assertTrue(pandas.isna(f["made abs err row0"][1]))  # not executed
    self.assertNotIn("pred row0 band", f.columns)

  def test_should_fail_twin_the_printed_table_rounds(self):
    # What the frame does not take from: the table's own text.
    table = _results().table(wide=True)
    self.assertIn("6.10e-01", table)
    self.assertNotIn(repr(_ERR), table)


class HtmlTest(absltest.TestCase):
  def test_cells_are_plain_text(self):
    page = _results()._repr_html_()
    cells = re.findall(r"<td[^>]*>(.*?)</td>", page, re.S)
    self.assertIn("bfloat16", cells)
    self.assertFalse([c for c in cells if "Precision" in c or "<" in c])


if __name__ == "__main__":
  absltest.main()
