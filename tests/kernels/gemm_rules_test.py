"""kernels/gemm_rules.py: a gemm kernel's multiply instruction and the
algorithm it implies, read from hand-written sm_90 PTX
(tests/ir/testdata/ptx/handwritten_sm90.ptx: one
`wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16`; PTX ISA's wgmma
shapes). Moved from kernels/kernel_reader_test.py (InstructionTest)."""

from __future__ import annotations

import os

from absl.testing import absltest


class InstructionTest(absltest.TestCase):
  def test_wgmma_shape(self):
    # tests/ir/testdata/ptx/handwritten_sm90.ptx: one
    # `wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16`; the fence /
    # commit / wait bookkeeping is no multiply.
    from hloprobe.ir import parse_ptx
    from hloprobe.kernels import gemm_rules

    path = os.path.join(
      os.path.dirname(__file__),
      "..",
      "ir",
      "testdata",
      "ptx",
      "handwritten_sm90.ptx",
    )
    with open(path) as f:
      found = {k.name: k for k in parse_ptx(f.read())}
    words, algorithm = gemm_rules.instruction_words(
      found["wgmma_kernel"], "bf16"
    )
    self.assertEqual(
      words, "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16"
    )
    self.assertEqual(algorithm, "BF16_BF16_F32")
    self.assertEqual(
      gemm_rules.instruction_words(None, "f32")[0], "not read: no PTX kernel"
    )


if __name__ == "__main__":
  absltest.main()
