"""hloprobe/records.py: the per-config records, by hand (no XLA).

Expected values are the records' documented forms: `Config.label` as
"TARGET CASE n=N PRECISION" with a non-baseline experiment after it,
and a record without a stage's output says None rather than a made-up
value.
"""

from __future__ import annotations

import pickle

from absl.testing import absltest

from hloprobe.compile import get_target
from hloprobe.ir import Precision
from hloprobe.records import (
  RECORD_VERSION,
  Config,
  ConfigResult,
  Execution,
  Failure,
)
from hloprobe.report.verdict_words import config_words


def _config(experiment: str = "baseline") -> Config:
  return Config(
    "seed_mlp", get_target("a100"), 3, Precision.bfloat16, experiment
  )


class ConfigTest(absltest.TestCase):
  def test_label_names_target_case_size_precision(self):
    self.assertEqual(_config().label(), "a100 seed_mlp n=3 bfloat16")

  def test_label_names_an_experiment_after(self):
    self.assertEqual(
      _config("no_triton_gemm").label(),
      "a100 seed_mlp n=3 bfloat16 (no_triton_gemm)",
    )


class ConfigResultTest(absltest.TestCase):
  def test_without_stages_nothing_is_judged(self):
    r = ConfigResult(_config())
    self.assertTrue(r.ok)
    self.assertIsNone(config_words(r))
    self.assertIsNone(r.judgement)

  def test_a_failure_is_not_ok_and_says_its_error(self):
    f = Failure("compile", "XlaRuntimeError: INTERNAL: no")
    r = ConfigResult(_config(), failure=f)
    self.assertFalse(r.ok)
    self.assertEqual(r.failure.error, "XlaRuntimeError: INTERNAL: no")

  def test_execution_without_reference_has_no_stats(self):
    e = Execution(run_s=0.5)
    self.assertIsNone(e.stats)
    self.assertIsNone(e.output_dtype)

  def test_records_survive_pickling_whole(self):
    # Workers return them and the record cache stores them pickled.
    r = ConfigResult(
      _config(), execution=Execution(run_s=0.5), timings={"run": 0.5}
    )
    self.assertEqual(pickle.loads(pickle.dumps(r)), r)
    self.assertIsInstance(RECORD_VERSION, int)


if __name__ == "__main__":
  absltest.main()
