"""`errors.first_line`: an exception in one line.

Issue 39 item 10: a misspelt command, case, target or precision is one
usage line naming the nearest word first (difflib's closest, a choice
equal in lower case, or a short name people type: `tf32`), and an
attached-GPU target on a machine without one is one usage line naming a
compile-only target, before any config fails on it.
"""

from __future__ import annotations

import ctypes.util
import os
import pickle

from absl.testing import absltest, parameterized
from testutil import run_hloprobe_here

from hloprobe.errors import (
  TraceError,
  counted,
  did_you_mean,
  file_kind,
  first_line,
)
from hloprobe.golden.diff import CheckResult


class FirstLineTest(absltest.TestCase):
  def test_keeps_the_first_line_of_a_long_message(self):
    e = ValueError("  INTERNAL: ptxas exited 255\n  at line 3\n")
    self.assertEqual(first_line(e), "ValueError: INTERNAL: ptxas exited 255")
    self.assertEqual(
      first_line(e, with_type=False), "INTERNAL: ptxas exited 255"
    )

  def test_empty_message_is_the_class_name(self):
    for with_type in (True, False):
      self.assertEqual(
        first_line(KeyboardInterrupt(), with_type=with_type),
        "KeyboardInterrupt",
      )

  def test_a_trace_error_is_its_cause(self):
    # The function's own error, not hloprobe's wrapper of it.
    try:
      try:
        raise ValueError("no batch of four\nmore")
      except ValueError as cause:
        raise TraceError("ValueError: no batch of four") from cause
    except TraceError as e:
      self.assertEqual(first_line(e), "ValueError: no batch of four")
      # Pickled from a worker, it has lost its cause: its message is the
      # cause's line, not "TraceError: ValueError: ...".
      sent = pickle.loads(pickle.dumps(e))
      self.assertIsNone(sent.__cause__)
      self.assertEqual(first_line(sent), "ValueError: no batch of four")

  def test_a_message_that_cannot_be_read(self):
    class Broken(Exception):
      def __str__(self):
        raise RuntimeError("str broke")

    self.assertEqual(
      first_line(Broken()), "Broken (its message cannot be read)"
    )


def _has_nvidia_driver() -> bool:
  """Whether this machine has an NVIDIA driver (its library or device)."""
  return ctypes.util.find_library("cuda") is not None or os.path.exists(
    "/dev/nvidiactl"
  )


class SuggestTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("command", ["explian"], "unknown command 'explian'", "'explain'"),
    (
      "case",
      ["sweep", "--case=seed-mlp"],
      "unknown case 'seed-mlp'",
      "'seed_mlp'",
    ),
    ("target", ["sweep", "--targets=A100"], "unknown target 'A100'", "'a100'"),
    (
      "precision",
      ["sweep", "--precisions=tf32"],
      "flag --precisions=tf32",
      "'tensorfloat32'",
    ),
  )
  def test_one_line_with_the_nearest_word(self, words, said, nearest):
    proc = run_hloprobe_here(*words)
    self.assertEqual(proc.returncode, 2, proc.stderr)
    self.assertLen(proc.stderr.splitlines(), 1, proc.stderr)
    self.assertIn(said, proc.stderr)
    self.assertIn(f"did you mean {nearest}?", proc.stderr)

  def test_nothing_near_suggests_nothing(self):
    self.assertEqual(did_you_mean("zzzz", ["sweep", "explain"]), "")
    self.assertEqual(
      did_you_mean("bf16", ["bfloat16"], {"bf16": "bfloat16"}),
      "did you mean 'bfloat16'? ",
    )

  def test_help_of_a_misspelt_command(self):
    proc = run_hloprobe_here("explian", "--help")
    self.assertEqual(proc.returncode, 2)
    self.assertIn("did you mean 'explain'?", proc.stderr)


class PluralTest(absltest.TestCase):
  def test_one_is_singular(self):
    self.assertEqual(counted(1, "config"), "1 config")
    self.assertEqual(counted(0, "config"), "0 configs")
    self.assertEqual(counted(2, "config"), "2 configs")
    self.assertEqual(counted(2, "entry", "entries"), "2 entries")
    self.assertIn(": 1 file compared,", CheckResult("g", 1).render())


class FileKindTest(absltest.TestCase):
  """One `file_kind` for golden/lock's lock check (`os.lstat`) and ir's
  input files (`os.fstat`): real files of each kind made here."""

  def test_kinds_of_real_files(self):
    folder = self.create_tempdir().full_path
    fifo = os.path.join(folder, "fifo")
    os.mkfifo(fifo)
    link = os.path.join(folder, "link")
    os.symlink(fifo, link)
    self.assertEqual(file_kind(os.lstat(fifo).st_mode), "a FIFO")
    self.assertEqual(file_kind(os.lstat(link).st_mode), "a symbolic link")
    self.assertEqual(file_kind(os.stat(folder).st_mode), "a directory")
    self.assertEqual(
      file_kind(os.stat("/dev/null").st_mode), "a character device"
    )
    self.assertEqual(file_kind(0), "another kind of file")


class AttachedGpuTest(absltest.TestCase):
  def test_gpu_without_one_is_one_usage_line(self):
    if _has_nvidia_driver():
      self.skipTest("this machine has an NVIDIA driver: `gpu` may run here")
    proc = run_hloprobe_here("sweep", "--targets=cpu,gpu")
    self.assertEqual(proc.returncode, 2, proc.stderr)
    self.assertLen(proc.stderr.splitlines(), 1, proc.stderr)
    self.assertIn("--targets=gpu", proc.stderr)
    self.assertIn("--targets=a100", proc.stderr)
    self.assertEqual(proc.stdout, "")


if __name__ == "__main__":
  absltest.main()
