"""`api.run`: the one run of a plan. It refuses a folder holding an
earlier sweep's results before anything runs, streams each finished config
to results.jsonl, and an interrupt says how far the sweep got."""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest
from absl.testing import absltest

from hloprobe import api
from hloprobe.errors import InvalidArgumentError


def _plan(cache_dir=None):
  return api.plan(
    ["seed_mlp"],
    batch_sizes="1,2",
    precisions=["float32"],
    targets=["cpu"],
    cache=cache_dir is not None,
    cache_dir=cache_dir,
    jobs=1,
  )


class RunTest(absltest.TestCase):
  def test_earlier_results_are_refused_before_anything_runs(self):
    folder = self.create_tempdir()
    folder.create_file("results.json", "{}")
    with self.assertRaisesRegex(InvalidArgumentError, "--overwrite"):
      api.run(_plan(), output_dir=folder.full_path)

  def test_interrupted_carries_what_finished(self):
    e = api.Interrupted(15, ["r"], 4)
    self.assertIsInstance(e, KeyboardInterrupt)
    self.assertEqual((e.signum, e.done, e.total), (15, ["r"], 4))

  def test_an_error_is_no_interrupt_unless_a_signal_was_raised(self):
    self.assertIsNone(api.Interrupted.after(ValueError("x")))
    e = api.Interrupted.after(KeyboardInterrupt(), ["r"], 4)
    self.assertEqual((e.signum, e.done, e.total), (signal.SIGINT, ["r"], 4))

  def test_an_interrupt_that_c_code_swallowed_is_still_the_interrupt(self):
    # matplotlib's Agg converts a transform with pybind11's
    # `array_t::ensure`, which clears the handler's `Interrupted` and
    # raises ValueError: a SIGTERM during `sweep`'s plot exited 1, not 143.
    from matplotlib import _path

    for s in (signal.SIGINT, signal.SIGTERM):
      self.addCleanup(signal.signal, s, signal.getsignal(s))
      signal.signal(s, lambda n, _: api.Interrupted.raise_for(n))

    class Transform:
      def __array__(self, dtype=None, copy=None):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # bytecode here runs the handler
          pass
        return np.eye(3)

    with self.assertRaisesRegex(ValueError, "affine") as raised:
      _path.affine_transform(np.zeros((2, 2)), Transform())
    e = api.Interrupted.after(raised.exception, ["r"], 4)
    self.assertEqual((e.signum, e.done, e.total), (signal.SIGTERM, ["r"], 4))
    os.kill(os.getpid(), signal.SIGINT)  # later signals are dropped
    for _ in range(1000):
      pass

  @pytest.mark.compiles  # two configs of seed_mlp on the CPU, one finished
  def test_an_interrupt_after_one_config_keeps_it(self):
    folder = self.create_tempdir().full_path

    def progress(p):
      if p.done == 1 and p.current:  # the first config is in
        raise KeyboardInterrupt

    with self.assertRaises(api.Interrupted) as raised:
      api.run(_plan(), output_dir=folder, progress=progress)
    e = raised.exception
    self.assertEqual((len(e.done), e.total), (1, 2))
    with open(os.path.join(folder, "results.jsonl"), encoding="utf-8") as f:
      lines = [json.loads(line) for line in f]
    self.assertLen(lines, 1)
    self.assertEqual(e.done[0].config.n, 1)


if __name__ == "__main__":
  absltest.main()
