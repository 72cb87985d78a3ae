"""The command line under bad environments, bad inputs and interrupts
(issue 13): one line and exit 2 for bad input, nothing lost, nothing left."""

from __future__ import annotations

import json
import os

from absl.testing import absltest, parameterized
from testutil import run_hloprobe

from hloprobe.ir import textfile


def _error_lines(proc) -> list[str]:
  return [l for l in proc.stderr.splitlines() if l.startswith("hloprobe:")]


class BadInputCase(parameterized.TestCase):
  """Asserts one `hloprobe: error:` line, exit 2 and no output."""

  def assertUsageError(self, proc, message: str) -> None:
    self.assertEqual(proc.returncode, 2, proc.stderr)
    errors = _error_lines(proc)
    self.assertLen(errors, 1, proc.stderr)
    self.assertIn(message, errors[0])
    self.assertNotIn("Traceback", proc.stderr)
    self.assertEqual(proc.stdout, "")


class EnvironmentXlaFlagsTest(BadInputCase):
  @parameterized.named_parameters(
    (
      "unknown_flag",
      "--xla_cpu_enabel_fast_math=false",
      "XLA rejected flag --xla_cpu_enabel_fast_math=false",
    ),
    (
      "bad_value",
      "--xla_cpu_enable_fast_math=maybe",
      "XLA rejected flag --xla_cpu_enable_fast_math: cannot read the value "
      "'maybe'",
    ),
  )
  def test_named_in_one_line(self, xla_flags, message):
    proc = run_hloprobe(
      "sweep", "--batch_sizes=1", env={"XLA_FLAGS": xla_flags}
    )
    self.assertUsageError(proc, message)
    self.assertIn("XLA_FLAGS of the environment", proc.stderr)


if __name__ == "__main__":
  absltest.main()


class BoundedInputTest(BadInputCase):
  @parameterized.named_parameters(
    ("huge_range", "1-1000000000", "bad batch size '1-1000000000'"),
    ("overflowing_range", "1-100000000000000000000", "bad batch size '1-1"),
    ("too_many_sizes", "1-5000", "more than 4096 sizes"),
  )
  def test_batch_ranges_checked_before_building(self, sizes, message):
    self.assertUsageError(
      run_hloprobe("sweep", f"--batch_sizes={sizes}"), message
    )

  def test_batch_size_larger_than_the_case_is_a_usage_error(self):
    # seed_mlp's input grid is 64 x 64 = 4096 rows (its docstring).
    self.assertUsageError(
      run_hloprobe("sweep", "--batch_sizes=2,4097", "--precisions=float32"),
      "batch size 4097 exceeds case 'seed_mlp''s 4096 rows",
    )

  def _fifo(self) -> str:
    path = os.path.join(self.create_tempdir().full_path, "fifo.txtpb")
    os.mkfifo(path)
    return path

  def test_fifo_and_device_are_refused_not_read(self):
    fifo = self._fifo()
    for flag, path, kind in (
      ("--target_config", fifo, "a FIFO"),
      ("--target_config", "/dev/zero", "a character device"),
      ("--experiments_file", fifo, "a FIFO"),
      ("--experiments_file", "/dev/zero", "a character device"),
    ):
      with self.subTest(flag=flag, path=path):
        proc = run_hloprobe("sweep", f"{flag}={path}", timeout=120)
        self.assertUsageError(proc, f"{kind}, not a regular file")

  def test_manifest_target_fifo_is_refused(self):
    golden = self.create_tempdir().full_path
    fifo = self._fifo()
    manifest = {
      "schema": "hloprobe-golden-manifest",
      "schema_version": 1,
      "jax": "0.10.2",
      "jaxlib": "0.10.2",
      "date": "2026-01-01",
      "sweep": {
        "cases": ["seed_mlp"],
        "targets": [fifo],
        "batch_sizes": [1],
        "precisions": ["float32"],
      },
    }
    with open(os.path.join(golden, "MANIFEST.json"), "w") as f:
      json.dump(manifest, f)
    proc = run_hloprobe(
      "golden", "check", f"--golden_dir={golden}", timeout=120
    )
    self.assertNotEqual(proc.returncode, 0)
    self.assertLen(_error_lines(proc), 1, proc.stderr)
    self.assertIn("a FIFO, not a regular file", proc.stderr)

  def test_oversized_file_is_refused(self):
    big = self.create_tempfile("big.txt", "#" * (textfile.MAX_INPUT_BYTES + 1))
    self.assertUsageError(
      run_hloprobe("sweep", f"--experiments_file={big.full_path}"),
      "larger than the 16777216-byte limit",
    )
