"""One sweep asked three ways gives one result: `hloprobe explain` (the
command's library call, in process), `hloprobe.explain` and the pytest
plugin's `hloprobe_golden.check`, for seed_mlp on the CPU at float32, n =
1 and 2, with no other option given, so each entry point's defaults
(`api.DEFAULTS`) are in play.

The records must match config for config (their verdicts as records and in
words), and the plugin's goldens, written from its own sweep, must match a
snapshot of the Python API's records. The record cache is the test
process's (tests/conftest.py): the first sweep compiles, the others read
its records, so what is compared is what each entry point plans and
assembles."""

from __future__ import annotations

import os
import tempfile

import pytest
import testutil
from absl.testing import absltest

from hloprobe import api, golden
from hloprobe.api import calls
from hloprobe.commands import common
from hloprobe.commands import explain as explain_command
from hloprobe.compile import jaxlib_release
from hloprobe.pytest_plugin import HloprobeGolden
from hloprobe.report.invariance_words import first_lines, invariance_json
from hloprobe.report.verdict_words import config_words

_CASE = "seed_mlp"
_OPTIONS = dict(targets=["cpu"], precisions=["float32"], batch_sizes=[1, 2])


def _judged(records) -> list:
  """Each config with its verdicts as records and words."""
  return [
    (
      r.config,
      r.ok,
      r.prediction.verdicts if r.prediction else None,
      config_words(r),
    )
    for r in records
  ]


class SameResultsTest(absltest.TestCase):
  @pytest.mark.compiles  # one sweep of two configs, then cache hits
  def test_cli_python_api_and_plugin_agree(self):
    # The three entry points' sweeps share warm workers (what a sweep
    # computes does not depend on its workers being warm).
    self.enter_context(testutil.shared_workers())
    words = common.SweepWords(
      case=(_CASE,),
      batch_sizes="1,2",
      precisions=("float32",),
      targets=("cpu",),
      jobs=api.DEFAULTS.jobs(),
    )
    cli, _, cli_answer = explain_command.explain_answered(
      explain_command.ExplainArgs(words, try_fixes=False)
    )
    py = calls.explain(_CASE, **_OPTIONS)
    self.assertLen(cli, 2)
    self.assertTrue(all(r.ok for r in cli))
    self.assertNotEmpty(cli[0].prediction.verdicts)
    self.assertEqual(_judged(cli), _judged(py.records))
    # The batch-invariance answer too (both by default: the command line's
    # --invariance=answer, `DEFAULTS.invariance`): one group, cpu float32,
    # n = 1 and 2 both ran.
    self.assertLen(cli_answer.invariance, 1)
    self.assertEqual(
      invariance_json(py.answer.invariance, py.answer.pins),
      invariance_json(cli_answer.invariance, cli_answer.pins),
    )
    group = cli_answer.invariance[0]
    self.assertEqual((group.target, group.precision), ("cpu", "float32"))
    self.assertIn(first_lines(py.answer.invariance, py.answer.pins)[0], py.text)
    with tempfile.TemporaryDirectory() as tmp:
      plugin = HloprobeGolden(os.path.join(tmp, "test_x"), update=True)
      plugin.check(_CASE, **_OPTIONS)
      plan = api.plan_case(_CASE, **_OPTIONS, explain_passes=True)
      folder = os.path.join(tmp, "test_x", _CASE)
      result = golden.against_goldens(
        folder, py.records, jaxlib_release().versions, plan
      )
      self.assertTrue(result.ok, result.render())


if __name__ == "__main__":
  absltest.main()
