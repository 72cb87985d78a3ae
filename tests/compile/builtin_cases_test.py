"""The ten public reports ported as built-in cases, each with its diagnosis.

Where the expected values come from:
  * errors (relative, Frobenius): numpy here, float64 against the same
    program with the operands of the TF32 sites rounded by `tf32_rna`
    (numpy bit arithmetic, PTX cvt.rna.tf32.f32), or a Higham bound. The
    reports' figures are quoted beside them only as a check of the port.
  * fates, effective algorithms and split-K factors: the diagnosis written
    for each report when it was triaged on jaxlib 0.10.2
    (../shared/cases/README.md), read by hand from XLA's optimized HLO
    and PTX, not from hloprobe, so an independent reading of XLA's output;
    split-K factors are also read here from the gemm fusion's shape in the
    optimized HLO by a regex (`_split_in_hlo`).
Compile-only GPU targets and the CPU; smallest sizes that still show each
diagnosis.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import testutil
from absl.testing import absltest
from testutil import tf32_rna

from hloprobe import engine
from hloprobe.api import DEFAULTS
from hloprobe.commands import common
from hloprobe.compile import cases
from hloprobe.numerics import emulate
from hloprobe.report.verdict_words import leaf_verdicts, prediction_words

# Asserts CPU-computed floats: `make test-isa` reruns it under other ISAs.
pytestmark = [pytest.mark.cpu_numerics, pytest.mark.compiles]

F32, TF32 = "F32_F32_F32", "TF32_TF32_F32"


# One pool of workers for the module's sweeps (each case's reuses them).
_POOL = testutil.SweepPool()


def tearDownModule():
  _POOL.close()


def _sweep(name, sizes, targets, precisions=("default",), numerics=True):
  """(target, n, precision) -> the config's result. With numerics=False
  the bits only: fates, split-K and the optimized HLO, no reference nor
  prediction (their emulations are most of this file's time), for the
  configs whose numbers no test reads."""
  spec = engine.SweepSpec(
    (name,), sizes, precisions, targets, numerics=numerics
  )
  results = _POOL.run(spec)
  out = {}
  for r in results:
    assert r.ok, (r.config.target.name, r.config.n, r.failure)
    out[r.config.target.name, r.config.n, r.config.precision] = r
  return out


def _sweeps(name, *parts) -> dict:
  """`_sweep(name, *part)` of each part, merged: the configs whose numbers
  are asserted with numerics, the rest without."""
  out = {}
  for part in parts:
    out.update(_sweep(name, *part))
  return out


def _fates(r):
  return [
    (f.fate.value, f.effective_algorithm, f.split_k)
    for f in r.compilation.fates
  ]


_GEMM_FUSION_RE = re.compile(
  r"%gemm_fusion\S* = (\w+\[[\d,]*\])\S* fusion\(.*__triton"
)


def _split_in_hlo(r) -> list[str]:
  """Output types of the Triton gemm fusions, read from the optimized HLO
  by a regex: split-K by s adds a dimension of size s after the dot's
  batch dimensions (xla/service/gpu/split_k_gemm_rewriter.cc), e.g.
  f32[4,256,512] for a 256x1024 @ 1024x512 gemm split by 4."""
  return _GEMM_FUSION_RE.findall(r.compilation.optimized_hlo)


def _f64(a) -> np.ndarray:
  return np.asarray(a, np.float64)


def _t64(a) -> np.ndarray:
  """`a` rounded to TF32 (cvt.rna), as float64."""
  return tf32_rna(a).astype(np.float64)


def _f32(a) -> np.ndarray:
  return np.asarray(a, np.float32)


def _max_rel(got, ref) -> float:
  """max |got - ref| / max |ref| (`ErrorStats.max_rel`), in numpy."""
  return float(np.max(np.abs(_f64(got) - ref)) / np.max(np.abs(ref)))


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
        # issue 38's anchors (hloprobe/compile/invariance_cases.py)
        "jax_34080": "34080",
        "tm_mm": "defeating-nondeterminism-in-llm-inference",
      },
    )


@pytest.mark.compiles  # seed_mlp's inputs are drawn by jax.random
class FewRowsTest(absltest.TestCase):
  def test_few_rows_are_the_cases_own(self):
    # `commands.common._FEW_ROWS`: every built-in batch case whose inputs have fewer
    # rows than the default sizes' largest (9), with that count.
    largest = max(engine.parse_batch_sizes(DEFAULTS.batch_sizes))
    rows = {
      name: c.full_size(c.make_inputs())
      for name, c in cases.CASES.items()
      if c.swept_size is None
    }
    self.assertEqual(
      common._FEW_ROWS,
      {name: n for name, n in rows.items() if n < largest},
    )
    self.assertEqual(common._FEW_ROWS, {"jax_22557": 4, "jax_24909": 8})


class Jax27188Test(absltest.TestCase):
  def test_batch_1_strength_reduced_then_tf32_gemms(self):
    r = _sweeps(
      "jax_27188",
      ((1,), ("a100",), ("default", "float32"), False),
      ((32,), ("a100",), ("float32",), False),
      ((32,), ("a100",), ("default",)),
    )
    self.assertEqual(
      _fates(r["a100", 1, "default"]), [("multiply+reduce", F32, None)] * 2
    )
    self.assertEqual(
      _fates(r["a100", 32, "default"]), [("Triton gemm", TF32, None)] * 2
    )
    self.assertEqual(
      _fates(r["a100", 32, "float32"]), [("Triton gemm", F32, None)] * 2
    )
    # numpy: both dots' operands TF32 (README: 4.97e-4 at batch 32).
    w_in, b_in, w_out, b_out, x = cases.get_case("jax_27188").make_inputs()

    def ensemble(tf32: bool):
      r64 = _t64 if tf32 else _f64
      h = np.einsum("ni,eih->enh", r64(x), r64(w_in))
      h = np.maximum((_f32(h) if tf32 else h) + b_in[:, None, :], 0)
      out = np.einsum("enh,eho->eno", r64(h), r64(w_out))
      return (_f32(out) if tf32 else out) + b_out[:, None, :]

    want = _max_rel(ensemble(True), ensemble(False))
    p = r["a100", 32, "default"].prediction
    self.assertAlmostEqual(p.stats.max_rel, want, delta=0.01 * want)
    self.assertEqual(
      prediction_words(p), "explained by TF32_TF32_F32 at sites [0, 1]"
    )


class Jax24909Test(absltest.TestCase):
  @pytest.mark.release_rules
  def test_gemms_at_one_frame_and_tensorfloat32_is_ieee(self):
    r = _sweeps(
      "jax_24909",
      ((1,), ("a100",), ("default", "tensorfloat32"), False),
      ((8,), ("a100",), ("tensorfloat32",), False),
      ((8,), ("a100",), ("default",)),
    )
    # HIGH: F32 in the Triton gemm until XLA 251becc5 (jaxlib 0.11.1), TF32
    # after it, so the report's tensorfloat32 workaround no longer holds.
    high = TF32 if testutil.triton_tf32_under_high() else F32
    for n in (1, 8):
      self.assertEqual(
        _fates(r["a100", n, "default"]), [("Triton gemm", TF32, None)] * 2
      )
      self.assertEqual(
        _fates(r["a100", n, "tensorfloat32"]),
        [("Triton gemm", high, None)] * 2,
      )
    # numpy: both einsums' operands TF32 (README: 6.1e-4).
    env, emb = cases.get_case("jax_24909").make_inputs()

    def descriptor(tf32: bool):
      r64 = _t64 if tf32 else _f64
      t = np.einsum("fank,fanm->fakm", r64(env), r64(emb))
      t = _f32(_f32(t) / np.float32(46)) if tf32 else t / 46
      return np.einsum("fakm,fakq->famq", r64(t), r64(t[..., :16]))

    want = _max_rel(descriptor(True), descriptor(False))
    p = r["a100", 8, "default"].prediction
    self.assertAlmostEqual(p.stats.max_rel, want, delta=0.01 * want)


class Jax15362Test(absltest.TestCase):
  def test_batch_1_exact_f32_then_tf32_with_split_k(self):
    r = _sweeps(
      "jax_15362",
      ((1,), ("a100", "h100")),
      ((100,), ("a100",)),
      ((8,), ("a100", "h100"), ("default",), False),
      ((100,), ("h100",), ("default",), False),
    )
    for t in ("a100", "h100"):
      self.assertEqual(
        _fates(r[t, 1, "default"]),
        [("multiply", F32, None)] + [("multiply+reduce", F32, None)] * 2,
      )
      self.assertEqual(
        prediction_words(r[t, 1, "default"].prediction), "within f32 noise"
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
      {(t, n): _split_in_hlo(r[t, n, "default"]) for (t, n) in split},
      {
        ("a100", 8): ["f32[8,512]"],
        ("a100", 100): ["f32[4,100,512]"],
        ("h100", 8): ["f32[8,8,512]"],
        ("h100", 100): ["f32[8,100,512]"],
      },
    )
    self.assertEqual(
      _fates(r["a100", 100, "default"])[2], ("multiply+reduce", F32, None)
    )
    # numpy: only site 1's operands TF32; site 0 (K = 1) and site 2 are
    # f32 (README: about 2e-5 relative to max |y|).
    w0, c0, w1, c1, w2, c2, pts = cases.get_case("jax_15362").make_inputs()

    def mlp(tf32: bool):
      act = np.maximum(_f64(pts) @ _f64(w0).T + c0, 0)
      if tf32:
        act = _f64(_f32(_t64(act) @ _t64(w1).T) + c1)
      else:
        act = act @ _f64(w1).T + c1
      return np.maximum(act, 0) @ _f64(w2).T + c2

    want = _max_rel(mlp(True), mlp(False))
    p = r["a100", 100, "default"].prediction
    self.assertAlmostEqual(p.stats.max_rel, want, delta=0.01 * want)


class Jax11628Test(absltest.TestCase):
  def test_jacobian_is_m_rounded_to_tf32(self):
    r = _sweep("jax_11628", (1, 100), ("a100",))
    self.assertEqual(_fates(r["a100", 1, "default"]), [("gone", None, None)])
    self.assertEqual(
      prediction_words(r["a100", 1, "default"].prediction), "exact"
    )
    self.assertEqual(
      _fates(r["a100", 100, "default"]), [("Triton gemm", TF32, None)]
    )
    # Each output is 1 * M[i, j] with M rounded to TF32: the error is M's
    # own TF32 rounding, max relative 2^-11 elementwise (README: 4.86e-4).
    mat = cases.get_case("jax_11628").make_inputs()[0]
    err = tf32_rna(mat).astype(np.float64) - mat
    p = r["a100", 100, "default"].prediction
    self.assertEqual(p.stats.max_abs, float(np.abs(err).max()))
    # The port against the report (numpy both sides, no hloprobe): README
    # std(J - M) 2.07e-4 (the report: 2.09e-4), max relative 4.86e-4.
    self.assertAlmostEqual(float(np.std(err)), 2.07e-4, delta=0.005e-4)
    self.assertAlmostEqual(
      float(np.max(np.abs(err) / np.abs(mat))), 4.86e-4, delta=0.005e-4
    )


class Jax22557Test(absltest.TestCase):
  def test_one_tf32_gemm_80_times_f32(self):
    r = _sweep("jax_22557", (4,), ("a100",), numerics=False)
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
    # numpy: TF32 operands, float64 sums (README 0.921; the report 0.923).
    want = float(
      np.linalg.norm(np.einsum("ij,kil->kjl", *map(_t64, args)) - ref)
    )
    self.assertAlmostEqual(fro[TF32], want, delta=0.01 * want)
    # The f32 figure depends on the summation order: only Higham's bound,
    # |err| <= gamma_K |A||B| elementwise (K = 300), in Frobenius norm.
    k = 300
    gamma = k * 2.0**-24 / (1 - k * 2.0**-24)
    abs_ab = np.einsum("ij,kil->kjl", *(np.abs(_f64(a)) for a in args))
    self.assertLess(fro[F32], gamma * float(np.linalg.norm(abs_ab)))
    self.assertGreater(fro[TF32] / fro[F32], 50)


class Jax19444Test(absltest.TestCase):
  def test_split_k_gram_and_tf32_alone_stays_psd(self):
    r = _sweep("jax_19444", (16384,), ("a100", "h100"), numerics=False)
    self.assertEqual(
      _fates(r["a100", 16384, "default"]), [("Triton gemm", TF32, 32)]
    )
    self.assertEqual(
      _fates(r["h100", 16384, "default"]), [("Triton gemm", TF32, 64)]
    )
    self.assertEqual(
      [_split_in_hlo(r[t, 16384, "default"]) for t in ("a100", "h100")],
      [["f32[32,64,64]"], ["f32[64,64,64]"]],
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
    r = _sweeps(
      "jax_21212",
      ((1,), ("t4", "a100"), ("default",), False),
      ((16,), ("t4",), ("default",), False),
      ((16,), ("a100",)),
    )
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
    self.assertEqual(
      prediction_words(a100.prediction), "within bf16 output rounding"
    )


class Tf127577Test(absltest.TestCase):
  def test_exactly_tf32(self):
    r = _sweeps(
      "tf_127577",
      ((1,), ("a100", "h100"), ("default",), False),
      ((256,), ("h100",), ("default",), False),
      ((256,), ("a100", "cpu")),
    )
    for t, split in (("a100", 4), ("h100", 8)):
      self.assertEqual(
        _fates(r[t, 1, "default"]), [("multiply+reduce", F32, None)]
      )
      self.assertEqual(
        _fates(r[t, 256, "default"]), [("Triton gemm", TF32, split)]
      )
      self.assertEqual(
        _split_in_hlo(r[t, 256, "default"]), [f"f32[{split},256,512]"]
      )
    # numpy: TF32 operands (README: 2.86e-4; float32 7.4e-7).
    a, b = cases.get_case("tf_127577").make_inputs()
    ref = _f64(a) @ _f64(b)
    want = _max_rel(_t64(a) @ _t64(b), ref)
    p = r["a100", 256, "default"].prediction
    self.assertAlmostEqual(p.stats.max_rel, want, delta=0.01 * want)
    # The CPU's f32 sums, in its ISA's order: Higham's bound gamma_K |A||B|
    # (K = 1024), and far below the TF32 error.
    gamma = 1024 * 2.0**-24 / (1 - 1024 * 2.0**-24)
    bound = gamma * float(np.max(np.abs(_f64(a)) @ np.abs(_f64(b))))
    cpu = r["cpu", 256, "default"].execution.stats
    self.assertLessEqual(cpu.max_abs, bound)
    self.assertLess(cpu.max_rel, want / 50)
    self.assertEqual(
      prediction_words(p), "explained by TF32_TF32_F32 at sites [0]"
    )


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
    # Split gemms write f32 partial sums with the split dimension after
    # the batch one; unsplit ones write the f16 result.
    self.assertEqual(
      {k: _split_in_hlo(r[k[0], k[1], "default"]) for k in split},
      {
        ("a100", 1): ["f32[4,116,128]"],
        ("a100", 2): ["f16[2,116,128]"],
        ("a100", 32): ["f16[32,116,128]"],
        ("h100", 1): ["f32[4,116,128]"],
        ("h100", 2): ["f32[2,4,116,128]"],
        ("h100", 32): ["f16[32,116,128]"],
      },
    )
    for res in r.values():
      self.assertEqual(
        prediction_words(res.prediction), "within f16 output rounding"
      )


class Mlx3953Test(absltest.TestCase):
  def test_k1_is_an_exact_multiply_k2_is_tf32(self):
    r = _sweep("mlx_3953", (1, 2), ("a100", "cpu"))
    for t in ("a100", "cpu"):
      for n in (1, 2):
        res = r[t, n, "default"]
        self.assertEqual(res.compilation.fates[0].fate.value, "multiply")
        self.assertEqual(dict(leaf_verdicts(res.prediction))["[0]"], "exact")
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
      dict(leaf_verdicts(r["a100", 2, "default"].prediction))["[1]"],
      "explained by TF32_TF32_F32 at sites [1]",
    )


if __name__ == "__main__":
  absltest.main()
