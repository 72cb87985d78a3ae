"""The kernel model's bits per n (issue 38 item 3's third proof), from
recorded compiles (tests/testdata/kernels/0.12.0.1/model_bits_a100_n*:
`relu(x @ w0 + b0) @ w1` under TF32 on the compile-only a100; recorded
by record_model_bits.py) and hand-made kernels: no sweep.

Expected values from independent sources:
  - which sizes are bit-exact: the fixtures' text read by hand (n = 1:
    both dots a multiply+reduce, an `input_reduce_fusion`; n = 8, 32, 64:
    two `__triton_nested_gemm_fusion`s, one `mma.sync.aligned.m16n8k8
    .row.col.f32.tf32.tf32.f32` flavour, `cvt.rna.tf32.f32`, no split-K;
    site 1's K tile, the nested dot's "sizes", 16 at n = 8 and 128 at
    n = 32 and 64);
  - row 0's bits: `_mma_row`, a scalar restatement of MMA-Sim's Ampere
    T-FDPA rules in exact rationals (`fractions.Fraction`) with the TF32
    rounding (`cvt.rna`, ties away) done on the f32 bit patterns by
    numpy, and the bias add and ReLU in numpy float32: not hloprobe's
    kernel model.
"""

from __future__ import annotations

import math
import os
import sys
from fractions import Fraction

import numpy as np
import pytest
from absl.testing import absltest

from hloprobe import kernels
from hloprobe.compile import get_target
from hloprobe.invariance import invariance_of
from hloprobe.invariance.answer import config_key
from hloprobe.invariance.kernel_identity import RowKernel, records_as_kernels
from hloprobe.invariance.model_bits import (
  GroupModel,
  Inexact,
  NotModelled,
  _kernel_why,
  model_rows,
  model_sites,
)
from hloprobe.ir import (
  as_precision,
  parse_hlo_module,
  parse_ptx,
  parse_stablehlo_dots,
)
from hloprobe.numerics import site_model
from hloprobe.records import Compilation, Config, ConfigResult
from hloprobe.report.invariance_causes import model_why_words
from hloprobe.report.invariance_words import answer_lines, invariance_json
from hloprobe.sites import map_dot_sites, resolve

_DATA = os.path.join(os.path.dirname(__file__), "..", "testdata", "kernels")
# n = 1's site 0 made a multiply+reduce: not modelled.
_MR = NotModelled(
  Inexact.SITE, site=0, model=site_model("multiply+reduce", (), "8.0")
)
sys.path.insert(0, _DATA)
import record_model_bits as recorded  # noqa: E402

_SIZES = recorded.BATCH_SIZES  # 1, 8, 32, 64
_KEY = ("model_bits", "a100", "tensorfloat32", "baseline")


def _configs():
  """The recorded configs (fates resolved as the sweep resolves them)
  and each one's row kernels (the kernels stage's records)."""
  a100 = get_target("a100")
  results, found = [], {}
  for n in _SIZES:
    stem = os.path.join(_DATA, "0.12.0.1", f"model_bits_a100_n{n}")
    text = {}
    for ext in ("stablehlo", "hlo", "ptx"):
      with open(f"{stem}.{ext}.txt", encoding="utf-8") as f:
        text[ext] = f.read()
    module = parse_hlo_module(text["hlo"])
    sites = map_dot_sites(parse_stablehlo_dots(text["stablehlo"]), module)
    fates = resolve(sites, module, parse_ptx(text["ptx"]), a100)
    r = ConfigResult(
      Config("model_bits", a100, n, as_precision("tensorfloat32")),
      Compilation(
        stablehlo=text["stablehlo"],
        optimized_hlo=text["hlo"],
        fates=tuple(fates),
      ),
    )
    records = kernels.read_kernels(text["hlo"], n, [text["ptx"]], "cuda")
    results.append(r)
    found[n] = records_as_kernels(records, r)
  return results, found


