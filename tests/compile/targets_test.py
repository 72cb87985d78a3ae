"""Tests for hloprobe.compile.targets: built-in targets, config files, field
dropping."""

from __future__ import annotations

import ast
import inspect

from absl.testing import absltest, parameterized

from hloprobe.compile import targets
from hloprobe.errors import TargetError

_V100_LOG = (
  "E1129 15:40:41.212428 4690 text_format.cc:378] Error parsing text-format "
  "stream_executor.GpuTargetConfigProto: 50:16: Message type "
  '"stream_executor.GpuDeviceInfoProto" has no field named "mem_clock_ghz".'
)
_SMALL = """\
# header kept
gpu_device_info {
  core_count: 40
  scalar_unit_description {
    rate_infos { key: 4 value { clock_rate_ghz: 1.5 } }
  }
  cuda_compute_capability { major: 7 minor: 5 }
  name: "Tesla T4"
}
device_description_str: "Tesla T4"
"""


class BuiltinTargetsTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("a100", "a100", "8.0", "NVIDIA A100-SXM4-40GB"),
    ("h100", "h100", "9.0a", "NVIDIA H100 80GB HBM3"),
    ("h200", "h200", "9.0a", "NVIDIA H200 141GB HBM3e"),
    ("t4", "t4", "7.5", "Tesla T4"),
    ("l4", "l4", "8.9", "NVIDIA L4"),
    ("a6000", "a6000", "8.6", "NVIDIA RTX A6000"),
    ("v100", "v100", "7.0", "Tesla V100-SXM2-16GB"),
  )
  def test_compile_only_gpu(self, name, cc, device):
    t = targets.get_target(name)
    self.assertEqual(
      (t.platform, t.compile_only, t.compute_capability), ("cuda", True, cc)
    )
    self.assertIn(device, t.description)
    self.assertIn(
      "Copyright" if name not in ("t4", "l4") else "NVIDIA", t.config_text
    )

  def test_cpu_and_gpu_have_no_config(self):
    for name in ("cpu", "gpu"):
      t = targets.get_target(name)
      self.assertIsNone(t.config_text)
      self.assertFalse(t.compile_only)

  def test_unknown_name(self):
    with self.assertRaisesRegex(
      TargetError,
      r"unknown target 'a200'; did you mean '(a100|h200)'\? choose from cpu, "
      "gpu, a100",
    ):
      targets.get_target("a200")

  def test_module_calls_no_jax(self):
    tree = ast.parse(inspect.getsource(targets))
    imported = {
      a.name
      for n in ast.walk(tree)
      if isinstance(n, (ast.Import, ast.ImportFrom))
      for a in n.names
    } | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    self.assertFalse(
      {m for m in imported if m and m.split(".")[0] in ("jax", "jaxlib")}
    )


