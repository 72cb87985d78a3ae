"""compile/rejections.py: jax's own error for a primitive without a CPU
lowering, named in words. The error is jax's, raised here by lowering
(no XLA compile) cuDNN attention for the CPU: jax registers
dot_product_attention_fwd for CUDA only
(jax/_src/cudnn/fused_attention_stablehlo.py)."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
from absl.testing import absltest

from hloprobe.compile import rejections


def _cudnn_attention_on_cpu() -> BaseException:
  q = np.zeros((1, 4, 2, 8), ml_dtypes.bfloat16)  # no XLA op to make it
  attention = lambda q: jax.nn.dot_product_attention(
    q, q, q, implementation="cudnn"
  )
  try:
    jax.jit(attention).lower(q)
  except Exception as e:  # noqa: BLE001 (whatever jax raises is the input)
    return e
  raise AssertionError("jax lowered cuDNN attention for the CPU")


class MissingLoweringTest(absltest.TestCase):
  def test_gpu_only_primitive_named(self):
    self.assertEqual(
      rejections.missing_lowering(_cudnn_attention_on_cpu()),
      "GPU-only primitive dot_product_attention_fwd has no CPU lowering",
    )

  def test_other_primitives_and_other_errors(self):
    other = NotImplementedError(
      "MLIR translation rule for primitive 'my_prim' not found for platform cpu"
    )
    self.assertEqual(
      rejections.missing_lowering(other),
      "primitive my_prim has no CPU lowering",
    )
    self.assertIsNone(rejections.missing_lowering(ValueError("shapes")))


if __name__ == "__main__":
  absltest.main()
