"""Tests for hloprobe.compile.lowering's compile-only GPU path: configs newer
than the installed proto, the ptxas each compile used, a target that cannot
build."""

from __future__ import annotations

import dataclasses
import os
import stat
from unittest import mock

import jax
import numpy as np
import pytest
import testutil
from absl.testing import absltest, parameterized

from hloprobe.compile import cases, compat, lowering, targets, toolchain
from hloprobe.engine.measure import run_config

_SEED = cases.get_case("seed_mlp")


def _ptxas_without_sm70(folder: str) -> str:
  """A ptxas that answers `--version` as CUDA 13.0's and fails every build
  with CUDA 13 ptxas's error for sm_70; returns its path."""
  os.makedirs(folder)
  path = os.path.join(folder, "ptxas")
  with open(path, "w") as f:
    f.write(
      "#!/bin/sh\n"
      'if [ "$1" = "--version" ]; then\n'
      "  echo 'Cuda compilation tools, release 13.0, V13.0.88'; exit 0\n"
      "fi\n"
      "echo \"ptxas fatal   : Value 'sm_70' is not defined for option "
      "'gpu-name'\" >&2\n"
      "exit 255\n"
    )
  os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
  return path


_V100_DROPPED = (
  "GpuDeviceInfoProto.mem_clock_ghz",
  "GpuDeviceInfoProto.max_blocks_per_multiprocessor",
  "GpuDeviceInfoProto.collective_memory_granularity",
)


@pytest.mark.release_rules
class LoadTopologyTest(parameterized.TestCase):
  # XLA's specs (hloprobe/compile/gpu_specs) are newer than jaxlib 0.10.2's
  # GpuTargetConfigProto, which lacks these fields (xla/stream_executor/
  # device_description.proto at its XLA commit); 0.12.0.1's has them all.
  @parameterized.named_parameters(
    ("h100", "h100", ("GpuDeviceInfoProto.collective_memory_granularity",)),
    ("h200", "h200", ("GpuDeviceInfoProto.collective_memory_granularity",)),
    ("v100", "v100", _V100_DROPPED),
    ("a100", "a100", ()),
    ("t4", "t4", ()),
    ("l4", "l4", ()),
    ("a6000", "a6000", ()),
  )
  def test_loads_after_dropping_unknown_fields(self, name, dropped):
    if testutil.jaxlib_at_least("0.12.0.1"):
      dropped = ()
    t = targets.get_target(name)
    loaded = lowering.load_topology(t.name, t.config_text)
    self.assertEqual(loaded.dropped_fields, dropped)
    self.assertLen(loaded.topology.devices, 1)


@pytest.mark.compiles
class UnknownCompileOptionTest(absltest.TestCase):
  def test_names_the_option_xla_rejected(self):
    lowered = jax.jit(lambda x: x + 1).lower(np.ones(2, np.float32))
    with self.assertRaises(compat.runtime_error_type()) as raised:
      lowered.compile(compiler_options={"xla_hloprobe_no_such_option": "1"})
    self.assertEqual(
      compat.unknown_compile_option(raised.exception),
      "xla_hloprobe_no_such_option",
    )
    self.assertIsNone(compat.unknown_compile_option(ValueError("other")))


