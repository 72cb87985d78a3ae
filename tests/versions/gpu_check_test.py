"""versions/gpu_check.py's pure parts: a real GPU's compile-only twin
(by the device names `nvidia-smi` prints, against hloprobe's targets) and
where an observed row 0 falls against the predicted band. The recorded
H200 run itself is checked in gpu_check_h200_test.py."""

from __future__ import annotations

from absl.testing import absltest, parameterized

from hloprobe.errors import InvalidArgumentError


class GpuCheckTest(parameterized.TestCase):
  @parameterized.parameters(
    ("NVIDIA H200", "h200"),
    ("NVIDIA A100-SXM4-40GB", "a100"),
    ("Tesla T4", "t4"),
    ("NVIDIA L4", "l4"),
  )
  def test_compile_only_twin(self, kind, target):
    from hloprobe.versions.gpu_check import compile_only_target_for

    self.assertEqual(compile_only_target_for(kind), target)

  def test_no_twin_for_l40s(self):
    from hloprobe.versions.gpu_check import compile_only_target_for

    with self.assertRaisesRegex(InvalidArgumentError, "L40S"):
      compile_only_target_for("NVIDIA L40S")

  def test_band_status(self):
    from hloprobe.versions.gpu_check import band_status

    p = {"row0": 1.0, "row0_tolerance_abs": 0.1}
    self.assertEqual(band_status(1.05, p), "explained")
    self.assertEqual(band_status(1.2, p), "outside band")
    self.assertEqual(band_status(None, p), "n/a")


if __name__ == "__main__":
  absltest.main()
