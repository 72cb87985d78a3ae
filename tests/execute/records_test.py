"""execute/records.py: what the executor records of a run, on the recorded
a100 compile of the seed at n = 2 (jaxlib 0.12.0.1,
tests/testdata/compiles/seed_a100_n2_bfloat16). Expected values are the
module read by hand: three Triton gemm fusions (gemm_fusion_dot, .1, .2)
each holding one dot (dot.4, .5, .6) at builtin_cases.py line 104 (its
FileLocations table), run at the algorithm given for the first fusion
and the default (F32) for the others; a complete run, one output f32[2]."""

from __future__ import annotations

import os

import numpy as np
import testutil
from absl.testing import absltest

from hloprobe.execute import execute_module
from hloprobe.execute.records import GemmCall, NotExecuted
from hloprobe.ir import parse_hlo_module

_HLO = os.path.join(
  testutil.ROOT,
  "tests/testdata/compiles/seed_a100_n2_bfloat16/jaxlib0.12.0.1/optimized.hlo",
)


class ExecutionRecordTest(absltest.TestCase):
  def test_gemm_calls_of_the_seed(self):
    with open(_HLO, encoding="utf-8") as f:
      module = parse_hlo_module(f.read())
    params = module.entry.parameters()
    args = [np.ones(params[i].shape.dims, np.float32) for i in sorted(params)]
    run = execute_module(
      module, args, algorithms={"gemm_fusion_dot": "TF32_TF32_F32"}
    )
    self.assertTrue(run.complete)
    self.assertEqual([o.shape for o in run.outputs], [(2,)])
    self.assertEqual(
      [(g.instruction, g.fusions, g.algorithm) for g in run.gemms],
      [
        ("dot.4", ("gemm_fusion_dot",), "TF32_TF32_F32"),
        ("dot.5", ("gemm_fusion_dot.1",), "F32_F32_F32"),
        ("dot.6", ("gemm_fusion_dot.2",), "F32_F32_F32"),
      ],
    )
    first = run.gemms[0]
    self.assertIsInstance(first, GemmCall)
    self.assertEqual(
      (first.kind, first.source_line), ("triton gemm fusion", 104)
    )
    self.assertEqual((first.alpha, first.beta, first.epilogue), (1, 0.0, None))

  def test_not_executed_in_words(self):
    self.assertEqual(
      str(
        NotExecuted("custom-call.3", "__cudnn$fmhaSoftmax", "no numpy model")
      ),
      "not executed: __cudnn$fmhaSoftmax (custom-call.3: no numpy model)",
    )


if __name__ == "__main__":
  absltest.main()
