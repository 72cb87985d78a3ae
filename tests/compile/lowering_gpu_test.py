"""Tests for hloprobe.compile.lowering's compile-only GPU path: configs newer
than the installed proto, the ptxas each compile used, a target that cannot
build."""

from __future__ import annotations

import dataclasses

from absl.testing import absltest, parameterized

from hloprobe import sweep
from hloprobe.compile import cases, lowering, targets, toolchain
from hloprobe.errors import ToolchainError

_SEED = cases.get_case("seed_mlp")
_V100_DROPPED = (
  "GpuDeviceInfoProto.mem_clock_ghz",
  "GpuDeviceInfoProto.max_blocks_per_multiprocessor",
  "GpuDeviceInfoProto.collective_memory_granularity",
)


class LoadTopologyTest(parameterized.TestCase):
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
    t = targets.get_target(name)
    loaded = lowering.load_topology(t.name, t.config_text)
    self.assertEqual(loaded.dropped_fields, dropped)
    self.assertLen(loaded.topology.devices, 1)


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

  def test_v100_builds_with_project_ptxas_or_names_it(self):
    wheel = toolchain.nvcc_wheel_dir()
    expected = toolchain.find_ptxas(wheel)
    try:
      compiled = self._compile(targets.get_target("v100"))
    except ToolchainError as e:
      self.assertIn(str(expected), str(e))
      return
    self.assertEqual(compiled.ptxas, expected)
    self.assertEqual(compiled.dropped_config_fields, _V100_DROPPED)
    if wheel is not None:
      self.assertEqual(compiled.ptxas.source, "xla_gpu_cuda_data_dir")

  def test_unbuildable_target_fails_alone_naming_ptxas(self):
    empty = self.create_tempdir().full_path
    v100 = dataclasses.replace(
      targets.get_target("v100"),
      compiler_options={"xla_gpu_cuda_data_dir": empty},
    )
    tried = toolchain.find_ptxas(empty)
    if tried is None or int(tried.version.split(".")[0]) < 13:
      self.skipTest(
        f"needs a CUDA 13 ptxas (no sm_70) found after {empty}; found: {tried}"
      )
    full = _SEED.make_inputs()
    bad = sweep.run_config(_SEED, full, None, v100, "bfloat16", 2)
    good = sweep.run_config(
      _SEED, full, None, targets.get_target("a100"), "bfloat16", 2
    )
    self.assertEqual(bad.stage, "compile")
    self.assertRegex(
      bad.error,
      rf"^ToolchainError: target 'v100' \(sm_70\): ptxas {tried.path} "
      r"\(CUDA 13[.\d]+, via PATH\) cannot build its kernels: .*ptxas too old",
    )
    self.assertTrue(good.ok, good.error)


if __name__ == "__main__":
  absltest.main()
