"""Issue 27 items 10 and 17: a case's name never writes outside
--output_dir nor reaches the terminal raw; two sweeps never mix their
results in one --output_dir."""

from __future__ import annotations

import contextlib
import io
import json
import os
import textwrap

import numpy as np
import pytest
import testutil
from absl.testing import absltest
from testutil import run_hloprobe_here

from hloprobe import startup
from hloprobe.errors import InvalidArgumentError
from hloprobe.ir import path_part
from hloprobe.numerics import accuracy
from hloprobe.report.stream import start_stream

_CASES = textwrap.dedent("""\
  import numpy as np

  import hloprobe


  def _fn(x, w):
    return x @ w


  def _inputs():
    g = np.random.default_rng(0)
    return (
      g.standard_normal((4, 8)).astype(np.float32),
      g.standard_normal((8, 4)).astype(np.float32),
    )


  def _case(name):
    return hloprobe.Case(
      name=name, description="x @ w", fn=_fn, make_inputs=_inputs,
      in_axes=(0, None), output_axis=0,
    )


  def up():
    return _case("../x")


  def absolute():
    return _case(ABSOLUTE)


  def ansi():
    return _case("\\x1b[31mred\\x1b[0m")
""")


class PathPartTest(absltest.TestCase):
  def test_names_become_one_part(self):
    for name, part in (
      ("seed_mlp", "seed_mlp"),
      ("a100", "a100"),
      ("../x", ".._x"),
      ("/abs/y", "_abs_y"),
      ("..", "__"),
      (".", "_"),
      ("", "_"),
      ("a\\b", "a_b"),
      ("a\x00b\x1b[0m", "a_b_[0m"),
    ):
      with self.subTest(name=name):
        self.assertEqual(path_part(name), part)

  def test_control_characters_are_printed_escaped(self):
    out = io.StringIO()
    stream = startup.EscapingStream(out)
    self.assertEqual(stream.write("\x1b[31mred\x07\x9b\tok\r\n"), 15)
    self.assertEqual(out.getvalue(), "\\x1b[31mred\\x07\\x9b\tok\r\n")


class StartStreamTest(absltest.TestCase):
  def _earlier_sweep(self) -> str:
    out = self.create_tempdir().full_path
    results = {
      "configs": [
        {"target": "cpu", "case": "../x", "n": 1, "precision": "float32"},
        {
          "target": "a100",
          "case": "seed_mlp",
          "n": 2,
          "precision": "bfloat16",
          "experiment": "no_split_k",
        },
      ]
    }
    for rel in ("cpu/.._x/n1-float32", "a100/seed_mlp/n2-bfloat16-no_split_k"):
      os.makedirs(os.path.join(out, rel))
      with open(os.path.join(out, rel, "optimized.hlo"), "w") as f:
        f.write("HloModule m\n")
    os.makedirs(os.path.join(out, "cpu", "mine"))  # the user's own
    for name, text in (
      ("results.json", json.dumps(results)),
      ("results.jsonl", "{}\n"),
      ("report.html", "<html>"),
      ("notes.txt", "the user's own"),
    ):
      with open(os.path.join(out, name), "w") as f:
        f.write(text)
    return out

  def test_earlier_results_are_refused(self):
    out = self._earlier_sweep()
    with self.assertRaisesRegex(
      InvalidArgumentError,
      r"already holds a sweep's results \(results\.json, results\.jsonl\); "
      r"pass --overwrite",
    ):
      start_stream(out)
    self.assertTrue(os.path.exists(os.path.join(out, "results.json")))

  def test_overwrite_removes_only_the_earlier_results(self):
    out = self._earlier_sweep()
    self.assertEqual(start_stream(out, overwrite=True), out)
    left = sorted(
      os.path.relpath(os.path.join(d, n), out)
      for d, dirs, names in os.walk(out)
      for n in dirs + names
    )
    self.assertEqual(left, ["cpu", "cpu/mine", "notes.txt", "results.jsonl"])
    with open(os.path.join(out, "results.jsonl")) as f:
      self.assertEqual(f.read(), "")

  def test_a_file_or_device_is_refused_before_anything_runs(self):
    plain = self.create_tempfile("plain").full_path
    for path in (plain, os.devnull):
      with self.assertRaisesRegex(
        InvalidArgumentError, r"^--output_dir=.* is not a folder; give"
      ):
        start_stream(path)

  def test_an_empty_folder_is_taken(self):
    out = self.create_tempdir().full_path
    self.assertEqual(start_stream(out), out)


