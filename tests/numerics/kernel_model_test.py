"""The kernel model's instructions against MMA-Sim's model, bit for bit.

tests/testdata/mmasim/reference.json holds, per `mma` shape and type that
hloprobe reads from PTX (and the others MMA-Sim lists with f32
accumulation), one 16x8 tile's D on Ampere (sm_80) and Hopper (sm_90),
computed by make_reference.py beside it: MMA-Sim's documented model
(microsoft/MMA-Sim, mmasim 2.1.1, `t_fdpa`) restated in exact rationals.
"""

import json
import pathlib

import numpy as np
import pytest

from hloprobe.numerics import kernel_model as km

_REFERENCE = json.loads(
  (
    pathlib.Path(__file__).parents[1] / "testdata/mmasim/reference.json"
  ).read_text()
)


def _f32(hexes, shape):
  bits = np.array([int(h, 16) for h in hexes], np.uint32)
  return bits.view(np.float32).reshape(shape)


@pytest.mark.parametrize(
  "case", _REFERENCE["cases"], ids=lambda c: f"{c['arch']}-{c['opcode']}"
)
def test_mma_tile_bit_for_bit(case):
  ins = km.instruction(case["opcode"], case["sm"])
  assert ins is not None
  k = case["k"]
  a = _f32(case["a_f32_hex"], (16, k))
  b = _f32(case["b_f32_hex"], (k, 8))
  c = _f32(case["c_f32_hex"], (16, 8))
  want = _f32(case["d_f32_hex"], (16, 8))
  a_vec = np.broadcast_to(a[:, None, :], (16, 8, k))
  b_vec = np.broadcast_to(b.T[None, :, :], (16, 8, k))
  got = km.mma(a_vec, b_vec, c, ins)
  np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_every_ptx_flavour_in_the_fixtures_is_modelled():
  # The mma opcodes the recorded compiles hold (tests/testdata/compiles).
  for opcode in (
    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
  ):
    for sm in (80, 86, 89, 90):
      assert km.instruction(opcode, sm) is not None
  refs = {c["opcode"] for c in _REFERENCE["cases"]}
  assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in refs
  assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in refs


def test_not_modelled_is_none():
  assert (
    km.instruction("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 75)
    is None
  )
  assert (
    km.instruction("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 80)
    is None
  )
  assert (
    km.instruction("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 89)
    is None
  )


def test_hand_checked_truncating_adder():
  # c = 1, four products 2^-25 (a = 2^-12, b = 2^-13): the exact sum is
  # 1 + 2^-23. Hopper keeps F = 25 fraction bits when aligning, so each
  # term survives: 1 + 2^-23. Ampere keeps F = 24 and adds k8 as two groups
  # of four: 2^-25 truncates to 0 in both, leaving 1.0. (An IEEE f32 chain
  # gives 1.0; f32 pairwise of the products first gives 1 + 2^-23.)
  a = np.full((1, 8), 2.0**-12, np.float32)
  a[0, 4:] = 0.0
  b = np.full((1, 8), 2.0**-13, np.float32)
  c = np.ones(1, np.float32)
  opcode = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
  hopper = km.mma(a, b, c, km.instruction(opcode, 90))
  ampere = km.mma(a, b, c, km.instruction(opcode, 80))
  assert hopper[0] == np.float32(1 + 2.0**-23)
  assert ampere[0] == np.float32(1.0)


def test_hand_checked_round_toward_zero_output():
  # c = 1 and products 2^-23, 2^-24, 2^-25 (a = 2^-12; b = 2^-11, 2^-12,
  # 2^-13): exact 1 + 7 * 2^-25 = 1 + 1.75 * 2^-23. Hopper's F = 25 keeps
  # every term; the normalised sum is truncated to f32: 1 + 2^-23, where
  # round-to-nearest would give 1 + 2^-22.
  a = np.zeros((1, 8), np.float32)
  b = np.zeros((1, 8), np.float32)
  a[0, :3] = 2.0**-12
  b[0, :3] = [2.0**-11, 2.0**-12, 2.0**-13]
  c = np.ones(1, np.float32)
  ins = km.instruction("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 90)
  assert km.mma(a, b, c, ins)[0] == np.float32(1 + 2.0**-23)


def test_kernel_gemm_walks_k_in_steps_and_pads():
  # K = 12 with k8 steps: the second step is padded with zeros. Against
  # the instruction applied step by step by hand.
  rng = np.random.default_rng(0)
  a = rng.standard_normal((1, 3, 12)).astype(np.float32)
  b = rng.standard_normal((1, 12, 2)).astype(np.float32)
  ins = km.instruction("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 80)
  got = km.kernel_gemm(a, b, ins, tf32_rounding=None)
  for i in range(3):
    for j in range(2):
      acc = np.zeros(1, np.float32)
      acc = km.mma(a[0, i, None, :8], b[0, None, :8, j], acc, ins)
      tail_a = np.zeros((1, 8), np.float32)
      tail_b = np.zeros((1, 8), np.float32)
      tail_a[0, :4], tail_b[0, :4] = a[0, i, 8:], b[0, 8:, j]
      acc = km.mma(tail_a, tail_b, acc, ins)
      assert got[0, i, j] == acc[0]


def test_tf32_rna_ties_away():
  # 1 + 2^-11 is half a TF32 ulp above 1 (10 fraction bits): ties away -> 1 + 2^-10.
  x = np.array([1 + 2.0**-11, -(1 + 2.0**-11), 1 + 2.0**-12], np.float32)
  want = np.array([1 + 2.0**-10, -(1 + 2.0**-10), 1.0], np.float32)
  np.testing.assert_array_equal(km.tf32_rna(x), want)
