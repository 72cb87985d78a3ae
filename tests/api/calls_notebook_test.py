"""`hloprobe.explain` from a notebook-style script, in a fresh process with
no environment set (tests/pyapi_testdata/notebook.py), and the venv's plain
`import jax` quiet.

"No environment": JAX_SKIP_CUDA_CONSTRAINTS_CHECK is set to "" (the CUDA
plugin reads "" as unset, jax_plugins/xla_cuda12 `initialize`), since the
venv's hloprobe-quiet-cuda.pth would otherwise set it at start-up; the
script starts jax itself first, so its own jax validated the plugin and
dropped it, as a notebook that ran `jnp` before hloprobe has.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import testutil
from absl.testing import absltest

_SCRIPT = os.path.join(
  os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
  "pyapi_testdata",
  "notebook.py",
)
# The variables a user would not have set.
_UNSET = ("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "JAX_PLATFORMS", "XLA_FLAGS")


def _clean_env(**extra) -> dict:
  env = {k: v for k, v in os.environ.items() if k not in _UNSET}
  env["PYTHONPATH"] = testutil.ROOT
  return env | extra


@pytest.mark.compiles  # a Python process, its worker, a100 and cpu compiles
class NotebookTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    proc = subprocess.run(
      [sys.executable, _SCRIPT],
      capture_output=True,
      text=True,
      env=_clean_env(JAX_SKIP_CUDA_CONSTRAINTS_CHECK=""),
      timeout=600,
      check=False,
      cwd=absltest.get_default_test_tmpdir(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    cls.doc = json.loads(proc.stdout.splitlines()[-1])
    cls.configs = {c["target"]: c for c in cls.doc["configs"]}

  def test_a100_runs_tf32_where_its_hlo_has_triton_gemms(self):
    a100 = self.configs["a100"]
    self.assertTrue(a100["ok"])
    # The independent source: the optimized HLO's two dots are Triton gemm
    # fusions with no operand_precision (DEFAULT under "bfloat16") on f32
    # operands; XLA's Triton emitter allows TF32 at DEFAULT on sm_80
    # (stablehlo_lower_to_triton.cc `IsTf32Allowed`; jaxlib 0.10.2 and
    # 0.12.0.1), so both sites run TF32_TF32_F32.
    hlo = a100["optimized_hlo"]
    gemms = [
      line
      for line in hlo.splitlines()
      if '"kind":"__triton_nested_gemm_fusion"' in line
      or '"kind":"__triton_gemm"' in line
    ]
    self.assertLen(gemms, 2)
    self.assertNotIn("operand_precision", hlo)
    self.assertEqual(a100["algorithms"], ["TF32_TF32_F32"] * 2)
    self.assertIn("TF32_TF32_F32", self.doc["text"])

  def test_the_answer_comes_first(self):
    # As `hloprobe explain` prints it (README "The answer first"): the a100's
    # TF32 finding on line 1, then why no fix was tried (break26).
    lines = self.doc["text"].splitlines()
    self.assertTrue(lines[0].startswith("Answer: mlp on a100"), lines[0])
    self.assertIn("TF32_TF32_F32 at sites 0-1 (", lines[0])
    self.assertTrue(lines[1].startswith("Do: fixes not tried ("), lines[1])

  def test_cpu_keeps_f32(self):
    cpu = self.configs["cpu"]
    self.assertTrue(cpu["ok"])
    self.assertNotIn("triton", cpu["optimized_hlo"])
    self.assertEqual(cpu["algorithms"], ["F32_F32_F32"] * 2)

  def test_frames_are_the_notebooks_only(self):
    for config in self.configs.values():
      for frames in config["frames"]:
        self.assertLen(frames, 1, frames)
        self.assertTrue(frames[0].startswith(_SCRIPT + ":"), frames)


class QuietJaxTest(absltest.TestCase):
  @pytest.mark.compiles  # a Python process
  def test_plain_import_jax_is_quiet(self):
    # hloprobe-quiet-cuda.pth (copied into the venv by the Makefile): no
    # "Jax plugin configuration error" traceback when jax starts its
    # backends on a machine without a driver.
    code = "import jax; jax.devices(); import jax.numpy as jnp; jnp.ones(2)"
    proc = subprocess.run(
      [sys.executable, "-c", code],
      capture_output=True,
      text=True,
      env=_clean_env(),
      timeout=300,
      check=False,
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertEqual(proc.stderr, "")


if __name__ == "__main__":
  absltest.main()
