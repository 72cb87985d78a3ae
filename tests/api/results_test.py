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

from hloprobe.api import results as api_results
from hloprobe.ir import Precision
from hloprobe.numerics import (
  ErrorStats,
  NoiseFloor,
  Prediction,
  Verdict,
  VerdictKind,
)
from hloprobe.numerics.kernel_sites import KernelRowZero, KernelSite
from hloprobe.records import Execution

_ROW0, _ERR, _REL = 0.08197825402021408, 0.6100485523676333, 0.7019442246581789


def _stats(err: float) -> ErrorStats:
  return ErrorStats(_ROW0, _ROW0 + err, err, err, _REL)


def _results() -> api_results.Results:
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
    ("",),  # "explained by TF32_TF32_F32 at sites [0, 1, 2]"
    (
      Verdict(
        VerdictKind.EXPLAINED, algorithms=(("TF32_TF32_F32", (0, 1, 2)),)
      ),
    ),
  )
  a100 = dataclasses.replace(a100, prediction=prediction)
  return api_results.Results((cpu, a100))


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
    self.assertEqual(f["abs err row0"].dtype, "Float64")
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


class HtmlColumnsTest(absltest.TestCase):
  """Issue 39 item 10: the HTML table's "beyond band" and "worst row"."""

  def test_beyond_band_and_worst_row_after_the_verdict(self):
    f = _results().to_dataframe()
    columns = list(f.columns)
    at = columns.index("verdict")
    self.assertEqual(columns[at + 1 : at + 3], ["beyond band", "worst row"])
    self.assertEqual(f["beyond band"].dtype, "Float64")
    # a100: its predicted error over twice its noise floor (NOISE_FACTOR,
    # numerics/accuracy.py), no row judged: 0.61005 / (2 * 1.0118e-4).
    self.assertAlmostEqual(
      f["beyond band"][1], np.float64(_ERR) / (2.0 * 1.0118e-4), places=6
    )
    self.assertTrue(pandas.isna(f["beyond band"][0]))  # cpu: no prediction
    self.assertEqual(
      list(f["worst row"]),
      ["n/a", "not judged (no batch axis, or integer)"],
    )

  def test_an_empty_sweep_has_them_too(self):
    empty = api_results.Results(()).to_dataframe()
    self.assertEqual(empty["beyond band"].dtype, "Float64")
    self.assertIn("worst row", empty.columns)


class ColumnTypesTest(absltest.TestCase):
  def test_types_are_the_columns_not_the_data(self):
    # No rows, or a column of "n/a" only: n, ULPs and the top site stay
    # Int64, errors Float64, text str (they all read Float64 before).
    empty = api_results.Results(()).to_dataframe()
    self.assertEqual(empty["n"].dtype, "Int64")
    self.assertEqual(empty["ULP vs n=1"].dtype, "Int64")
    self.assertEqual(empty["top site"].dtype, "Int64")
    self.assertEqual(empty["abs err row0"].dtype, "Float64")
    for text in ("case", "pred row0 by"):  # "str" in pandas 3, object in 2
      self.assertTrue(pandas.api.types.is_string_dtype(empty[text]), text)
    cpu_only = api_results.Results(_results().records[:1]).to_dataframe()
    self.assertEqual(cpu_only["top site"].dtype, "Int64")  # not predicted
    self.assertTrue(cpu_only["top site"].isna().all())


class NanIsNotNaTest(absltest.TestCase):
  def test_a_nan_error_is_kept_apart_from_na(self):
    # An output that is NaN has a NaN error (the table prints "nan"); a
    # config not run has none ("n/a"). dropna() must keep the first.
    results = _results()
    cpu = results.records[0]
    execution = dataclasses.replace(cpu.execution, leaf_stats=(_stats(np.nan),))
    cpu = dataclasses.replace(cpu, execution=execution)
    f = api_results.Results((cpu, results.records[1])).to_dataframe()
    err = f["abs err row0"]
    self.assertTrue(np.isnan(err[0]))
    self.assertEqual(err.isna().tolist(), [False, True])  # a100: not run
    self.assertEqual(len(f.dropna(subset=["abs err row0"])), 1)


class KernelModelRowZeroTest(absltest.TestCase):
  def test_pred_row0_is_the_cells_number(self):
    # Where a site is a bit-exact model the table's band cell shows the
    # kernel model's row 0 (tables._prediction_cells), and so does the
    # frame; the planted value differs from the emulation's _ROW0.
    kernel_row0 = 0.0819782614707946
    results = _results()
    a100 = results.records[1]
    models = (KernelSite("bit-exact model"),) * 3 + (KernelSite("band"),)
    kernel = KernelRowZero(models, kernel_row0, 2.5e-7)
    prediction = dataclasses.replace(a100.prediction, kernel=kernel)
    a100 = dataclasses.replace(a100, prediction=prediction)
    results = api_results.Results((results.records[0], a100))
    f = results.to_dataframe()
    self.assertIn("(kernel model)", results.table(wide=True))
    self.assertEqual(f["pred row0"][1], kernel_row0)
    self.assertEqual(f["pred row0 tolerance"][1], 3.970414400100708e-05)
    self.assertEqual(list(f["pred row0 by"]), ["n/a", "kernel model"])

  def test_should_fail_twin_emulation_without_kernel_model(self):
    f = _results().to_dataframe()
    self.assertEqual(f["pred row0"][1], _ROW0)
    self.assertEqual(list(f["pred row0 by"]), ["n/a", "emulation"])


class HtmlTest(absltest.TestCase):
  def test_cells_are_plain_text(self):
    page = _results()._repr_html_()
    cells = re.findall(r"<td[^>]*>(.*?)</td>", page, re.S)
    self.assertIn("bfloat16", cells)
    self.assertFalse([c for c in cells if "Precision" in c or "<" in c])


if __name__ == "__main__":
  absltest.main()
