"""Integer operands with a float result (found trying to break issue 24).

`lax.dot_general(x, w, preferred_element_type=jnp.float32)` with x
s8[8,4096], w s8[4096,16] was called "exact integer". It is not an
integer dot: XLA converts the operands and sums in f32. The independent
sources: the recorded a100 optimized module (jaxlib 0.12.0.1,
tests/intdots_testdata/int_to_f32_a100_n8, written by `sweep --output_dir`
of that program: a `__cublas$lt$matmul` of s8 operands with an f32[16,8,16]
result, split-K 16 added by an f32 reduce), cuBLAS's documented type table
(A/B CUDA_R_8I, C/D CUDA_R_32F under CUBLAS_COMPUTE_32F), and exact integer
arithmetic: a sum past 2^24 is not representable in f32.
"""

from __future__ import annotations

import os

import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import absltest
from jax import lax

from hloprobe.compile import get_target
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.numerics.emulate import emulate_case
from hloprobe.sites import EXACT_INTEGER, Fate, resolve
from hloprobe.sites.dot_sites import map_dot_sites

_DATA = os.path.join(
  os.path.dirname(os.path.dirname(__file__)), "intdots_testdata"
)


def _read(name: str) -> str:
  path = os.path.join(_DATA, "int_to_f32_a100_n8", name)
  with open(path, encoding="utf-8") as f:
    return f.read()


class IntegerOperandsFloatResultTest(absltest.TestCase):
  def test_the_recorded_gemm_sums_in_f32(self):
    module_text = _read("optimized_hlo.txt")
    # What the rule rests on, read from the module itself.
    self.assertIn('custom_call_target="__cublas$lt$matmul"', module_text)
    self.assertIn(
      "(f32[16,8,16]{2,1,0}, s8[4194304]{0}) custom-call(", module_text
    )
    sites = parse_stablehlo_dots(_read("stablehlo.txt"))
    module = parse_hlo_module(module_text)
    (fate,) = resolve(
      map_dot_sites(sites, module), module, [], get_target("a100")
    )
    self.assertEqual(fate.fate, Fate.CUBLASLT)
    self.assertNotEqual(fate.effective_algorithm, EXACT_INTEGER)
    self.assertEqual(fate.effective_algorithm, "F32_F32_F32")
    self.assertIn("s8 x s8 -> f32", fate.algorithm_evidence)
    self.assertIn("not an integer dot", fate.algorithm_evidence)


def _dot(x, w):
  return lax.dot_general(
    x, w, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32
  )


@pytest.mark.compiles
class EmulatedSumsAreFloatSumsTest(absltest.TestCase):
  def test_a_sum_past_two_to_the_24_is_an_f32_sum(self):
    # 1099 products 127 * 127 = 16129 and one 127 * 1: the exact sum
    # 17725898 is past 2^24, where f32 holds even integers only.
    k = 1100
    x = np.full((1, k), 127, np.int8)
    w = np.full((k, 1), 127, np.int8)
    w[-1, 0] = 1
    products = (x[0].astype(np.int64) * w[:, 0].astype(np.int64)).tolist()
    exact = sum(products)
    self.assertGreater(exact, 2**24)
    # numpy's sequential f32 sum of the (exact) f32 products.
    total = np.float32(0)
    for p in products:
      total = np.float32(total + np.float32(p))
    got = emulate_case(_dot, (x, w), "F32_F32_F32", order="sequential")
    self.assertEqual(got.dtype, np.float32)
    self.assertEqual(float(got[0, 0]), float(total))
    self.assertNotEqual(float(got[0, 0]), exact)


if __name__ == "__main__":
  absltest.main()