def _tf32_rna(x: np.ndarray) -> np.ndarray:
  """f32 -> TF32, nearest, ties away: add half of the 13 dropped bits'
  unit to the bit pattern and clear them (PTX ISA, cvt.rna.tf32.f32)."""
  u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
  return (((u + 0x1000) & 0xFFFFE000).astype(np.uint32)).view(np.float32)


def _exponent(x: float) -> int:
  """e with |x| = s 2^e, 1 <= s < 2 (normal f32 and TF32 values)."""
  return math.frexp(x)[1] - 1


def _rz_f32(v: Fraction) -> np.float32:
  """An exact rational to f32 by truncation (normal results)."""
  if v == 0:
    return np.float32(0.0)
  e = _exponent(float(v))
  if abs(v) >= Fraction(2) ** (e + 1):  # float() rounded up a power of 2
    e += 1
  unit = Fraction(2) ** (max(e, -126) - 23)
  return np.float32(float(math.trunc(v / unit) * unit))


def _fdpa(a, b, c: np.float32) -> np.float32:
  """One Ampere T-FDPA on TF32 values (MMA-Sim's rules: products exact,
  each aligned to the largest exponent and truncated to 24 fraction
  bits, summed exactly, truncated to f32; a zero term's exponent -132)."""
  terms = [
    (Fraction(float(x)) * Fraction(float(y)), x, y) for x, y in zip(a, b)
  ]
  exps = [
    _exponent(float(x)) + _exponent(float(y)) if p != 0 else -132
    for p, x, y in terms
  ]
  exps.append(_exponent(float(c)) if c != 0 else -132)
  values = [p for p, _, _ in terms] + [Fraction(float(c))]
  unit = Fraction(2) ** (max(exps) - 24)
  return _rz_f32(sum(math.trunc(v / unit) * unit for v in values))


def _mma_row(x: np.ndarray, w: np.ndarray) -> np.ndarray:
  """Row x (K,) times w (K, N) as the TF32 m16n8k8 gemm computes it: the
  operands rounded (cvt.rna), then per output K walked in steps of 8,
  each step two T-FDPAs of 4 products, from +0.0."""
  xr, wr = _tf32_rna(x), _tf32_rna(w)
  out = np.zeros(w.shape[1], np.float32)
  for j in range(w.shape[1]):
    acc = np.float32(0.0)
    for k0 in range(0, len(xr), 4):
      acc = _fdpa(xr[k0 : k0 + 4], wr[k0 : k0 + 4, j], acc)
    out[j] = acc
  return out


def _expected_row0() -> np.ndarray:
  x, w0, b0, w1 = recorded.inputs()
  h = np.maximum(_mma_row(x[0], w0) + b0, np.float32(0.0))
  return _mma_row(h.astype(np.float32), w1)


