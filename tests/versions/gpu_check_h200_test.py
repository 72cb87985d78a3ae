"""What a real H200 computed (tests/testdata/gpu_check/, from `.ci/gpu-session`
on a lent machine, jax/jaxlib 0.11.2, CUDA 13, 2026-11-30) against numpy
models of the seed MLP written from the issue's code (`numpy_seed_row0`).

No GPU is needed: these check the committed measurements, so a change of
hloprobe's emulation model that these measurements contradict is caught on
any CPU.
"""

from __future__ import annotations

import json
import os

from absl.testing import absltest
from testutil import numpy_seed_row0

_DATA = os.path.join(
  os.path.dirname(os.path.dirname(__file__)), "testdata", "gpu_check"
)
_CHECK = os.path.join(_DATA, "nvidia_h200-jaxlib0.11.2.json")
_SWEEP = os.path.join(_DATA, "nvidia_h200-jaxlib0.11.2-sweep.json")
# An f32 run against float64: about 1e-4 at row 0 (README, section 0).
_F32_NOISE = 3e-4
# The numpy models sum in float64, the GPU in f32 (same rounded operands).
_SAME_ALGORITHM = 1e-5


def _load(path: str) -> dict:
  with open(path) as f:
    return json.load(f)


class H200GpuCheckTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.doc = _load(_CHECK)
    cls.by_key = {(c["n"], c["precision"]): c for c in cls.doc["configs"]}

  def test_is_a_real_h200_with_jaxlib_0_11_2(self):
    self.assertEqual(
      (self.doc["schema"], self.doc["device"], self.doc["jaxlib"]),
      ("hloprobe.gpu_check", "NVIDIA H200", "0.11.2"),
    )
    self.assertLen(self.doc["configs"], 27)  # n = 1-9, three precisions

  def test_batch_1_is_f32_under_every_precision(self):
    # dot-strength-reduction: multiply+reduce in f32 whatever the precision.
    f64 = numpy_seed_row0()
    for precision in ("bfloat16", "tensorfloat32", "float32"):
      observed = self.by_key[1, precision]["observed"]["row0"]
      self.assertAlmostEqual(observed, f64, delta=_F32_NOISE)

  def test_triton_gemms_round_operands_to_tf32_under_default_and_high(self):
    # jaxlib 0.11.2's Triton gemm uses TF32 under HIGH too (its PTX:
    # tests/ir/testdata/ptx/h200_jaxlib0112_*), unlike jaxlib 0.10.2's.
    tf32 = numpy_seed_row0((0, 1, 2), f32_between=True)
    for n in range(2, 10):
      for precision in ("bfloat16", "tensorfloat32"):
        observed = self.by_key[n, precision]["observed"]["row0"]
        self.assertAlmostEqual(observed, tf32, delta=_SAME_ALGORITHM)
      highest = self.by_key[n, "float32"]["observed"]["row0"]
      self.assertAlmostEqual(highest, numpy_seed_row0(), delta=_F32_NOISE)

  def test_the_recording_run_found_every_observation_in_its_band(self):
    # The committed record's own consistency: |observed - predicted| <=
    # tolerance, as the recording run's hloprobe (0.11.2, 2026-11-30)
    # predicted, for both bands, and the status words it printed. No code
    # of today's hloprobe runs here (review finding 9): the tests above hold
    # the observations against numpy models instead.
    for c in self.doc["configs"]:
      observed = c["observed"]["row0"]
      for band in ("own", "compile_only"):
        b = c[band]
        self.assertLessEqual(
          abs(observed - b["predicted_row0"]),
          b["tolerance_abs"],
          (c["n"], c["precision"], band),
        )
        self.assertEqual(b["status"], "explained", (c["n"], band))


class H200CublasLtTest(absltest.TestCase):
  """`--xla_gpu_enable_triton_gemm=false`: the three gemms become cuBLASLt
  calls, whose backend_config allows TF32 under DEFAULT and HIGH."""

  def test_cublaslt_kept_the_k2_gemm_in_f32(self):
    doc = _load(_SWEEP)
    (run,) = [
      c
      for c in doc["configs"]
      if (c["experiment"], c["target"], c["n"], c["precision"])
      == ("no_triton_gemm", "gpu", 2, "bfloat16")
    ]
    fates = [s["fate"] for s in run["dot_sites"]]
    self.assertEqual(fates, ["cuBLASLt"] * 3 + ["multiply+reduce"])
    observed = run["numerics"]["row0"]
    # Sites 1 and 2 (K = 48) in TF32, site 0 (K = 2) in f32: the TF32
    # that cuBLASLt allows is not what every kernel it picks runs.
    partial = numpy_seed_row0((1, 2), f32_between=True)
    self.assertAlmostEqual(observed, partial, delta=_SAME_ALGORITHM)
    every = numpy_seed_row0((0, 1, 2), f32_between=True)
    self.assertGreater(abs(observed - every), 0.5)


if __name__ == "__main__":
  absltest.main()