@pytest.mark.compiles
class CompileGpuTest(absltest.TestCase):
  def _compile(self, target, n=2):
    return lowering.compile_case(
      _SEED, _SEED.inputs_for(_SEED.make_inputs(), n), "bfloat16", target
    )

  def test_reports_ptxas_and_ptx(self):
    compiled = self._compile(targets.get_target("a100"))
    self.assertEqual(
      compiled.ptxas, toolchain.find_ptxas(toolchain.nvcc_wheel_dir())
    )
    self.assertEqual(compiled.device_kind, "NVIDIA A100-SXM4-40GB")
    self.assertTrue(
      any(".entry gemm_fusion_dot(" in text for text in compiled.ptx)
    )
    self.assertNotIn("cudart_stub", compiled.xla_log)

  @pytest.mark.release_rules
  def test_compiles_without_a_ptx_dump_option_xla_does_not_know(self):
    # jaxlib 0.11.2 needs xla_dump_emitter_re=ptx for the PTX; an XLA that
    # does not know a PTX-dump option must still compile. A name no XLA
    # knows stands in for it: XLA itself rejects it.
    bogus = "xla_hloprobe_no_such_option"
    with mock.patch.dict(
      lowering._PTX_DUMP_OPTIONS, {bogus: "ptx"}, clear=True
    ):
      compiled = self._compile(targets.get_target("a100"))
    # jaxlib 0.10.2 dumps the PTX with xla_dump_to alone; from XLA e4cb9bfc
    # (2026-08-04; seen on 0.11.2 and 0.12.0.1) only where
    # xla_dump_emitter_re matches.
    self.assertEqual(
      any(".entry gemm_fusion_dot(" in text for text in compiled.ptx),
      not testutil.jaxlib_at_least("0.11.2"),
    )

  def test_targets_own_dump_options_do_not_hide_the_ptx(self):
    # A target's compiler_options override hloprobe's, but not the dump
    # options the PTX is read through: with its own xla_dump_to, 0 PTX
    # texts came back before. jaxlib 0.11.2 also needs
    # xla_dump_emitter_re=ptx (0.10.2 ignores it for the PTX, so only the
    # options XLA is given can show it here).
    mine = self.create_tempdir().full_path
    a100 = dataclasses.replace(
      targets.get_target("a100"),
      compiler_options={"xla_dump_to": mine, "xla_dump_emitter_re": "x"},
    )
    compiled = self._compile(a100)
    self.assertTrue(
      any(".entry gemm_fusion_dot(" in text for text in compiled.ptx)
    )
    given = lowering._gpu_compiler_options(a100, "/hloprobe/dump")
    self.assertEqual(given["xla_dump_to"], "/hloprobe/dump")
    self.assertEqual(given["xla_dump_emitter_re"], "ptx")

  def test_v100_builds_with_the_wheels_ptxas(self):
    # The CUDA 12 wheel's ptxas still builds sm_70 (pyproject.toml installs
    # it on Linux); hloprobe passes it as xla_gpu_cuda_data_dir, ahead of
    # whatever is on PATH.
    wheel = toolchain.nvcc_wheel_dir()
    if wheel is None:
      self.skipTest("nvidia-cuda-nvcc-cu12 is not installed")
    compiled = self._compile(targets.get_target("v100"))
    self.assertEqual(compiled.ptxas, toolchain.find_ptxas(wheel))
    self.assertEqual(compiled.ptxas.source, "xla_gpu_cuda_data_dir")
    self.assertEqual(
      compiled.dropped_config_fields,
      () if testutil.jaxlib_at_least("0.12.0.1") else _V100_DROPPED,
    )

  def test_unbuildable_target_fails_alone_naming_ptxas(self):
    # A ptxas of the test's own, found first through xla_gpu_cuda_data_dir
    # whatever is on PATH: it says it is CUDA 13.0.88 and refuses sm_70 as
    # CUDA 13's ptxas does (a V100 is compute capability 7.0).
    root = self.create_tempdir().full_path
    fake = _ptxas_without_sm70(os.path.join(root, "bin"))
    v100 = dataclasses.replace(
      targets.get_target("v100"),
      compiler_options={"xla_gpu_cuda_data_dir": root},
    )
    tried = toolchain.find_ptxas(root)
    self.assertEqual(
      (tried.path, tried.version, tried.source),
      (fake, "13.0.88", "xla_gpu_cuda_data_dir"),
    )
    full = _SEED.make_inputs()
    bad = run_config(_SEED, full, None, v100, "bfloat16", 2)
    good = run_config(
      _SEED, full, None, targets.get_target("a100"), "bfloat16", 2
    )
    self.assertEqual(bad.failure.stage, "compile")
    self.assertRegex(
      bad.failure.error,
      rf"^ToolchainError: target 'v100' \(sm_70\): ptxas {fake} "
      r"\(CUDA 13\.0\.88, via xla_gpu_cuda_data_dir\) cannot build its "
      r"kernels: ",
    )
    self.assertTrue(good.ok, good.failure)


@pytest.mark.compiles
@pytest.mark.release_rules
class DeterministicOpsTest(absltest.TestCase):
  """`--xla_gpu_deterministic_ops` on a compile-only a100.

  XLA 56623979 (2026-05-18) leaves Triton out of gemm autotuning under
  deterministic ops; a deviceless compile cannot autotune what is left, so
  jaxlib 0.12.0.1 fails the Triton gemm fusions ("Failed to get configs"),
  where 0.10.2 (before that commit) still compiled them as Triton gemms.
  """

  def test_compiles_with_cublas_and_says_so_where_xla_has_no_config(self):
    doc = testutil.run_hloprobe_json(
      self,
      "sweep",
      "--targets=a100",
      "--batch_sizes=2",
      "--precisions=float32",
      "--experiment=deterministic_ops",
      "--nocache",
      "--format=json",
    )
    det = next(c for c in doc["configs"] if c["experiment"] != "baseline")
    self.assertEqual(det["status"], "ok", det["error"])
    fates = [s["fate"] for s in det["dot_sites"]][:3]  # the three gemms
    if testutil.jaxlib_at_least("0.12.0.1"):
      self.assertEqual(fates, ["cuBLASLt"] * 3)
      (note,) = det["compile_notes"]
      self.assertIn("xla_gpu_enable_triton_gemm=false", note)
      self.assertIn("xla_gpu_deterministic_ops", note)
    else:
      self.assertEqual(fates, ["Triton gemm"] * 3)
      self.assertEqual(det["compile_notes"], [])


if __name__ == "__main__":
  absltest.main()
