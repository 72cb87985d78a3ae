"""report/stream.py: --output_dir's stream started, an earlier sweep's
results refused or, with --overwrite, removed (its own files only), and a
stream that cannot be written dropped instead of failing the sweep. On
folders made here; the earlier sweep's results.json is written by hand in
the layout `config_dir` gives (TARGET/CASE/nN-PRECISION[-EXPERIMENT])."""

from __future__ import annotations

import dataclasses
import json
import os
from unittest import mock

from absl.testing import absltest

from hloprobe.compile import get_target
from hloprobe.errors import InvalidArgumentError
from hloprobe.ir import Precision
from hloprobe.records import Config, ConfigResult, Failure
from hloprobe.report import files, stream


def _result() -> ConfigResult:
  return ConfigResult(
    Config("seed_mlp", get_target("cpu"), 1, Precision.float32)
  )


class StartStreamTest(absltest.TestCase):
  def test_a_new_folder_gets_an_empty_stream(self):
    out = os.path.join(self.create_tempdir().full_path, "new")
    self.assertEqual(stream.start_stream(out), out)
    self.assertEqual(os.listdir(out), ["results.jsonl"])
    self.assertIsNone(stream.start_stream(None))

  def test_earlier_results_refused_then_removed_with_overwrite(self):
    out = self.create_tempdir()
    out.create_file(
      "results.json",
      json.dumps(
        {
          "configs": [
            {
              "target": "cpu",
              "case": "seed_mlp",
              "n": 2,
              "precision": "float32",
            }
          ]
        }
      ),
    )
    out.create_file("cpu/seed_mlp/n2-float32/optimized.hlo", "HloModule m")
    out.create_file("notes.txt", "the user's own")
    with self.assertRaisesRegex(
      InvalidArgumentError,
      r"already holds a sweep's results \(results.json\); pass --overwrite",
    ):
      stream.start_stream(out.full_path)
    stream.start_stream(out.full_path, overwrite=True)
    self.assertCountEqual(
      os.listdir(out.full_path), ["notes.txt", "results.jsonl"]
    )

  def test_overwrite_refuses_an_unreadable_earlier_results_json(self):
    # Its config folders cannot be told from the user's files: nothing is
    # removed, and the one line says why (review finding 19).
    out = self.create_tempdir()
    out.create_file("results.json", '{"configs": [{"target": "cpu"}]}')
    out.create_file("cpu/seed_mlp/n2-float32/optimized.hlo", "HloModule m")
    with self.assertRaisesRegex(
      InvalidArgumentError, r"--overwrite: the earlier .*results.json cannot"
    ):
      stream.start_stream(out.full_path, overwrite=True)
    self.assertCountEqual(os.listdir(out.full_path), ["cpu", "results.json"])

  def test_overwrite_of_a_stream_without_results_json(self):
    out = self.create_tempdir()
    out.create_file("results.jsonl", "")
    self.assertEqual(stream.start_stream(out.full_path, True), out.full_path)

  def test_a_file_is_not_a_folder(self):
    path = self.create_tempfile("f").full_path
    with self.assertRaisesRegex(InvalidArgumentError, "is not a folder"):
      stream.start_stream(path)


class AppendLineTest(absltest.TestCase):
  def test_a_long_line_goes_out_in_one_write(self):
    # A buffered text file wrote a line over its 8 KiB chunk in two
    # writes, and a reader polling results.jsonl saw half of it (CI).
    out = self.create_tempdir().full_path
    long = dataclasses.replace(
      _result(), failure=Failure("compile", "x" * 20_000)
    )
    with mock.patch.object(files.os, "write", wraps=os.write) as write:
      files.append_result_line(out, _result())
      files.append_result_line(out, long)
    self.assertEqual(write.call_count, 2)
    with open(os.path.join(out, "results.jsonl")) as f:
      lines = [json.loads(line) for line in f]
    self.assertEqual([line["status"] for line in lines], ["ok", "failed"])
    self.assertIn("x" * 20_000, lines[1]["error"])


class ProgressTest(absltest.TestCase):
  def test_a_failed_append_stops_the_stream_not_the_sweep(self):
    # A folder that cannot be made: its parent is a file.
    gone = os.path.join(self.create_tempfile("f").full_path, "out")
    p = stream.Progress(total=2, output_dir=gone)
    p.add(_result())
    self.assertIsNone(p.output_dir)
    self.assertLen(p.done, 1)


if __name__ == "__main__":
  absltest.main()
