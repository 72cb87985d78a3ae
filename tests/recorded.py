"""Recorded compiles (tests/testdata/compiles/, written by record.py there)
read back the way a sweep's stages read a fresh compile, so site and
effective-algorithm tests run on fixtures from several jaxlib releases
without XLA (as jax's export back-compat tests run on recorded data)."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable

from hloprobe import records
from hloprobe.compile import targets
from hloprobe.ir import ptx
from hloprobe.ir.hlo import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.numerics import predict, reference
from hloprobe.sites import dot_sites, effective, site_fate

__all__ = [
  "RELEASES",
  "Recorded",
  "config_result",
  "fates",
  "load",
  "prediction",
]

COMPILES = os.path.join(os.path.dirname(__file__), "testdata", "compiles")
# The releases every fixture is recorded under (record.py's runs).
RELEASES = ("0.10.2", "0.12.0.1")


# tests/testdata/autotune (README.md there): the seed's autotune inputs
# and results, and the two lines of jaxlib 0.12.0.1's CUDA plugin log that
# name its codegen versions and the a100's fingerprint (shared by
# compile/autotune_test.py and compile/autotune_replay_test.py).
AUTOTUNE = os.path.join(os.path.dirname(__file__), "testdata", "autotune")
AUTOTUNE_XLA_LOG = (
  "I1202 06:56:34.649027    2158 autotuner_cache_interface.cc:106] Codegen "
  "version: 070b7c91256c4093 from CUDNN:9.10.0,TRITON:b575c0c38d428a609e2548"
  "7db64051a5fa7bfab8,CUBLASLT:12.8.0,BLOCK_LEVEL_EMITTER:b575c0c38d428a609e"
  "25487db64051a5fa7bfab8,NATIVE_EMITTER:v1,CUBLASLT_FISSION:12.8.0\n"
  "I1202 06:56:34.649052    2158 autotuner_cache_interface.cc:85] Device "
  "fingerprint: 4882ef514d13f9de from CUDA: 8.0, Cores: 108, GPU clock: 1.41 "
  "GHz, Memory bandwidth: 1555 GB/s, L2 cache: 40 MB, device name: NVIDIA "
  "A100-SXM4-40GB\n"
)
# What a real H200 computed for the seed's row 0 at n = 2
# (tests/testdata/gpu_check/nvidia_h200-jaxlib0.11.2.json).
H200_SEED_ROW0 = 0.08197562396526337


@dataclasses.dataclass(frozen=True)
class Recorded:
  """One recorded compile.

  Attributes:
    name: the fixture's folder, e.g. "seed_a100_n2_bfloat16".
    jaxlib: the release that compiled it, e.g. "0.12.0.1".
    config: config.json: case, target, n, precision, compute_capability
      (a string such as "8.0", or None), jax, jaxlib.
    stablehlo: the lowered module's text, debug locations kept.
    optimized_hlo: `Compiled.as_text()`.
    ptx: each PTX file XLA dumped, in dump order (empty on the CPU).
  """

  name: str
  jaxlib: str
  config: dict
  stablehlo: str
  optimized_hlo: str
  ptx: tuple[str, ...]


def _read(path: str) -> str:
  with open(path, encoding="utf-8") as f:
    return f.read()


def load(name: str, jaxlib: str = RELEASES[-1]) -> Recorded:
  """The fixture `name` as `jaxlib` compiled it.

  Raises:
    FileNotFoundError: no such fixture, or not recorded under `jaxlib`.
  """
  folder = os.path.join(COMPILES, name, f"jaxlib{jaxlib}")
  kernels = sorted(
    (f for f in os.listdir(folder) if f.endswith(".ptx")),
    key=lambda f: int(f.split(".")[1]),
  )
  return Recorded(
    name,
    jaxlib,
    json.loads(_read(os.path.join(folder, "config.json"))),
    _read(os.path.join(folder, "stablehlo.mlir")),
    _read(os.path.join(folder, "optimized.hlo")),
    tuple(_read(os.path.join(folder, f)) for f in kernels),
  )


def fates(
  rec: Recorded,
  edit_hlo: Callable[[str], str] = lambda text: text,
  edit_stablehlo: Callable[[str], str] = lambda text: text,
) -> list[site_fate.SiteFate]:
  """The dot sites' fates and effective algorithms of a recorded compile:
  the stages a sweep's worker runs after compiling (parse, map, resolve),
  on the recorded texts, optionally edited first (a planted change)."""
  sites = parse_stablehlo_dots(edit_stablehlo(rec.stablehlo))
  module = parse_hlo_module(edit_hlo(rec.optimized_hlo))
  kernels = [k for text in rec.ptx for k in ptx.parse_ptx(text)]
  mapped = dot_sites.map_dot_sites(sites, module)
  return effective.resolve(
    mapped,
    module,
    kernels,
    targets.get_target(rec.config["target"]),
    rec.config["compute_capability"],
  )


def config_result(rec: Recorded) -> records.ConfigResult:
  """The record a sweep's worker sends back for the recorded compile (its
  texts and fates; no pass attribution, execution nor prediction), for
  stages after the sweep (goldens) to run on without XLA."""
  c = rec.config
  config = records.Config(
    c["case"], targets.get_target(c["target"]), c["n"], c["precision"]
  )
  return records.ConfigResult(
    config,
    records.Compilation(rec.stablehlo, rec.optimized_hlo, tuple(fates(rec))),
  )


def prediction(case, rec: Recorded) -> predict.Prediction:
  """What a sweep predicts for the recorded compile-only config of `case`
  (its float64 reference and emulation run here, on the CPU, with jax:
  tests calling this are marked `compiles`)."""
  full = case.full_inputs()
  n = rec.config["n"]
  refs = reference.References(case, full, (n,))
  return predict.Predictor(case, full, refs).predict(n, tuple(fates(rec)), None)


KERNELS = os.path.join(os.path.dirname(__file__), "testdata", "kernels")


def kernel_fixtures(release: str, stem: str, sizes, case: str | None = None):
  """(ConfigResults, kernel reader) of the recorded a100 compiles
  `tests/testdata/kernels/<release>/<stem><n>` (float32, no fates: every
  kernel is judged by the kernels stage's records; `case` names their
  configs' case, `stem` by default), for `invariance_of(..., reader=)`."""
  from hloprobe import kernels
  from hloprobe.invariance.kernel_identity import records_as_kernels
  from hloprobe.ir import as_precision

  a100 = targets.get_target("a100")
  results, texts = [], {}
  for n in sizes:
    base = os.path.join(KERNELS, release, f"{stem}{n}")
    with open(base + ".hlo.txt", encoding="utf-8") as f:
      hlo = f.read()
    with open(base + ".ptx.txt", encoding="utf-8") as f:
      texts[n] = (hlo, f.read())
    config = records.Config(case or stem, a100, n, as_precision("float32"))
    results.append(records.ConfigResult(config, records.Compilation("", hlo)))

  def read(r):
    hlo, ptx_text = texts[r.config.n]
    found = kernels.read_kernels(hlo, r.config.n, [ptx_text], core_count=108)
    return records_as_kernels(found, r)

  return results, read


def one_entry_autotune_file(folder: str) -> str:
  """An autotune results file (textproto) in `folder` holding the seed's
  first a100 gemm fusion (cuBLAS) only, keyed as the recorded
  config_assigner input names it; returns its path."""
  from hloprobe.compile.autotune import (
    CUBLAS_CONFIG,
    AutotuneChoice,
    gemm_fusion_keys,
    parse_codegen_versions,
    results_textproto,
  )

  name = "seed_mlp_a100_bfloat16.config_assigner_input.hlo.txt"
  with open(os.path.join(AUTOTUNE, name), encoding="utf-8") as f:
    keys = gemm_fusion_keys(f.read())
  text = results_textproto(
    "4882ef514d13f9de",
    parse_codegen_versions(AUTOTUNE_XLA_LOG),
    [AutotuneChoice(keys[0], "CUBLASLT_FISSION", CUBLAS_CONFIG)],
  )
  path = os.path.join(folder, "one.textproto")
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)
  return path
