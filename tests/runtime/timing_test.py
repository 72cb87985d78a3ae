"""Tests of the per-stage stopwatch (no assertions on how long anything takes)."""

from __future__ import annotations

import time

from absl.testing import absltest

from hloprobe.runtime import timing


class StopwatchTest(absltest.TestCase):
  def test_inner_stage_time_is_not_charged_to_the_outer_one(self):
    watch = timing.Stopwatch()
    with watch.stage("noise floor"):
      watch.add("emulation", 5.0)  # as if an emulation took 5 s inside
    seconds = watch.seconds()
    self.assertEqual(seconds["emulation"], 5.0)
    # The outer stage really took far less than 5 s: its exclusive time is
    # its elapsed time minus the 5 s charged inside, so negative here.
    self.assertLess(seconds["noise floor"], 0.0)

  def test_sums_add_up_to_the_outer_elapsed_time(self):
    watch = timing.Stopwatch()
    start = time.perf_counter()
    with watch.stage("predict"):
      with watch.stage("emulation"):
        pass
      with watch.stage("attribution"):
        with watch.stage("emulation"):
          pass
    elapsed = time.perf_counter() - start
    seconds = watch.seconds()
    self.assertEqual(list(seconds), ["emulation", "attribution", "predict"])
    self.assertTrue(all(s >= 0.0 for s in seconds.values()), seconds)
    self.assertLessEqual(sum(seconds.values()), elapsed)

  def test_seconds_follow_the_table_order(self):
    watch = timing.Stopwatch()
    for name in ("run", "custom", "lower", "cache"):
      watch.add(name, 1.0)
    self.assertEqual(list(watch.seconds()), ["cache", "lower", "run", "custom"])


if __name__ == "__main__":
  absltest.main()