class ModelSitesTest(absltest.TestCase):
  """Which recorded sizes the kernel model is bit-exact for (no compile)."""

  @classmethod
  def setUpClass(cls):
    cls.results, cls.kernels = _configs()

  def test_triton_gemms_are_bit_exact_multiply_reduce_is_not(self):
    for r in self.results:
      spec, why = model_sites(r, self.kernels[r.config.n])
      if r.config.n == 1:
        self.assertIsNone(spec)
        self.assertEqual((why.reason, why.site), (Inexact.SITE, 0))
        self.assertIn("multiply+reduce", model_why_words(why))
        continue
      self.assertIsNone(why, r.config.n)
      self.assertEqual(sorted(spec.sites), [0, 1])
      for s in spec.sites.values():
        self.assertEqual(s.ins.k, 8)
        self.assertEqual((s.split_k, s.tf32_rounding), (1, "rna"))
      self.assertEqual(spec.algorithms, ("TF32_TF32_F32",) * 2)

  def test_sizes_of_other_block_k_share_one_key(self):
    # Site 1's K tile is 16 at n = 8 and 128 at n = 32, 64 (by hand):
    # the model's arithmetic does not depend on it.
    keys = {
      model_sites(r, self.kernels[r.config.n])[0].key()
      for r in self.results
      if r.config.n != 1
    }
    self.assertLen(keys, 1)
    words = {
      k.record.field("block_k")
      for n in (8, 32)
      for k in self.kernels[n]
      if k.sites == (1,)
    }
    self.assertEqual(words, {"16", "128"})

  def test_a_group_classed_by_given_bits(self):
    # Row 0 per n given (as a worker computes it): 8 and 64 alike, 32
    # one ULP off; n = 1 by kernel identity, apart.
    from hloprobe.invariance.rows import ConfigRows

    base = np.array([1.0, 2.0], np.float32)
    moved = base.copy()
    moved[1] = np.nextafter(moved[1], np.float32(3))
    rows = {
      8: ConfigRows(8, (base,)),
      32: ConfigRows(32, (moved,)),
      64: ConfigRows(64, (base,)),
    }
    known = {
      config_key(r.config): self.kernels[r.config.n] for r in self.results
    }
    model = {_KEY: GroupModel(rows, {1: _MR})}
    (a,) = invariance_of(self.results, kernels=known, model=model)
    self.assertEqual(a.basis, "kernel identity")
    self.assertEqual(a.rows[0].classes, ((8, 64), (1,), (32,)))
    self.assertEqual(a.rows[0].ulps, (0, None, 1))
    self.assertEqual(a.model_sizes, (8, 32, 64))
    self.assertIs(a.invariant, False)


@pytest.mark.compiles
@pytest.mark.cpu_numerics
class ModelRowsTest(absltest.TestCase):
  """Row 0 by the kernel model against `_mma_row` (one XLA:CPU compile:
  the model's evaluation)."""

  @classmethod
  def setUpClass(cls):
    cls.results, cls.kernels = _configs()
    specs = [
      s
      for r in cls.results
      if (s := model_sites(r, cls.kernels[r.config.n])[0]) is not None
    ]
    cls.rows = model_rows(recorded.CASE, recorded.inputs(), specs)

  def test_row0_bits_are_the_independent_ones(self):
    want = _expected_row0()
    self.assertEqual(sorted(self.rows), [8, 32, 64])
    for n, got in self.rows.items():
      (leaf,) = got.row0
      np.testing.assert_array_equal(
        leaf.view(np.uint32), want.view(np.uint32), err_msg=f"n = {n}"
      )

  def test_answer_backed_by_the_models_bits(self):
    known = {
      config_key(r.config): self.kernels[r.config.n] for r in self.results
    }
    why = {1: model_sites(self.results[0], self.kernels[1])[1]}
    model = {_KEY: GroupModel(self.rows, why)}
    (a,) = invariance_of(self.results, kernels=known, model=model)
    # 8, 32 and 64: one class by the model's bits though kernel identity
    # splits them (site 1's block_k and epilogue); n = 1 apart.
    self.assertEqual(a.rows[0].classes, ((8, 32, 64), (1,)))
    self.assertEqual(a.identity, ((1,), (8,), (32,), (64,)))
    self.assertEqual(a.model_sizes, (8, 32, 64))
    self.assertEqual((a.model_why.n, a.model_why.site), (1, 0))
    lines = "\n".join(answer_lines([a]))
    self.assertIn("by the kernel model's bits", lines)
    self.assertIn("n = 1: site 0", lines)
    doc = invariance_json([a])["groups"][0]
    self.assertEqual(doc["model_sizes"], [8, 32, 64])
    # Without n = 1, every size is the model's: basis "kernel model".
    rest = [r for r in self.results if r.config.n != 1]
    (b,) = invariance_of(
      rest, kernels=known, model={_KEY: GroupModel(self.rows)}
    )
    self.assertEqual(b.basis, "kernel model")
    self.assertIs(b.invariant, True)
    self.assertIn(
      "backed by the kernel model's bits", "\n".join(answer_lines([b]))
    )

  def test_verify_requires_invariant_by_the_models_bits(self):
    # `verify --require=invariant` on n = 8, 32, 64: PASS by the model's
    # bits; by kernel identity alone (no model) it FAILs (block_k).
    from hloprobe.verify.requirements import _invariant

    rest = [r for r in self.results if r.config.n != 1]
    known = {config_key(r.config): self.kernels[r.config.n] for r in rest}
    model = {_KEY: GroupModel(self.rows)}
    self.assertTrue(_invariant(rest, None, known, (), model).passed)
    self.assertFalse(_invariant(rest, None, known, ()).passed)


