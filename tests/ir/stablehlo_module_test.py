"""ir/stablehlo_module.py: StableHLO read back as text and as bytecode,
its name and `@main`'s parameters, and `stablehlo.dot` written as a
dot_general. The module is jax's own lowering (no XLA compile) of
f(x: f32[2,3], w: bf16[3]) named `jit_f`; a plain `stablehlo.dot` (an
op jax no longer writes) is written here in its documented form
(stablehlo spec, `dot`: lhs [m, k] x rhs [k, n])."""

from __future__ import annotations

import io

import jax
import ml_dtypes
import numpy as np
from absl.testing import absltest

from hloprobe.errors import HloParseError
from hloprobe.ir import stablehlo_module

_DOT = """module @m {
  func.func public @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
    %0 = stablehlo.dot %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
}
"""


def f(x, w):
  return x * w.astype(np.float32)


class ReadTest(absltest.TestCase):
  def test_text_and_bytecode_of_jax_lowering(self):
    lowered = jax.jit(f).lower(
      np.ones((2, 3), np.float32), np.ones(3, ml_dtypes.bfloat16)
    )
    text = stablehlo_module.read_stablehlo_module(lowered.as_text())
    self.assertEqual(text.name, "jit_f")
    self.assertEqual(text.parameters, (((2, 3), "f32"), ((3,), "bf16")))
    ir_module = lowered.compiler_ir("stablehlo")
    with ir_module.context:
      buf = io.BytesIO()
      ir_module.operation.write_bytecode(buf)
    code = stablehlo_module.read_stablehlo_module(buf.getvalue())
    self.assertEqual(code.parameters, text.parameters)

  def test_dot_becomes_dot_general(self):
    m = stablehlo_module.read_stablehlo_module(_DOT)
    self.assertNotIn("stablehlo.dot ", m.text)
    self.assertIn("stablehlo.dot_general", m.text)
    self.assertIn("contracting_dims = [1] x [0]", m.text)

  def test_bad_text_is_one_error(self):
    with self.assertRaisesRegex(
      HloParseError, r"^StableHLO does not parse: line 1:"
    ):
      stablehlo_module.read_stablehlo_module("module { nope }")

  def test_a_name_that_is_not_utf8_is_one_error(self):
    # MLIR keeps the bytes E6 ("\\E6" in its text), which are not UTF-8:
    # the bindings' str() of them raised a RuntimeError.
    with self.assertRaisesRegex(HloParseError, "name is not UTF-8"):
      stablehlo_module.read_stablehlo_module('module @"jit_\\E6" {}')


if __name__ == "__main__":
  absltest.main()
