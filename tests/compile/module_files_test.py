"""Bad module files: each one ModuleFileError of one line naming the file
and what is wrong; an unknown custom call named by `unknown_custom_calls`;
a 10,000-instruction module read in seconds.

The malformed files are made here from the recorded ones
(tests/testdata/modfile) or written by hand; the tests that reach XLA's
HLO parser or the CPU backend are marked `compiles`.
"""

from __future__ import annotations

import os
import shutil
import time

import jax
import numpy as np
import pytest
from absl.testing import absltest, parameterized

from hloprobe import ir
from hloprobe.compile.module_files import (
  ModuleFile,
  is_module_file,
  read_module_file,
  unknown_custom_calls,
)
from hloprobe.errors import CaseError, ModuleFileError
from hloprobe.ir.xla_proto import snapshot_bytes
from hloprobe.tools.bench import big_hlo_module

_DATA = os.path.join(
  os.path.dirname(os.path.dirname(__file__)), "testdata", "modfile"
)

_HLO = """HloModule small

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  w = f32[3,4]{1,0} parameter(1)
  ROOT d = f32[2,4]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def _recorded(name: str) -> bytes:
  with open(os.path.join(_DATA, name), "rb") as f:
    return f.read()


class ErrorsTest(parameterized.TestCase):
  def write(self, name: str, data: bytes | str) -> str:
    path = os.path.join(self.create_tempdir().full_path, name)
    with open(path, "wb") as f:
      f.write(data.encode() if isinstance(data, str) else data)
    return path

  def assert_one_line(self, path: str, pattern: str, **kwargs) -> None:
    with self.assertRaises(ModuleFileError) as e:
      read_module_file(path, **kwargs)
    message = str(e.exception)
    self.assertNotIn("\n", message)
    self.assertIn(repr(path), message)
    self.assertRegex(message, pattern)
    self.assertIsInstance(e.exception, CaseError)

  def test_empty(self):
    self.assert_one_line(self.write("empty.txt", b""), r": empty$")

  def test_directory(self):
    path = self.create_tempdir().full_path
    self.assert_one_line(path, r": a directory, not a regular file")

  def test_missing(self):
    path = os.path.join(self.create_tempdir().full_path, "gone.pb")
    self.assert_one_line(path, r"cannot read it \(No such file")

  def test_over_the_size_limit(self):
    path = self.write("m.txt", _HLO)
    self.assert_one_line(
      path, r"larger than the 100-byte limit for module files", max_bytes=100
    )

  def test_binary_garbage(self):
    path = self.write("noise.bin", bytes(range(200, 256)) * 20)
    self.assert_one_line(path, r": binary data \(1120 bytes, starting c8c9")

  def test_text_that_is_no_module(self):
    path = self.write("notes.txt", "Dear XLA team,\nthe matmul is wrong.\n")
    self.assert_one_line(path, r"neither HLO .* it begins 'Dear XLA team,'")

  def test_a_python_file_without_its_factory(self):
    path = self.write("model.py", "import jax\n\ndef make_case(): ...\n")
    self.assert_one_line(
      path,
      r"it begins 'import jax'; a Python file is a case as .*model\.py:FACTORY$",
    )

  def test_truncated_proto(self):
    data = _recorded("jit_f.before_optimizations.hlo.pb")
    path = self.write("cut.hlo.pb", data[: len(data) // 2])
    self.assert_one_line(
      path, r": truncated: field 1 at byte 0 runs past the end of the file"
    )

  def test_truncated_snapshot(self):
    data = _recorded("jit_f.snapshot.pb")
    path = self.write("cut.snapshot.pb", data[:-10])
    self.assert_one_line(path, r": truncated: field 3 at byte \d+ runs past")

  def test_proto_text_with_no_module(self):
    text = 'name: "jit_f"\nentry_computation_name: "main"\n'
    path = self.write("m.pbtxt", text)
    self.assert_one_line(path, r"in text format, but with no module in it$")

  def test_proto_text_syntax_error_gives_line_and_column(self):
    text = 'name: "jit_f"\ncomputations {\n  nme: "main"\n}\n'
    path = self.write("bad.pbtxt", text)
    self.assert_one_line(
      path,
      r": xla.HloModuleProto text format does not parse: 3:3 : .*"
      r'"xla.HloComputationProto" has no field named "nme"',
    )

  @pytest.mark.compiles  # XLA's HLO parser
  def test_hlo_syntax_error_gives_xlas_line_and_column(self):
    bad = _HLO.replace("dot(x, w)", "dot(x, nope)")
    path = self.write("bad.txt", bad)
    # XLA's parser's first error, at line 6, column of the operand list.
    self.assert_one_line(
      path, r": HLO text does not parse: XLA's parser at line 6:\d+: \S"
    )

  @pytest.mark.compiles  # MLIR's parser (jaxlib)
  def test_stablehlo_syntax_error_gives_line_and_column(self):
    text = (
      "module @m {\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
      "    return %b : tensor<2xf32>\n  }\n}\n"
    )
    path = self.write("bad.mlir", text)
    self.assert_one_line(path, r": StableHLO does not parse: line 3:\d+: ")

  @pytest.mark.compiles  # XLA reads the snapshot's module
  def test_snapshot_arguments_that_do_not_fit(self):
    module = ir.read_proto_file(
      _recorded("jit_f.before_optimizations.hlo.pb")
    ).module_proto
    x = np.zeros((2, 3), np.float32)
    path = self.write("s.pb", snapshot_bytes(module, (x, x)))
    # The recorded module takes f32[2,3] and f32[3,4] (its README).
    self.assert_one_line(
      path,
      r": the snapshot's argument 1 is f32\[2, 3\], its parameter "
      r"f32\[3, 4\]$",
    )

  def with_root(self, root: str) -> ModuleFile:
    """`_HLO` with another ROOT instruction, read."""
    text = _HLO.replace(
      "ROOT d = f32[2,4]{1,0} dot(x, w), lhs_contracting_dims={1}, "
      "rhs_contracting_dims={0}",
      root,
    )
    return read_module_file(self.write("root.txt", text))

  @pytest.mark.compiles  # XLA's parser, the CPU backend's registry
  def test_unknown_custom_call_is_named(self):
    mf = self.with_root(
      'ROOT d = f32[2,4]{1,0} custom-call(x, w), custom_call_target="foo"'
    )
    self.assertEqual(unknown_custom_calls(mf), ("foo",))
    self.assertIn("@foo", mf.stablehlo)

  @pytest.mark.compiles  # XLA's parser, the CPU backend's registry
  def test_known_custom_calls_are_not_named(self):
    mf = self.with_root(
      'ROOT s = f32[2,3]{1,0} custom-call(x), custom_call_target="Sharding"'
    )
    self.assertEqual(unknown_custom_calls(mf), ())

  @pytest.mark.compiles  # XLA's parser and HLO-to-StableHLO translation
  def test_gpu_optimized_module(self):
    """A recorded A100 after-optimizations module (Triton gemm fusions):
    optimized, and nothing in it unknown."""
    version = "0.10.2" if jax.__version__ == "0.10.2" else "0.12.0.1"
    path = os.path.join(
      os.path.dirname(os.path.dirname(__file__)),
      f"testdata/compiles/seed_a100_n2_bfloat16/jaxlib{version}/optimized.hlo",
    )
    mf = read_module_file(path)
    self.assertEqual((mf.kind, mf.optimized), ("hlo_text", True))
    self.assertIn("__triton_nested_gemm_fusion", mf.hlo_text)
    self.assertEqual(unknown_custom_calls(mf), ())

  @pytest.mark.compiles  # XLA's parser and HLO-to-StableHLO translation
  def test_ten_thousand_instructions_read_in_seconds(self):
    path = self.write("big.txt", big_hlo_module(10_000))
    start = time.perf_counter()
    mf = read_module_file(path)
    elapsed_s = time.perf_counter() - start
    self.assertEqual(mf.stablehlo.count("stablehlo.dot_general"), 999)
    self.assertLess(elapsed_s, 60.0)  # about 1 s here; a generous bound


class IsModuleFileTest(absltest.TestCase):
  def test_paths(self):
    folder = self.create_tempdir().full_path
    mlir = os.path.join(folder, "m.mlir")
    shutil.copy(os.path.join(_DATA, "jit_f.before_optimizations.txt"), mlir)
    script = os.path.join(folder, "case.py")
    with open(script, "w") as f:
      f.write("x = 1\n")
    self.assertTrue(is_module_file(mlir))  # HLO text, whatever the suffix
    self.assertTrue(is_module_file(folder))  # read_module_file refuses it
    self.assertFalse(is_module_file(script))
    self.assertFalse(is_module_file(f"{script}:make"))
    self.assertFalse(is_module_file("seed_mlp"))
    self.assertFalse(is_module_file("pkg.module:factory"))

  def test_record_is_frozen(self):
    mf = ModuleFile(
      "p", "hlo_text", "m", "", "HloModule m", False, (), None, None
    )
    with self.assertRaises(AttributeError):
      mf.name = "other"  # type: ignore[misc]


if __name__ == "__main__":
  absltest.main()
