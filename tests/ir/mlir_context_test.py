"""ir/mlir_context.py: MLIR text parsed in a fresh context that knows the
dialects jax prints. The module is what jax's own lowering writes
(`jax.jit(f).lower(...).as_text()`, no XLA compile); a broken copy of it
fails with the line and column of the first error, counted by hand."""

from __future__ import annotations

import jax
import numpy as np
from absl.testing import absltest

from hloprobe.errors import HloParseError
from hloprobe.ir import mlir_context


def _lowered() -> str:
  x = np.ones((2, 3), np.float32)
  return jax.jit(lambda a: jax.numpy.tanh(a @ a.T)).lower(x).as_text()


class ParseTest(absltest.TestCase):
  def test_jax_lowering_parses_and_verifies(self):
    module = mlir_context.parse_mlir_module(_lowered())
    names = [op.name for op in module.body.operations[0].regions[0].blocks[0]]
    self.assertIn("stablehlo.dot_general", names)
    self.assertIn("stablehlo.tanh", names)

  def test_a_broken_module_names_line_and_column(self):
    text = "module {\n  func.func @f() {\n    %0 = nosuch.op : () -> ()\n"
    with self.assertRaisesRegex(
      HloParseError, r"^\[hloprobe\] StableHLO does not parse: line 3:\d+: "
    ):
      mlir_context.parse_mlir_module(text)

  def test_attributes_of_the_stablehlo_dialect(self):
    attr = mlir_context.parse_mlir_attribute(
      "[#stablehlo<precision HIGH>, #stablehlo<precision HIGHEST>]"
    )
    self.assertEqual(len(attr), 2)
    with self.assertRaisesRegex(HloParseError, "MLIR attribute '#nope<x>'"):
      mlir_context.parse_mlir_attribute("#nope<x>")


if __name__ == "__main__":
  absltest.main()
