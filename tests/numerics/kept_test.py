"""A config's judging holds a bounded multiple of its outputs (issue 27 item
18), and `kept.Kept` drops its oldest entries beyond its budget.

The probe (testdata/memory_probe.py, a process of its own) judges a case
of 8 MiB output rows at n = 1 and 2 (24 MiB of outputs) as a sweep's case
worker does, and reports how far its peak resident memory grew. Measured
on 2026-12-02: 28x the outputs before the bound (every reference, order,
made run and float64 temporary kept; `noise_floor` stacked every order),
13x after (the newest entry of each cache, at most `KEPT_BYTES` besides,
and one float64 difference at a time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from absl.testing import absltest

from hloprobe.numerics import kept

_PROBE = os.path.join(os.path.dirname(__file__), "testdata", "memory_probe.py")
# Growth allowed, over the outputs' bytes: 13x measured, 28x unbounded.
_BOUND = 20


class KeptTest(absltest.TestCase):
  def test_drops_the_oldest_beyond_the_budget_and_keeps_the_newest(self):
    store = kept.Kept(budget=50)  # bytes besides the newest entry
    store.put("a", np.zeros(10))  # 80 bytes: held (the newest)
    store.put("b", np.zeros(5))  # 40 bytes: a, 80 besides it, is dropped
    self.assertNotIn("a", store)
    self.assertIn("b", store)
    store.put("big", np.zeros(1000))  # 8000 bytes: held; b's 40 fit
    self.assertIn("big", store)
    self.assertIn("b", store)
    self.assertEqual(store.held_bytes, 8040)

  def test_get_makes_once_while_held(self):
    store, made = kept.Kept(budget=100), []
    make = lambda: made.append(1) or (np.zeros(4),)
    store.get(1, make)
    store.get(1, make)
    self.assertLen(made, 1)

  def test_a_dropped_entry_is_made_again(self):
    store, made = kept.Kept(budget=0), []
    store.get(1, lambda: made.append(1) or np.zeros(4))
    store.get(2, lambda: np.zeros(4))  # 1 is dropped (budget 0)
    store.get(1, lambda: made.append(1) or np.zeros(4))
    self.assertLen(made, 2)

  def test_array_bytes_reads_tuples_and_dataclasses(self):
    from hloprobe.numerics import executed

    run = executed.Run((np.zeros(3), np.zeros(2, np.float32)))
    self.assertEqual(kept.array_bytes(run), 24 + 8)
    self.assertEqual(kept.array_bytes(("text", None)), 0)


@pytest.mark.compiles
class PeakTest(absltest.TestCase):
  def test_judging_grows_the_peak_by_a_bounded_multiple_of_the_outputs(self):
    proc = subprocess.run(
      [sys.executable, _PROBE, "32768", "float32"],
      capture_output=True,
      text=True,
      check=False,
      env=dict(os.environ, JAX_PLATFORMS="cpu"),
    )
    self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    ratio = found["grown"] / found["outputs"]
    self.assertLessEqual(ratio, _BOUND, f"peak grew {ratio:.1f}x the outputs")


if __name__ == "__main__":
  absltest.main()
