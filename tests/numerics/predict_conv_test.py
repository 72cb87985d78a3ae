"""The conv net's diagnosis: three sites and their shares of the error.

The prediction for the recorded A100 compiles (tests/testdata/compiles/
conv_net_a100_n4_*) is checked against numpy float64 forward passes written
here, with TF32 operand rounding (bit arithmetic, `cvt.rna.tf32.f32`) at
one site at a time: each site's share of the error is its own TF32
rounding's effect, as the optimized HLO's cuDNN calls (DEFAULT precision,
TF32 allowed) and Triton gemm say it runs. Under `float32` the calls say
HIGHEST, and nothing moves beyond f32 noise. `explain` on a conv-only
program names the convolution's fate.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import recorded
import testutil
from absl.testing import absltest

from hloprobe.compile import get_case
from hloprobe.report.listings import cases_listing
from hloprobe.report.verdict_words import prediction_words

pytestmark = [pytest.mark.compiles]


def _tf32(x) -> np.ndarray:
  """f32 values rounded to TF32, ties away from zero (finite inputs)."""
  bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
  bits = (bits + np.uint64(1 << 12)) & ~np.uint64((1 << 13) - 1)
  return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def _conv3x3(x, k):
  """float64 NHWC x HWIO 3x3 'SAME' convolution by window loops."""
  x = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
  n, h, w, _ = x.shape
  out = 0.0
  for i in range(3):
    for j in range(3):
      out = out + np.einsum(
        "nhwc,co->nhwo", x[:, i : i + h - 2, j : j + w - 2], k[i, j]
      )
  return out


def _row0(args, tf32_sites=()) -> np.ndarray:
  """Row 0 of the conv net in float64, TF32 operands at `tf32_sites`."""
  x, k1, b1, k2, b2, w = (np.float64(a) for a in args)
  r = lambda site, v: _tf32(v) if site in tf32_sites else v
  h = np.maximum(_conv3x3(r(0, x), r(0, k1)) + b1, 0)
  h = np.maximum(_conv3x3(r(1, h), r(1, k2)) + b2, 0)
  return (r(2, h.mean(axis=(1, 2))) @ r(2, w))[0]


class ConvNetDiagnosisTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.case = get_case("conv_net")
    cls.args = cls.case.inputs_for(cls.case.make_inputs(), 4)

  def test_bfloat16_three_sites_with_their_shares(self):
    rec = recorded.load("conv_net_a100_n4_bfloat16")
    p = recorded.prediction(self.case, rec)
    exact = _row0(self.args)
    self.assertEqual([s.site for s in p.shares], [0, 1, 2])
    for s in p.shares:
      with self.subTest(site=s.site):
        self.assertEqual(s.algorithm, "TF32_TF32_F32")
        alone = np.max(np.abs(_row0(self.args, (s.site,)) - exact))
        self.assertGreater(alone, 100 * p.noise.row0_abs)
        np.testing.assert_allclose(s.alone_abs, alone, rtol=0.05)
    every = np.max(np.abs(_row0(self.args, (0, 1, 2)) - exact))
    np.testing.assert_allclose(p.stats.row0_abs, every, rtol=0.05)
    self.assertAlmostEqual(sum(s.share for s in p.shares), 1.0, places=6)
    self.assertTrue(
      prediction_words(p).startswith(
        "explained by TF32_TF32_F32 at sites [0, 1, 2]"
      ),
      prediction_words(p),
    )
    self.assertIn("cuDNN conv sites [0, 1]", prediction_words(p))
    self.assertEqual([b.K for b in p.bands], [144, 288, 32])

  def test_float32_is_f32(self):
    rec = recorded.load("conv_net_a100_n4_float32")
    p = recorded.prediction(self.case, rec)
    self.assertEqual(p.site_algorithms, ("F32_F32_F32",) * 3)
    self.assertEqual(p.shares, ())
    self.assertEqual(prediction_words(p), "within f32 noise")

  def test_cases_lists_conv_net(self):
    self.assertIn("conv_net", cases_listing())


class ModelExplorerConvTest(absltest.TestCase):
  def test_convolution_sites_are_adapter_nodes(self):
    """Model Explorer's own MLIR adapter is the authority on node ids."""
    from hloprobe.pictures import model_explorer

    rec = recorded.load("conv_net_a100_n4_bfloat16")
    path = self.create_tempfile("conv_net.mlir", rec.stablehlo).full_path
    nodes = model_explorer.adapter_dot_nodes(path)
    labels = [n["label"] for n in nodes["main"]]
    self.assertEqual(
      labels,
      ["stablehlo.convolution"] * 2 + ["stablehlo.dot_general"],
    )
    found = model_explorer.map_sites(recorded.fates(rec), nodes)
    self.assertEqual(
      {i: ref.node for i, ref in found.items()},
      {i: str(n["id"]) for i, n in enumerate(nodes["main"])},
    )


class ConvOnlyExplainTest(absltest.TestCase):
  def test_explain_names_the_convolution(self):
    out = self.create_tempdir().full_path
    cases = os.path.join(testutil.ROOT, "tests", "program_cases.py")
    got = testutil.run_hloprobe_here(
      "explain",
      f"--case={cases}:conv_only",
      "--targets=a100,cpu",
      "--batch_sizes=2",
      "--precisions=bfloat16",
      f"--output_dir={out}",
      "--notry_fixes",  # the account is what is tested, not the fixes
      "--verbose",
      "--invariance=off",
      timeout_s=300,
    )
    self.assertEqual(got.returncode, 0, got.stderr)
    # XLA's conv rewriter made the cuDNN call; the CPU keeps the op.
    self.assertIn("n = 2: site 0 cuDNN conv (conv-rewriter", got.stdout)
    self.assertIn("n = 2: site 0 conv (no pass rewrote it)", got.stdout)
    self.assertIn(
      "cuDNN conv (site 0): under bfloat16 (DEFAULT) TF32_TF32_F32",
      " ".join(got.stdout.split()),
    )
    for line in got.stdout.splitlines():
      self.assertNotRegex(line, r"n = 2:\s*$")


if __name__ == "__main__":
  absltest.main()
