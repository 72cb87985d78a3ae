"""`api.run`: the one run of a plan. It refuses a folder holding an
earlier sweep's results before anything runs, streams each finished config
to results.jsonl, and an interrupt says how far the sweep got."""

from __future__ import annotations

import json
import os

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
