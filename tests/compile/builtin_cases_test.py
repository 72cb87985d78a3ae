"""The ten public reports ported as built-in cases, each with its diagnosis.

Every expected value comes from the diagnosis written down for each report
when it was triaged (fates, effective algorithms, split-K and the figures
measured with an independent numpy emulation), or from numpy float64 here. Compile-only GPU targets and the CPU; smallest
sizes that still show each diagnosis.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from absl.testing import absltest
from testutil import tf32_rna

from hloprobe import sweep
from hloprobe.compile import cases
from hloprobe.numerics import emulate

# Asserts CPU-computed floats: `make test-isa` reruns it under other ISAs.
pytestmark = [pytest.mark.cpu_numerics, pytest.mark.compiles]

F32, TF32 = "F32_F32_F32", "TF32_TF32_F32"


def _sweep(name, sizes, targets, precisions=("default",)):
  spec = sweep.SweepSpec((name,), sizes, precisions, targets)
  out = {}
  for r in sweep.run_sweep(spec):
    assert r.ok, (r.config.target.name, r.config.n, r.failure)
    out[r.config.target.name, r.config.n, r.config.precision] = r
  return out


def _fates(r):
  return [
    (f.fate.value, f.effective_algorithm, f.split_k)
    for f in r.compilation.fates
  ]


class CasesCommandTest(absltest.TestCase):
  def test_every_report_is_built_in_with_its_url(self):
    self.assertEqual(
      {c.name: c.url.rsplit("/", 1)[-1] for c in cases.CASES.values() if c.url},
      {
        "jax_27188": "27188",
        "jax_24909": "24909",
        "jax_15362": "15362",
        "jax_11628": "11628",
        "jax_22557": "22557",
        "jax_19444": "19444",
        "jax_21212": "21212",
        "tf_127577": "127577",
        "pytorch_105726": "105726",
        "mlx_3953": "3953",
      },
    )


class Jax27188Test(absltest.TestCase):
  def test_batch_1_strength_reduced_then_tf32_gemms(self):
    r = _sweep("jax_27188", (1, 32), ("a100",), ("default", "float32"))
    self.assertEqual(
      _fates(r["a100", 1, "default"]), [("multiply+reduce", F32, None)] * 2
    )
    self.assertEqual(
      _fates(r["a100", 32, "default"]), [("Triton gemm", TF32, None)] * 2
    )
    self.assertEqual(
      _fates(r["a100", 32, "float32"]), [("Triton gemm", F32, None)] * 2
    )
    # README: TF32-emulated max relative error 4.97e-4 at batch 32.
    p = r["a100", 32, "default"].prediction
    self.assertAlmostEqual(p.stats.max_rel, 4.97e-4, delta=0.05e-4)
    self.assertEqual(p.verdict, "explained by TF32_TF32_F32 at sites [0, 1]")


class Jax24909Test(absltest.TestCase):
  def test_gemms_at_one_frame_and_tensorfloat32_is_ieee(self):
    r = _sweep("jax_24909", (1, 8), ("a100",), ("default", "tensorfloat32"))
    for n in (1, 8):
      self.assertEqual(
        _fates(r["a100", n, "default"]), [("Triton gemm", TF32, None)] * 2
      )
      self.assertEqual(
        _fates(r["a100", n, "tensorfloat32"]), [("Triton gemm", F32, None)] * 2
      )
    # README: TF32-emulated relative error of the descriptor 6.1e-4.
    p = r["a100", 8, "default"].prediction
    self.assertAlmostEqual(p.stats.max_rel, 6.1e-4, delta=0.1e-4)


class Jax15362Test(absltest.TestCase):
  def test_batch_1_exact_f32_then_tf32_with_split_k(self):
    r = _sweep("jax_15362", (1, 8, 100), ("a100", "h100"))
    for t in ("a100", "h100"):
      self.assertEqual(
        _fates(r[t, 1, "default"]),
        [("multiply", F32, None)] + [("multiply+reduce", F32, None)] * 2,
      )
      self.assertEqual(
        r[t, 1, "default"].prediction.verdict, "within f32 noise"
      )
    split = {
      (t, n): _fates(r[t, n, "default"])[1]
      for t in ("a100", "h100")
      for n in (8, 100)
    }
    self.assertEqual(
      split,
      {
        ("a100", 8): ("Triton gemm", TF32, None),
        ("a100", 100): ("Triton gemm", TF32, 4),
        ("h100", 8): ("Triton gemm", TF32, 8),
        ("h100", 100): ("Triton gemm", TF32, 8),
      },
    )
    self.assertEqual(
      _fates(r["a100", 100, "default"])[2], ("multiply+reduce", F32, None)
    )
    # README: about 2e-5 relative to max |y|.
    p = r["a100", 100, "default"].prediction
    self.assertAlmostEqual(p.stats.max_rel, 2e-5, delta=0.5e-5)


class Jax11628Test(absltest.TestCase):
  def test_jacobian_is_m_rounded_to_tf32(self):
    r = _sweep("jax_11628", (1, 100), ("a100",))
    self.assertEqual(_fates(r["a100", 1, "default"]), [("gone", None, None)])
    self.assertEqual(r["a100", 1, "default"].prediction.verdict, "exact")
    self.assertEqual(
      _fates(r["a100", 100, "default"]), [("Triton gemm", TF32, None)]
    )
    # Each output is 1 * M[i, j] with M rounded to TF32: the error is M's
    # own TF32 rounding, max relative 2^-11 elementwise (README: 4.86e-4).
    mat = cases.get_case("jax_11628").make_inputs()[0]
    err = tf32_rna(mat).astype(np.float64) - mat
    p = r["a100", 100, "default"].prediction
    self.assertEqual(p.stats.max_abs, float(np.abs(err).max()))
    # README: std(J - M) 2.07e-4 (the report: 2.09e-4), max relative 4.86e-4.
    self.assertAlmostEqual(float(np.std(err)), 2.07e-4, delta=0.005e-4)
    self.assertAlmostEqual(
      float(np.max(np.abs(err) / np.abs(mat))), 4.86e-4, delta=0.005e-4
    )


class Jax22557Test(absltest.TestCase):
  def test_one_tf32_gemm_80_times_f32(self):
    r = _sweep("jax_22557", (4,), ("a100",))
    self.assertEqual(
      _fates(r["a100", 4, "default"]), [("Triton gemm", TF32, None)]
    )
    case = cases.get_case("jax_22557")
    args = case.full_inputs()
    ref = np.einsum("ij,kil->kjl", *(a.astype(np.float64) for a in args))
    fro = {
      alg: float(np.linalg.norm(emulate.emulate_case(case.fn, args, alg) - ref))
      for alg in (TF32, F32)
    }
    # README: 0.921 (TF32) against 0.0119 (f32); the report 0.923 / 0.0118.
    # The f32 figure depends on the summation order (the README's is
    # numpy's; XLA's CPU dot is more accurate here): only bounded.
    self.assertAlmostEqual(fro[TF32], 0.921, delta=0.01)
    self.assertLess(fro[F32], 0.0119 * 1.1)
    self.assertGreater(fro[TF32] / fro[F32], 50)


class Jax19444Test(absltest.TestCase):
  def test_split_k_gram_and_tf32_alone_stays_psd(self):
    r = _sweep("jax_19444", (16384,), ("a100", "h100"))
    self.assertEqual(
      _fates(r["a100", 16384, "default"]), [("Triton gemm", TF32, 32)]
    )
    self.assertEqual(
      _fates(r["h100", 16384, "default"]), [("Triton gemm", TF32, 64)]
    )
    case = cases.get_case("jax_19444")
    (o,) = case.inputs_for(None, 16384)
    # TF32 input rounding alone: a Gram matrix of rounded inputs, PSD.
    rounded = tf32_rna(o).astype(np.float64)
    psd = np.linalg.eigvalsh(rounded @ rounded.T / 64)[0]
    self.assertGreater(psd, -1e-10)
    # f32 accumulation alone (no TF32) makes it indefinite.
    t = np.asarray(emulate.emulate_case(case.fn, (o,), F32), np.float64)
    self.assertLess(np.linalg.eigvalsh(0.5 * (t + t.T))[0], -1e-6)


_CONVERT_RE = re.compile(
  r"= (\w+\[[\d,]+\])\{[\d,]+\} fusion\([^)]*\), kind=kLoop, "
  r"calls=%wrapped_convert"
)


class Jax21212Test(absltest.TestCase):
  def test_t4_converts_around_an_f32_cublaslt_gemm(self):
    r = _sweep("jax_21212", (1, 16), ("t4", "a100"))
    t4 = r["t4", 16, "default"]
    self.assertEqual([f.fate.value for f in t4.compilation.fates], ["cuBLASLt"])
    self.assertEqual(
      sorted(_CONVERT_RE.findall(t4.compilation.optimized_hlo)),
      ["bf16[16,1024]", "f32[1024,1024]", "f32[16,1024]"],
    )
    for t in ("t4", "a100"):
      self.assertEqual(
        [f.fate.value for f in r[t, 1, "default"].compilation.fates],
        ["multiply+reduce"],
      )
    a100 = r["a100", 16, "default"]
    self.assertEqual(
      [f.fate.value for f in a100.compilation.fates], ["Triton gemm"]
    )
    self.assertEqual(_CONVERT_RE.findall(a100.compilation.optimized_hlo), [])
    self.assertEqual(a100.prediction.verdict, "within bf16 output rounding")


class Tf127577Test(absltest.TestCase):
  def test_exactly_tf32(self):
    r = _sweep("tf_127577", (1, 256), ("a100", "h100", "cpu"))
    for t, split in (("a100", 4), ("h100", 8)):
      self.assertEqual(
        _fates(r[t, 1, "default"]), [("multiply+reduce", F32, None)]
      )
      self.assertEqual(
        _fates(r[t, 256, "default"]), [("Triton gemm", TF32, split)]
      )
    # README: TF32-emulated relative max 2.86e-4; float32 7.4e-7.
    p = r["a100", 256, "default"].prediction
    self.assertAlmostEqual(p.stats.max_rel, 2.86e-4, delta=0.03e-4)
    self.assertLess(r["cpu", 256, "default"].execution.stats.max_rel, 1.5e-6)
    self.assertEqual(p.verdict, "explained by TF32_TF32_F32 at sites [0]")


class Pytorch105726Test(absltest.TestCase):
  def test_split_k_depends_on_gpu_and_batch_within_f16_rounding(self):
    r = _sweep("pytorch_105726", (1, 2, 32), ("a100", "h100"))
    split = {
      (t, n): _fates(r[t, n, "default"])
      for t in ("a100", "h100")
      for n in (1, 2, 32)
    }
    f16 = "F16_F16_F32"
    self.assertEqual(
      split,
      {
        ("a100", 1): [("Triton gemm", f16, 4)],
        ("a100", 2): [("Triton gemm", f16, None)],
        ("a100", 32): [("Triton gemm", f16, None)],
        ("h100", 1): [("Triton gemm", f16, 4)],
        ("h100", 2): [("Triton gemm", f16, 4)],
        ("h100", 32): [("Triton gemm", f16, None)],
      },
    )
    for res in r.values():
      self.assertEqual(res.prediction.verdict, "within f16 output rounding")


class Mlx3953Test(absltest.TestCase):
  def test_k1_is_an_exact_multiply_k2_is_tf32(self):
    r = _sweep("mlx_3953", (1, 2), ("a100", "cpu"))
    for t in ("a100", "cpu"):
      for n in (1, 2):
        res = r[t, n, "default"]
        self.assertEqual(res.compilation.fates[0].fate.value, "multiply")
        self.assertEqual(dict(res.prediction.leaf_verdicts)["[0]"], "exact")
    self.assertEqual(
      r["cpu", 2, "default"].execution.leaf_stats[0].max_abs, 0.0
    )
    self.assertEqual(
      _fates(r["a100", 1, "default"])[1], ("multiply+reduce", F32, None)
    )
    self.assertEqual(
      _fates(r["a100", 2, "default"])[1], ("Triton gemm", TF32, None)
    )
    self.assertEqual(
      dict(r["a100", 2, "default"].prediction.leaf_verdicts)["[1]"],
      "explained by TF32_TF32_F32 at sites [1]",
    )


if __name__ == "__main__":
  absltest.main()
