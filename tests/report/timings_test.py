"""report/timings.py: the `--timings` table on records made by hand.

Expected sums are the seconds written here added by hand; the columns are
the stages any config spent time in, in `timing.STAGES` order.
"""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.compile import get_target
from hloprobe.ir import Precision
from hloprobe.records import Config, ConfigResult
from hloprobe.report import timings
from hloprobe.runtime.timing import STAGES


def _result(n: int, **seconds: float) -> ConfigResult:
  config = Config("seed_mlp", get_target("cpu"), n, Precision.bfloat16)
  return ConfigResult(config, timings=seconds)


class TimingsTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.results = [
      _result(1, compile=1.5, run=0.25),
      _result(2, cache=0.125),
    ]

  def test_stage_sums_in_stage_order(self):
    sums = timings.stage_sums(self.results)
    self.assertEqual(sums, {"compile": 1.5, "run": 0.25, "cache": 0.125})
    self.assertEqual(list(sums), [s for s in STAGES if s in sums])

  def test_table_rows_and_the_sums_row(self):
    text = timings.render_timings(self.results)
    header, _, n1, n2, total = text.splitlines()
    self.assertEqual(
      header.split(),
      ["experiment", "case", "target", "n", "precision"]
      + list(timings.stage_sums(self.results))
      + ["total"],
    )
    self.assertEqual(
      n1.split(),
      ["baseline", "seed_mlp", "cpu", "1", "bfloat16", "1.50", "0.25", "1.75"],
    )
    # A cached config shows only its cache time.
    self.assertEqual(n2.split()[-2:], ["0.12", "0.12"])
    # Columns in STAGES order (cache, compile, run); 0.125 and 1.875 are
    # exact in binary, printed to 2 decimals half to even.
    self.assertEqual(total.split(), ["all", "0.12", "1.50", "0.25", "1.88"])


if __name__ == "__main__":
  absltest.main()