class RowZeroKeptTest(absltest.TestCase):
  """Item 18: an ErrorStats keeps at most ROW0_KEPT values of row 0."""

  def test_a_large_row_is_cut_a_small_one_kept_whole(self):
    kept = accuracy.ROW0_KEPT
    for shape, size, values in (
      ((2, 8, 4), 32, (8, 4)),
      ((2, 64, kept // 32), 2 * kept, (kept,)),
    ):
      with self.subTest(shape=shape):
        got = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        stats = accuracy.ErrorStats.of(got, got.astype(np.float64) + 0.5)
        self.assertEqual(stats.row0_size, size)
        self.assertEqual(stats.row0_values.shape, values)
        np.testing.assert_array_equal(
          np.ravel(stats.row0_values), np.ravel(got[0])[: min(size, kept)]
        )
        # row 0's errors are still over all of it
        self.assertEqual(stats.row0_abs, 0.5)


@pytest.mark.compiles  # sweeps through the command line
class OutputDirTest(absltest.TestCase):
  """One sweep of three badly named cases, then a second into its folder."""

  def test_names_stay_inside_and_a_second_sweep_is_refused(self):
    folder = self.create_tempdir().full_path
    outside = os.path.join(self.create_tempdir().full_path, "abs")
    with open(os.path.join(folder, "bad_names.py"), "w") as f:
      f.write(_CASES.replace("ABSOLUTE", repr(outside)))
    out = os.path.join(folder, "out")
    sweep = [
      "sweep",
      "--case=bad_names.py:up,bad_names.py:absolute",
      "--targets=cpu",
      "--batch_sizes=1",
      "--precisions=float32",
      f"--output_dir={out}",
      "--jobs=1",  # both configs in one compile worker: one start, not two
    ]
    # In this process, in the cases' folder, as the two runs below (a fresh
    # process's CLI run through --output_dir: tests/runtime/host_test.py);
    # the three load the cases' file in one loader worker, started there.
    self.enter_context(testutil.shared_case_loader())
    with contextlib.chdir(folder):
      proc = run_hloprobe_here(*sweep, timeout_s=600)
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertFalse(os.path.exists(os.path.join(folder, "x")))
    self.assertFalse(os.path.exists(outside))
    written = sorted(os.listdir(os.path.join(out, "cpu")))
    self.assertEqual(written, sorted([".._x", path_part(outside)]))

    # A name holding a control character is refused (one line, exit 2:
    # issue 27 item 14), its escape sequence written escaped.
    with contextlib.chdir(folder):
      ansi = run_hloprobe_here(
        "sweep",
        "--case=bad_names.py:ansi",
        "--targets=cpu",
        "--batch_sizes=1",
        "--precisions=float32",
        f"--output_dir={out}-ansi",
        timeout_s=300,
      )
    self.assertEqual(ansi.returncode, 2, ansi.stderr)
    self.assertNotIn("\x1b", ansi.stdout + ansi.stderr)
    self.assertIn("\\x1b[31mred\\x1b[0m", ansi.stderr)

    with contextlib.chdir(folder):
      again = run_hloprobe_here(*sweep, timeout_s=300)
    self.assertEqual(again.returncode, 2, again.stderr)
    self.assertEqual(
      [l for l in again.stderr.splitlines() if l.startswith("hloprobe:")],
      [
        f"hloprobe: error: --output_dir={out!r} already holds a sweep's "
        "results (results.json, results.jsonl); pass --overwrite to replace "
        "them, or choose another folder"
      ],
    )
    self.assertEqual(again.stdout, "")


if __name__ == "__main__":
  absltest.main()
