"""`make bench`'s real-size lines (issue 37): a line whose hloprobe run
had a worker stopped by the memory bound or the case timeout says it is
not a whole run."""

from __future__ import annotations

import contextlib
import io

import pytest
from absl.testing import absltest

from hloprobe.tools import bench_scale


def _found(over: int) -> dict:
  return {
    "line": "gpt2_4",
    "plain_s": 32.7,
    "hloprobe_s": 287.0,
    "ratio": 287.0 / 32.7,
    "plain_cpu_s": 18.4,
    "hloprobe_cpu_s": 151.6,
    "peak_mb": 6563.0,
    "plain_peak_mb": 961.0,
    "load_before": "4.1/3.6/5.9",
    "load_after": "2.9/3.9/5.4",
    "goal": None,
    "over_bound": over,
  }


def _printed(found: dict) -> str:
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    bench_scale._print(found, "explain")
  return out.getvalue()


class PrintTest(absltest.TestCase):
  def test_a_run_cut_by_the_memory_bound_says_so(self):
    line = _printed(_found(3))
    self.assertIn("8.78x", line)  # 287.0 / 32.7
    self.assertIn("MISSED", line)  # 6563 MB over the 2 GB goal
    self.assertTrue(
      line.rstrip().endswith(
        "NOT A WHOLE RUN: 3 of its lines name a worker stopped by "
        "--max_worker_mb or --case_timeout"
      )
    )

  def test_both_sides_cpu_seconds_are_printed(self):
    self.assertIn("(CPU 152 s against 18 s)", _printed(_found(0)))

  @pytest.mark.compiles  # starts processes
  def test_the_wrapper_reports_its_childrens_cpu_seconds(self):
    # A child that burns about 0.3 s of CPU: the wrapper's figure is the
    # user + system seconds of the processes it waited for.
    found = bench_scale._wrapped(
      [
        "python3",
        "-c",
        "import time\nt = time.process_time()\n"
        "while time.process_time() - t < 0.3: pass",
      ]
    )
    self.assertGreaterEqual(found["cpu"], 0.29)
    self.assertLess(found["cpu"], 5.0)

  def test_a_whole_run_says_nothing_more(self):
    self.assertNotIn("NOT A WHOLE RUN", _printed(_found(0)))


if __name__ == "__main__":
  absltest.main()