def _kernel(kind, ops, name="k", sites=()):
  rec = type("Rec", (), {"ops": tuple(ops)})()
  return RowKernel(name, kind, sites, "sig", None, rec)


class KernelWhyTest(absltest.TestCase):
  def test_exact_elementwise_passes(self):
    self.assertIsNone(
      _kernel_why(_kernel("elementwise", ["add", "max"]), frozenset())
    )

  def test_a_transcendental_is_not_modelled(self):
    why = _kernel_why(_kernel("elementwise", ["tanh", "add"]), frozenset())
    self.assertEqual((why.reason, why.ops), (Inexact.COMPUTES, ("tanh",)))

  def test_multiply_and_add_without_their_dataflow_is_unknown(self):
    why = _kernel_why(_kernel("elementwise", ["mul", "add"]), frozenset())
    self.assertEqual(why.reason, Inexact.MULTIPLY_ADD)
    self.assertIn("whether one feeds the other", model_why_words(why))

  def test_the_control_is_bit_exact_its_note_names_no_add(self):
    # Issue 38: the elementwise control's a100 kernel (relu((x - b) * s),
    # recorded: tests/kernels/fp_contract_test.py) was said to hold "a
    # multiply and an add"; its HLO is subtract, multiply, maximum.
    with open(
      os.path.join(_DATA, "0.12.0.1", "elementwise_only_a100_n8.hlo.txt")
    ) as f:
      hlo = f.read()
    with open(
      os.path.join(_DATA, "0.12.0.1", "elementwise_only_a100_n8.ptx.txt")
    ) as f:
      ptx = f.read()
    (rec,) = kernels.read_kernels(hlo, 8, [ptx])
    k = RowKernel(rec.name, "elementwise", (), "sig", None, rec)
    self.assertIsNone(_kernel_why(k, frozenset()))

  def test_a_multiply_feeding_a_subtract_is_settled_by_the_ptx(self):
    pair = ("multiply mul.7.5 -> subtract sub.7.3",)

    def why(fusable):
      rec = type(
        "Rec",
        (),
        {"ops": ("mul", "sub"), "contractible": pair, "ptx_fusable": fusable},
      )()
      k = RowKernel("loop_fusion", "elementwise", (), "s", None, rec)
      return model_why_words(_kernel_why(k, frozenset()))

    # Each rounded on its own in the PTX (mul.rn, sub.rn): not fused.
    self.assertIsNone(why(()))
    self.assertEqual(
      why(("fma.rn.f32",)),
      "loop_fusion: multiply mul.7.5 -> subtract sub.7.3 in one kernel, and "
      "its PTX has fma.rn.f32 (a multiply fused into an add, or left for "
      "ptxas to fuse: one rounding where XLA:CPU's kernel model rounds "
      "twice)",
    )
    self.assertIn("its PTX not read", why(None))
    self.assertNotIn(" add ", why(None).split("(")[0])

  def test_a_reduction_is_not_modelled(self):
    why = _kernel_why(_kernel("reduction", ["reduce_sum"]), frozenset())
    self.assertEqual(why.reason, Inexact.ORDER)

  def test_a_gemm_fusing_gelu_is_not_modelled(self):
    k = _kernel("contraction", ["dot_general", "tanh"], "g", (0,))
    why = _kernel_why(k, frozenset({"g"}))
    self.assertEqual((why.reason, why.ops), (Inexact.FUSES, ("tanh",)))
    self.assertIsNone(
      _kernel_why(
        _kernel("contraction", ["dot_general"], "g"), frozenset({"g"})
      )
    )


if __name__ == "__main__":
  absltest.main()
