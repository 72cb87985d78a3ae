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

import dataclasses
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
from hloprobe.sites.integer_rules import integer_algorithm

_DATA = os.path.join(
  os.path.dirname(os.path.dirname(__file__)), "intdots_testdata"
)


def _read(name: str, folder: str = "int_to_f32_a100_n8") -> str:
  path = os.path.join(_DATA, folder, name)
  with open(path, encoding="utf-8") as f:
    return f.read()


class TritonSatfiniteTest(absltest.TestCase):
  """An s8 x s8 -> s32 Triton gemm: mma's `.satfinite` clamps its s32
  accumulator (PTX ISA, mma's integer `.satfinite`) instead of wrapping,
  so the wrap rule holds only where one accumulator chain (K / split-K
  products of at most 128 * 128 = 2^14 each) stays within 2^31 - 1.
  Fixture: s8[8,262144] x s8[262144,16] on the a100, jaxlib 0.12.0.1
  (compiled by hand; its PTX kept)."""

  _FOLDER = "s8_s32_long_k_a100_n8"

  def _fate(self):
    text = _read("optimized_hlo.txt", self._FOLDER)
    module = parse_hlo_module(text)
    sites = parse_stablehlo_dots(_read("stablehlo.txt", self._FOLDER))
    (fate,) = resolve(
      map_dot_sites(sites, module), module, [], get_target("a100")
    )
    return text, fate

  def test_split_chains_stay_within_s32_and_wrap(self):
    text, fate = self._fate()
    # What the rule rests on, read from the fixture itself: 128 partials
    # of K 2048 each, added by an s32 reduce; the gemm's mma saturates.
    self.assertIn("s32[128,8,16]{2,1,0} fusion(", text)
    ptx = _read("gemm_fusion_dot.ptx", self._FOLDER)
    self.assertIn("mma.sync.aligned.m16n8k32.row.col.satfinite.s32", ptx)
    self.assertEqual((fate.fate, fate.split_k), (Fate.TRITON_GEMM, 128))
    # 2048 * 2^14 = 2^25 <= 2^31 - 1: no chain clamps.
    self.assertEqual(fate.effective_algorithm, EXACT_INTEGER)

  def test_one_chain_past_s32_has_no_outcome(self):
    _, fate = self._fate()
    # The same site unsplit: one chain of 262144 products of up to 2^14
    # reaches 2^32 > 2^31 - 1, where .satfinite would clamp.
    whole = dataclasses.replace(fate, split_k=None)
    algorithm, why = integer_algorithm(whole, get_target("a100"))
    self.assertIsNone(algorithm)
    self.assertIn("4294967296 > 2^31 - 1", why)
    self.assertIn(".satfinite", why)


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
