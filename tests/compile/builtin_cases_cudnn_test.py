"""The built-in case `cudnn_attention` (issue 24): listed, bf16 q, k, v."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from absl.testing import absltest

from hloprobe.compile import CASES
from hloprobe.report.listings import cases_listing


class CaseTest(absltest.TestCase):
  def test_listed_by_hloprobe_cases(self):
    self.assertIn("cudnn_attention", CASES)
    names = [line.split()[0] for line in cases_listing().splitlines()]
    # The issues' cases come last, in ISSUE_CASES' order.
    self.assertEqual(
      names[names.index("cudnn_attention") - 1], "sharded_matmul"
    )

  def test_bf16_q_k_v_batched_on_axis_0(self):
    case = CASES["cudnn_attention"]
    full = case.full_inputs()
    self.assertEqual([a.shape for a in full], [(9, 128, 4, 64)] * 3)
    self.assertEqual({a.dtype for a in full}, {np.dtype(ml_dtypes.bfloat16)})
    self.assertEqual(case.full_size(full), 9)


if __name__ == "__main__":
  absltest.main()
