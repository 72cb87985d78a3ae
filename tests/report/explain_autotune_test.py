"""report/explain_autotune.py: who chose each gemm fusion site under
loaded autotune results, on the recorded a100 compiles of the seed
(jaxlib 0.12.0.1, n = 2 and 9, bfloat16) with a selection written here in
the form `LoadedResults.fusion_selections` gives ("autotuned on <device> (<file>:
<entry>)", or the missing-entry words); without results, nothing."""

from __future__ import annotations

import dataclasses

import recorded
from absl.testing import absltest

from hloprobe.compile.autotune_replay import MISSING_ENTRY
from hloprobe.report import explain_autotune

_ON = "autotuned on NVIDIA A100-SXM4-40GB (a100.textproto: CUBLASLT_FISSION)"


def _result(n: int, selection: str | None):
  r = recorded.config_result(
    recorded.load(f"seed_a100_n{n}_bfloat16", "0.12.0.1")
  )
  fates = list(r.compilation.fates)
  fates[0] = dataclasses.replace(fates[0], selection=selection)
  return dataclasses.replace(
    r, compilation=dataclasses.replace(r.compilation, fates=tuple(fates))
  )


class SelectionsTest(absltest.TestCase):
  def test_one_line_per_site_and_selection(self):
    lines = explain_autotune.site_selections([_result(2, _ON), _result(9, _ON)])
    self.assertEqual(lines, (f"site 0 (bfloat16; n = 2, 9): {_ON}",))
    missing = explain_autotune.site_selections([_result(2, MISSING_ENTRY)])
    self.assertEqual(missing, (f"site 0 (bfloat16; n = 2): {MISSING_ENTRY}",))

  def test_autotuned_and_no_results(self):
    self.assertTrue(
      explain_autotune.autotuned(_result(2, _ON).compilation.fates[0])
    )
    self.assertFalse(
      explain_autotune.autotuned(_result(2, MISSING_ENTRY).compilation.fates[0])
    )
    self.assertEqual(explain_autotune.site_selections([_result(2, None)]), ())


if __name__ == "__main__":
  absltest.main()
