"""A hand-written autotune results file changes a compile-only target's fates.

issue 28, "Testable here": `hloprobe.tools.autotune_template` writes an
`xla.autotuner.AutotuneCache` text file for the compile-only a100 (keyed as
jaxlib 0.12.0.1's XLA keys it, `hloprobe.compile.autotune`) choosing cuBLAS
for the seed's first gemm fusion and other Triton tiles for the second
(which XLA shares with the third: same computation and shapes); the case
is compiled again with the file loaded. The optimized HLO is the
independent source: the first gemm becomes a `__cublas$lt$matmul` custom
call, the others keep Triton with 64x32 output tiles, 4 warps, 2 stages,
where the default compile has 16x8 tiles and 2 warps. Split-K is not
chosen: jaxlib 0.12.0.1 fails a compile whose Triton entry has split_k: 4
("TritonBackend no longer supports split-k (split_k > 1)"); its
splitk-rewriter pass decides split-K before config assignment.

Each step is its own process: XLA loads autotune results once per process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import testutil
from absl.testing import absltest

_TOOL = "hloprobe.tools.autotune_template"


def _tool(*args: str) -> subprocess.CompletedProcess:
  env = dict(os.environ, PYTHONPATH=testutil.ROOT, JAX_PLATFORMS="cpu")
  return subprocess.run(
    [sys.executable, "-m", _TOOL, "--case=seed_mlp", "--target=a100", *args],
    capture_output=True,
    text=True,
    env=env,
    timeout=600,
  )


def _fusion_config(hlo: str, name: str) -> dict | None:
  line = re.search(rf"^\s*%{re.escape(name)} = .*$", hlo, re.M)
  if line is None:
    return None
  config = re.search(r"backend_config=(\{.*\})\s*$", line.group(0)).group(1)
  return json.loads(config)["fusion_backend_config"][
    "block_level_fusion_config"
  ]


@pytest.mark.compiles  # two subprocesses compile for the a100
class ReplayTest(absltest.TestCase):
  def test_results_file_changes_the_fates(self):
    folder = self.create_tempdir().full_path
    results = os.path.join(folder, "a100.textproto")
    written = _tool(
      "--choose=gemm_fusion_dot=cublas",
      "--choose=gemm_fusion_dot.1=triton:64,32,32,2,4",
      f"--output={results}",
    )
    self.assertEqual(
      written.returncode, 0, written.stdout + written.stderr[-3000:]
    )
    self.assertIn("gemm_fusion_dot.1\t__triton_gemm\t", written.stdout)
    optimized = os.path.join(folder, "optimized.hlo.txt")
    replayed = _tool(f"--replay={results}", f"--output={optimized}")
    self.assertEqual(replayed.returncode, 0, replayed.stderr[-2000:])
    self.assertIn(
      "gemm_fusion_dot: CUBLASLT_FISSION: gemm { algorithm: -1 }",
      replayed.stdout,
    )
    self.assertIn("gemm_fusion_dot.2: TRITON: triton {", replayed.stdout)
    with open(optimized, encoding="utf-8") as f:
      hlo = f.read()
    # Site 0: cuBLASLt instead of a Triton gemm fusion.
    self.assertIsNone(_fusion_config(hlo, "gemm_fusion_dot"))
    self.assertRegex(
      hlo, r'custom-call\(%xs\.1, %params_0__0_\.1, .*"__cublas\$lt\$matmul"'
    )
    # Sites 1 and 2: the chosen tiles (default: 16x8, 2 warps, 1 stage).
    for name in ("gemm_fusion_dot.1", "gemm_fusion_dot.2"):
      config = _fusion_config(hlo, name)
      self.assertEqual(config["output_tiles"], [{"sizes": ["64", "32"]}])
      self.assertEqual(config["num_warps"], "4")
      self.assertEqual(config["num_stages"], 2)

  def test_results_for_another_device_are_refused(self):
    folder = self.create_tempdir().full_path
    results = os.path.join(folder, "h100.textproto")
    with open(results, "w", encoding="utf-8") as f:
      f.write('device_scope: "0123456789abcdef"\n')
    replayed = _tool(f"--replay={results}", f"--output={folder}/x.txt")
    self.assertNotEqual(replayed.returncode, 0)
    self.assertIn("recorded for device 0123456789abcdef", replayed.stderr)


if __name__ == "__main__":
  absltest.main()