class LoadTargetConfigTest(absltest.TestCase):
  def test_loads_and_names_after_file(self):
    path = self.create_tempfile("my_t4.txtpb", _SMALL).full_path
    t = targets.load_target_config(path)
    self.assertEqual(
      (t.name, t.compute_capability, t.config_path), ("my_t4", "7.5", path)
    )
    self.assertEqual(targets.get_target(path), t)

  def _assert_load_fails(self, name, text, pattern):
    """load_target_config of TEXT saved as NAME raises TargetError ~ PATTERN."""
    path = self.create_tempfile(name, text).full_path
    with self.assertRaisesRegex(TargetError, pattern) as cm:
      targets.load_target_config(path)
    return cm.exception

  def test_count_xla_divides_by_must_be_positive(self):
    # XLA dies with SIGFPE on threads_per_warp: 0 (jaxlib 0.10.2).
    for field, value in (
      ("threads_per_warp", "0"),
      ("block_dim_limit_x", "-1"),
    ):
      self._assert_load_fails(
        f"{field}.txtpb",
        _SMALL.replace("core_count: 40", f"{field}: {value}"),
        f"gpu_device_info.{field} is '{value}'; it must be a pos",
      )

  def test_syntax_error_is_one_line(self):
    error = self._assert_load_fails(
      "bad.txtpb",
      "gpu_device_info {\n  core_count: 4\n",
      r"bad\.txtpb:\d+:\d+: not a GpuTargetConfigProto.*missing '}'",
    )
    self.assertNotIn("\n", str(error))

  def test_not_a_proto(self):
    self._assert_load_fails(
      "notes.txtpb", "it's prose, not a proto", "not a GpuTargetConfigProto"
    )

  def test_needs_cuda_compute_capability(self):
    self._assert_load_fails(
      "rocm.txtpb",
      "gpu_device_info { core_count: 4 }",
      "no gpu_device_info.cuda_compute_capability",
    )

  def test_any_existing_file_is_read_as_a_config(self):
    passwd = self.create_tempfile(
      "passwd", "root:x:0:0:root:/root:/bin/bash\n"
    ).full_path
    with self.assertRaisesRegex(
      TargetError, rf"^{passwd}:1:\d+: not a GpuTargetConfigProto text file"
    ):
      targets.get_target(passwd)
    binary = self.create_tempfile("blob", b"\xff\xfe\x00", mode="wb")
    with self.assertRaisesRegex(TargetError, "not UTF-8 text \\(byte 0x"):
      targets.get_target(binary.full_path)
    plain = self.create_tempfile("my_t4_config", _SMALL).full_path
    self.assertEqual(targets.get_target(plain).compute_capability, "7.5")

  def test_is_config_path(self):
    self.assertFalse(targets.is_config_path("a100"))
    self.assertFalse(targets.is_config_path("tpu"))
    self.assertTrue(targets.is_config_path("x.txtpb"))
    self.assertTrue(targets.is_config_path("./cpu"))

  def test_missing_file(self):
    with self.assertRaisesRegex(
      TargetError, r"--target_config='/nonexistent/x.txtpb': cannot read it"
    ):
      targets.load_target_config("/nonexistent/x.txtpb")


class DropFieldTest(parameterized.TestCase):
  def test_parse_unknown_field_log(self):
    field = targets.parse_unknown_field_log("noise\n" + _V100_LOG)
    self.assertEqual(
      field,
      targets.UnknownField(
        "stream_executor.GpuDeviceInfoProto", "mem_clock_ghz", 50, 16
      ),
    )
    self.assertEqual(field.qualified_name, "GpuDeviceInfoProto.mem_clock_ghz")
    self.assertIsNone(
      targets.parse_unknown_field_log("Failed to parse GpuTargetConfigProto")
    )

  def test_drops_scalar_line(self):
    text = targets.get_target("v100").config_text
    out = targets.drop_field(text, targets.parse_unknown_field_log(_V100_LOG))
    self.assertNotIn("mem_clock_ghz", out)
    self.assertEqual(len(out.splitlines()), len(text.splitlines()) - 1)
    self.assertIn("max_blocks_per_multiprocessor: 32", out)

  def test_drops_message_block(self):
    field = targets.UnknownField("m", "scalar_unit_description", 4, 26)
    out = targets.drop_field(_SMALL, field)
    self.assertMultiLineEqual(
      out,
      _SMALL.replace(
        "  scalar_unit_description {\n    rate_infos { key: 4 value { clock_rate_ghz: 1.5 } }\n  }\n",
        "",
      ),
    )

  def test_drops_field_sharing_a_line(self):
    field = targets.UnknownField("m", "minor", 7, 43)
    out = targets.drop_field(_SMALL, field)
    self.assertIn("cuda_compute_capability { major: 7  }", out)

  def test_wrong_position_is_an_error(self):
    with self.assertRaisesRegex(
      TargetError, "nothing named so ends at line 3, column 9"
    ):
      targets.drop_field(_SMALL, targets.UnknownField("m", "name", 3, 9))


if __name__ == "__main__":
  absltest.main()
