"""Tests for hloprobe.compile.toolchain: XLA's ptxas search, stderr capture."""

from __future__ import annotations

import os
import stat

from absl.testing import absltest

from hloprobe import startup
from hloprobe.compile import toolchain


def _fake_ptxas(folder: str, version: str) -> str:
  """An executable that answers `--version` as ptxas does."""
  os.makedirs(folder, exist_ok=True)
  path = os.path.join(folder, "ptxas")
  with open(path, "w") as f:
    f.write(
      f"#!/bin/sh\necho 'Cuda compilation tools, release X, V{version}'\n"
    )
  os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
  return path


class FindPtxasTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.root = self.create_tempdir().full_path

  def _dir(self, name, version=None):
    folder = os.path.join(self.root, name)
    if version:
      _fake_ptxas(os.path.join(folder, "bin"), version)
    return folder

  def test_cuda_data_dir_first(self):
    data = self._dir("wheel", "12.9.86")
    on_path = self._dir("path", "13.0.88")
    found = toolchain.find_ptxas(data, os.path.join(on_path, "bin"), ())
    self.assertEqual(
      found,
      toolchain.Ptxas(
        os.path.join(data, "bin", "ptxas"), "12.9.86", "xla_gpu_cuda_data_dir"
      ),
    )

  def test_path_before_cuda_roots(self):
    on_path = self._dir("path", "13.0.88")
    root = self._dir("root", "12.4.0")
    found = toolchain.find_ptxas(
      self._dir("empty"), os.path.join(on_path, "bin"), (root,)
    )
    self.assertEqual((found.source, found.version), ("PATH", "13.0.88"))

  def test_skips_too_old_and_excluded(self):
    old = self._dir("old", "11.7.99")
    buggy = self._dir("buggy", "12.3.103")
    good = self._dir("good", "12.4.131")
    search = os.pathsep.join(os.path.join(d, "bin") for d in (old, buggy))
    found = toolchain.find_ptxas(None, search, (good,))
    self.assertEqual(
      (found.path, found.source),
      (os.path.join(good, "bin", "ptxas"), "CUDA root"),
    )

  def test_none_found(self):
    self.assertIsNone(toolchain.find_ptxas(self._dir("a"), self._dir("b"), ()))

  def test_wheel_is_found_when_installed(self):
    wheel = toolchain.nvcc_wheel_dir()
    if wheel is None:
      self.skipTest("nvidia-cuda-nvcc-cu12 is not installed")
    found = toolchain.find_ptxas(wheel)
    self.assertEqual(found.source, "xla_gpu_cuda_data_dir")
    self.assertTrue(found.version.startswith("12."), found)


class StderrTest(absltest.TestCase):
  def test_captured_stderr_sees_native_writes(self):
    with startup.captured_stderr() as log:
      os.write(2, b"from C\n")
    self.assertEqual(log[0], "from C\n")

  def test_filter_startup_noise(self):
    text = (
      "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
      "I0000 00:00:1795966802.678377    4229 cudart_stub.cc:31] Could not find cuda drivers on "
      "your machine, GPU will not be used.\n"
      "W1129 15:41:12.698856 5202 subprocess_compilation.cc:242] Falling back\n"
    )
    self.assertEqual(
      startup.filter_startup_noise(text),
      "W1129 15:41:12.698856 5202 subprocess_compilation.cc:242] Falling back\n",
    )


if __name__ == "__main__":
  absltest.main()
