"""numerics/executed.py: a case's program lowered (no XLA compile) and run
in the numpy executor. Expected values are numpy float64 on the same
inputs (widen: every gemm at F64), and jax's own refusal to lower cuDNN
attention for the CPU named in one line."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
from absl.testing import absltest

from hloprobe.compile import Case
from hloprobe.numerics import executed


def _args():
  g = np.random.default_rng(0)
  return (
    g.standard_normal((2, 3)).astype(np.float32),
    g.standard_normal((3, 4)).astype(np.float32),
  )


class ProgramTest(absltest.TestCase):
  def test_lowered_and_run_in_float64(self):
    case = Case("mm", "a matmul", lambda x, w: (x @ w, x.sum()), _args)
    x, w = _args()
    program = executed.lower_program(case, (x, w))
    self.assertIsNone(program.why_not)
    self.assertEqual(program.shapes, ((2, 4), ()))
    run = program.run(widen=True)
    self.assertIsNone(run.why_not)
    np.testing.assert_allclose(
      run.outputs[0], x.astype(np.float64) @ w.astype(np.float64), rtol=1e-15
    )
    self.assertEqual(run.outputs[0].dtype, np.float64)

  def test_gpu_only_primitive_named(self):
    q = np.zeros((1, 4, 2, 8), ml_dtypes.bfloat16)
    attention = lambda q: jax.nn.dot_product_attention(
      q, q, q, implementation="cudnn"
    )
    case = Case("att", "cuDNN attention", attention, lambda: (q,))
    program = executed.lower_program(case, (q,))
    self.assertEqual(
      program.why_not,
      "GPU-only primitive dot_product_attention_fwd has no CPU lowering for "
      "the executor's check",
    )
    self.assertEqual(program.run(widen=True).outputs, None)


if __name__ == "__main__":
  absltest.main()
