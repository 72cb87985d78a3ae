"""The fp8 cuBLASLt rewrite in verdicts and results.json (issue 24, item 4).

The recorded h100 compiles of `fp8_scaled_matmul` predicted (float64
reference, emulation: jax on the CPU), and one live compile-only sweep
under jaxlib of this venv (h100, n = 8, the baseline and the experiment
`no_triton_gemm`): the optimized HLO written beside results.json is the
independent source of whether `__cublas$lt$matmul$f8` is there, and each
site's `fp8_rewrite` must say the same.
"""

from __future__ import annotations

import json
import os

import pytest
import recorded
import testutil
from absl.testing import absltest

from hloprobe.compile import get_case
from hloprobe.report.verdict_words import prediction_words

pytestmark = [pytest.mark.compiles]


# Verdicts judged against the noise floor XLA:CPU's f32 sums measure.
@pytest.mark.cpu_numerics
class PredictedTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.case = get_case("fp8_scaled_matmul")

  def test_fired_is_within_f32_noise_and_says_so(self):
    rec = recorded.load("fp8_scaled_matmul_h100_n8_default_no_triton_gemm")
    p = recorded.prediction(self.case, rec)
    self.assertEqual(p.site_algorithms, ("F32_F32_F32",))
    self.assertTrue(
      prediction_words(p).startswith("within f32 noise; "), prediction_words(p)
    )
    self.assertIn(
      "site 0: fp8 cuBLASLt rewrite fired (`__cublas$lt$matmul$f8`, "
      "scales a=x_scale, b=w_scale",
      prediction_words(p),
    )
    self.assertNotIn("emulated as F32", prediction_words(p))
    # DEFAULT operand precision, ALG_UNSET: cuBLASLt fast accumulation on
    # (cuda_blas_lt.cc IsFastAccumEnabled), which is not emulated.
    self.assertIn(
      "site 0 ANY_F8_ANY_F8_F32_FAST_ACCUM: not modelled: cuBLASLt FP8 "
      "fast accumulation",
      prediction_words(p),
    )

  def test_triton_tf32_is_explained_and_the_rewrite_named(self):
    rec = recorded.load("fp8_scaled_matmul_h100_n8_default")
    p = recorded.prediction(self.case, rec)
    self.assertTrue(
      prediction_words(p).startswith("explained by TF32_TF32_F32 at sites [0]"),
      prediction_words(p),
    )
    self.assertIn(
      "site 0: fp8 cuBLASLt rewrite did not fire: the Triton gemm took "
      "the dot first",
      prediction_words(p),
    )


# The pass order (Triton gemm before the FP8 GemmRewriter) is XLA's of
# jaxlib 0.10.2 and 0.12.0.1 alike; older XLA ran the FP8 rewrite first.
@pytest.mark.release_rules
class SweepTest(absltest.TestCase):
  def test_results_json_agrees_with_the_optimized_hlo(self):
    out = self.create_tempdir().full_path
    run = testutil.run_hloprobe_here(
      "sweep",
      "--case=fp8_scaled_matmul",
      "--targets=h100",
      "--batch_sizes=8",
      "--precisions=default",
      "--experiment=no_triton_gemm",
      "--nocache",
      "--jobs=1",
      f"--output_dir={out}",
      timeout_s=300,
    )
    self.assertEqual(run.returncode, 0, run.stderr)
    with open(os.path.join(out, "results.json"), encoding="utf-8") as f:
      configs = json.load(f)["configs"]
    seen = {}
    for c in configs:
      experiment = c["experiment"] or "baseline"
      folder = "n8-default" + (
        "" if experiment == "baseline" else f"-{experiment}"
      )
      path = os.path.join(out, "h100", "fp8_scaled_matmul", folder)
      with open(os.path.join(path, "optimized.hlo"), encoding="utf-8") as f:
        fired = "__cublas$lt$matmul$f8" in f.read()
      (site,) = c["dot_sites"]
      seen[experiment] = (fired, site["fp8_rewrite"].split(" ")[0])
      self.assertIn(
        f"site 0: fp8 cuBLASLt rewrite {site['fp8_rewrite']}", c["verdict"]
      )
    self.assertEqual(
      seen,
      {"baseline": (False, "did"), "no_triton_gemm": (True, "fired")},
    )
    table = " ".join(run.stdout.split())  # cells wrapped
    self.assertIn("cuBLASLt rewrite fired", table)
    self.assertIn("cuBLASLt rewrite did not fire", table)


if __name__ == "__main__":
  absltest.main()
