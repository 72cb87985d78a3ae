"""The committed H200 observation of the seed, reproduced by the kernel model.

tests/testdata/gpu_check/nvidia_h200-jaxlib0.11.2-sweep.json holds what
`make gpu-check` recorded on an NVIDIA H200 (jaxlib 0.11.2): for seed_mlp
at n = 2 under `bfloat16`, each site's fate, its PTX evidence (cvt.rna.tf32.f32
and mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 in the Triton gemms),
its tiles (block_level_fusion_config; no split-K) and the observed row 0,
0.08197562396526337 (also in nvidia_h200-jaxlib0.11.2.json). The numpy
TF32-RNA emulation predicted 0.08197852224111557 (2.9e-6 off, the "2.5e-6"
of issue 28). The kernel model must come closer, and say what is left.
The sweep's own prediction for the compile-only h200 does too
(tests/compile/autotune_replay_test.py `KernelPredictionTest`, sharing that file's
workers).
"""

import json
import pathlib

import numpy as np
import pytest
import recorded

from hloprobe.compile import get_case
from hloprobe.numerics import kernel_sites as ks
from hloprobe.report.kernel_words import remainder_lines
from hloprobe.tools.kernel_model_check import (
  _recorded_mma,  # the recorded JSON names the mma only in its words
  _recorded_rounding,
)

_DIR = pathlib.Path(__file__).parents[1] / "testdata/gpu_check"
_OBSERVED = recorded.H200_SEED_ROW0  # nvidia_h200-jaxlib0.11.2.json, n = 2
_TODAY = 0.08197852224111557  # the same file's numpy TF32-RNA prediction


def _seed_n2():
  sweep = json.loads((_DIR / "nvidia_h200-jaxlib0.11.2-sweep.json").read_text())
  (config,) = [
    c
    for c in sweep["configs"]
    if (c["case"], c["n"], c["precision"], c["target"], c["experiment"])
    == ("seed_mlp", 2, "bfloat16", "gpu", "baseline")
  ]
  return config


def test_committed_observation_is_the_one_checked():
  record = json.loads((_DIR / "nvidia_h200-jaxlib0.11.2.json").read_text())
  row = next(
    c
    for c in record["configs"]
    if (c["case"], c["n"], c["precision"]) == ("seed_mlp", 2, "bfloat16")
  )
  assert row["observed"]["row0"] == _OBSERVED
  assert row["own"]["predicted_row0"] == _TODAY


def test_sites_from_committed_ptx_and_tiles():
  sites = _seed_n2()["dot_sites"]
  kinds = [
    ks.site_model(
      s["fate"],
      _recorded_mma(s["algorithm_evidence"]),
      "9.0",
      s["split_k"],
      s["effective_algorithm"],
      _recorded_rounding(s["algorithm_evidence"]),
    )
    for s in sites
  ]
  assert [k.kind for k in kinds] == ["bit-exact model"] * 3 + ["band"]
  for k in kinds[:3]:
    assert (k.ins.arch, k.ins.k, k.ins.group, k.split_k, k.tf32_rounding) == (
      "Hopper",
      8,
      8,
      1,
      "rna",
    )
  # The tiles the kernel ran: 16x32 output tiles, 4 warps, no split-K.
  config = sites[1]["gemm_config"]["block_level_fusion_config"]
  assert config["output_tiles"][0]["sizes"] == ["16", "32"]


@pytest.mark.compiles
def test_h200_row0_reproduced_closer_than_the_band_model():
  config = _seed_n2()
  sites = config["dot_sites"]
  kernels = {
    s["index"]: ks.site_model(
      s["fate"],
      _recorded_mma(s["algorithm_evidence"]),
      "9.0",
      s["split_k"],
      s["effective_algorithm"],
      _recorded_rounding(s["algorithm_evidence"]),
    )
    for s in sites
  }
  case = get_case("seed_mlp")
  args = case.inputs_for(case.full_inputs(), 2)
  algorithms = [s["effective_algorithm"] for s in sites]
  r = ks.kernel_remainder(case.fn, args, algorithms, kernels, _OBSERVED)
  predicted, lines = r.predicted, remainder_lines(r)
  ulp = float(np.spacing(np.float32(_OBSERVED)))  # 2^-27 at 0.082
  assert abs(_TODAY - _OBSERVED) > 2.5e-6
  # 2.2e-8 (3 f32 ulps) on the H200 recorded; allow 4 ulps.
  assert abs(predicted - _OBSERVED) <= 4 * ulp
  assert "sites [0, 1, 2] bit-exact model, sites [3] band" in lines[0]
  assert lines[-1].startswith("the remainder is within")
  assert "elementwise functions (exp, sin" in lines[2]
