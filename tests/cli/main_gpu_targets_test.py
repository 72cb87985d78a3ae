"""The command line with compile-only GPU targets: no plugin start-up noise."""

from __future__ import annotations

import os
import re

import pytest
from absl.testing import absltest
from testutil import run_hloprobe, run_hloprobe_here

pytestmark = pytest.mark.compiles

_ROOT = os.path.dirname(
  os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)
_NOISE = (
  "cudart_stub",
  "absl::InitializeLog",
  "Unable to load CUDA",
  "Traceback",
  "tpu",
)


def _hloprobe(*args: str):
  """The command line in a process of its own, without the variables the
  test process sets (the CLI must set them, and start quietly)."""
  return run_hloprobe(
    *args,
    drop=("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "JAX_PLATFORMS"),
    timeout=300,
  )


def _here(*args: str):
  """The command line in this process: for input checks, whose one-line
  errors do not depend on the environment."""
  return run_hloprobe_here(*args, timeout_s=300)


class CliGpuTargetsTest(absltest.TestCase):
  def test_targets_lists_gpus_and_ptxas(self):
    p = _hloprobe("targets")
    self.assertEqual(p.returncode, 0, p.stderr)
    self.assertRegex(p.stdout, r"\nv100 +cuda +compile only +7\.0 ")
    self.assertRegex(p.stdout, r"\nh100 +cuda +compile only +9\.0a ")
    self.assertIn("ptxas for GPU targets: ", p.stdout)
    self.assertEqual(p.stderr, "")

  def test_sweep_on_a100_is_quiet(self):
    p = _hloprobe(
      "sweep",
      "--targets=a100",
      "--batch_sizes=2",
      "--precisions=bfloat16",
      "--wide",  # unwrapped cells (the default table wraps to 120 columns)
    )
    self.assertEqual(p.returncode, 0, p.stderr)
    self.assertIn("Triton gemm x3, multiply+reduce x1", p.stdout)
    self.assertIn("TF32_TF32_F32 x3, F32_F32_F32 x1", p.stdout)
    for word in _NOISE:
      self.assertNotIn(word, p.stderr)

  def test_bad_target_config_is_one_line_usage_error(self):
    path = self.create_tempfile("bad.txtpb", "gpu_device_info {\n").full_path
    p = _here("sweep", f"--target_config={path}")
    self.assertEqual(p.returncode, 2)
    self.assertRegex(
      p.stderr,
      r"^hloprobe: error: .*bad\.txtpb:\d+:\d+: not a GpuTargetConfigProto[^\n]*\n$",
    )

  def test_a_file_that_is_no_config_is_one_line_usage_error(self):
    passwd = self.create_tempfile(
      "passwd", "root:x:0:0:root:/root:/bin/bash\n"
    ).full_path
    for flag in (f"--target_config={passwd}", f"--targets={passwd}"):
      p = _here("sweep", flag)
      self.assertEqual(p.returncode, 2, p.stderr)
      self.assertRegex(
        p.stderr,
        rf"^hloprobe: error: {passwd}:1:\d+: not a GpuTargetConfigProto "
        r"text file [^\n]*\n$",
      )

  def test_target_config_named_like_a_builtin_is_a_file(self):
    p = _here("sweep", "--targets=", "--target_config=cpu")
    self.assertEqual(p.returncode, 2, p.stderr)
    self.assertRegex(
      p.stderr, r"^hloprobe: error: --target_config='\./cpu': cannot read it"
    )


class BadConfigValueTest(absltest.TestCase):
  def test_value_xla_cannot_read_is_bad_input(self):
    with open(
      os.path.join(
        _ROOT, "hloprobe", "compile", "gpu_specs", "a100_sxm_40.txtpb"
      )
    ) as f:
      text = f.read()
    bad = re.sub(r"core_count: \d+", "core_count: abc", text)
    path = self.create_tempfile("bad.txtpb", content=bad).full_path
    p = _here("sweep", f"--target_config={path}", "--batch_sizes=1")
    self.assertEqual(p.returncode, 2, p.stderr)
    errors = [
      l for l in p.stderr.splitlines() if l.startswith("hloprobe: error:")
    ]
    self.assertLen(errors, 1, p.stderr)
    self.assertIn("Expected integer, got: abc", errors[0])
    self.assertEqual(p.stdout, "")


if __name__ == "__main__":
  absltest.main()
