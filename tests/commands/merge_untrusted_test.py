"""`hloprobe merge` trusts nothing in a shard (issue 41, items 0 and 3).

The shards are written here as `sweep --shard` writes them (results.json's
shard entry from `report.results_schema.shard_json`, the records by
`commands.shards.write_records`), with records that failed before compiling, so
nothing compiles: the merge's checks are what is tested. The independent
source is the file system (a marker file the forged case would write) and
the words of the plan the shards were made from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import stat
import time

import testutil
from absl.testing import absltest

from hloprobe.commands import common, merge
from hloprobe.commands.shards import write_records
from hloprobe.compile import Case
from hloprobe.engine import SweepSpec, plan_sweep
from hloprobe.engine.shard import Shard
from hloprobe.errors import InvalidArgumentError
from hloprobe.records import ConfigResult, Failure
from hloprobe.report.results_schema import shard_json
from hloprobe.runtime import dump_record

# A case file that leaves a marker when anything imports it.
RECORDS_NAME = "records.hloprobe"
_EVIL = """\
import pathlib
pathlib.Path({marker!r}).write_text("ran")


def make_case():
  raise SystemExit(3)
"""


def _never(*_):
  raise AssertionError("the test's stand-in case ran")


def _plan(word: str, name: str, count: int):
  """The plan of a sweep of case `word` (named `name`) at n = 1, 2 on the
  CPU, cut into `count` shards (shard 0)."""
  case = Case(name=name, description="d", fn=_never, make_inputs=_never)
  plan = plan_sweep(
    SweepSpec(
      cases=(case,),
      case_names=(word,),
      batch_sizes=(1, 2),
      precisions=("float32", "bfloat16"),
      targets=("cpu",),
    )
  )
  return dataclasses.replace(plan, shard=Shard(0, count))


def _write_shards(root: str, word: str, name: str, count: int = 2) -> list:
  """Writes the `count` shards of `_plan`'s sweep under `root`; returns
  their folders."""
  folders = []
  for i in range(count):
    plan = dataclasses.replace(_plan(word, name, count), shard=Shard(i, count))
    folder = os.path.join(root, f"s{i}")
    os.makedirs(folder)
    records = [
      ConfigResult(c.config, failure=Failure("compile", "not compiled"))
      for c in plan.configs()
    ]
    doc = {"shard": shard_json(plan), "host": None}
    with open(os.path.join(folder, "results.json"), "w") as f:
      json.dump(doc, f)
    write_records(folder, records)
    folders.append(folder)
  return folders


def _args(folders, out=None) -> merge.MergeArgs:
  given = ("output_dir",) if out else ()
  return merge.MergeArgs(
    common=common.SweepWords(output_dir=out, given=given),
    words=tuple(folders),
  )


def _edit_results(folder: str, edit) -> None:
  path = os.path.join(folder, "results.json")
  with open(path) as f:
    doc = json.load(f)
  edit(doc)
  with open(path, "w") as f:
    json.dump(doc, f)


class UserCaseNeverRunsTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.root = self.create_tempdir().full_path
    self.marker = os.path.join(self.root, "MARKER")
    self.case_file = os.path.join(self.root, "evil.py")
    with open(self.case_file, "w") as f:
      f.write(_EVIL.format(marker=self.marker))
    self.word = f"{self.case_file}:make_case"

  def test_merge_joins_a_user_case_without_loading_it(self):
    folders = _write_shards(self.root, self.word, "evil")
    out = os.path.join(self.root, "merged")
    err = io.StringIO()
    with (
      contextlib.redirect_stderr(err),
      contextlib.redirect_stdout(io.StringIO()),
    ):
      status = merge.main(_args(folders, out))
    self.assertFalse(os.path.exists(self.marker))
    self.assertEqual(status, common.ExitStatus.FAILED)  # the records failed
    lines = [ln for ln in err.getvalue().splitlines() if "not loaded" in ln]
    self.assertLen(lines, 1)
    self.assertIn(self.word, lines[0])
    with open(os.path.join(out, "results.json")) as f:
      done = json.load(f)
    self.assertEqual(done["plan"]["cases"], [self.word])
    self.assertLen(done["configs"], 4)

  def test_a_shard_whose_plan_differs_is_refused(self):
    folders = _write_shards(self.root, "seed_mlp", "seed_mlp")

    def forge(doc):  # same fingerprint, another plan: the forged case's
      doc["shard"]["plan"]["cases"] = [self.word]

    _edit_results(folders[1], forge)
    with self.assertRaisesRegex(InvalidArgumentError, "another plan") as e:
      merge.merge(_args(folders))
    self.assertNotIn("\n", str(e.exception))
    self.assertFalse(os.path.exists(self.marker))


class BadShardFilesTest(absltest.TestCase):
  """Item 3: FIFOs, devices, huge counts and type-confused records."""

  def setUp(self):
    super().setUp()
    self.root = self.create_tempdir().full_path
    self.folders = _write_shards(self.root, "seed_mlp", "seed_mlp")

  def _refused(self, pattern: str) -> str:
    start = time.monotonic()
    with self.assertRaisesRegex(InvalidArgumentError, pattern) as e:
      merge.merge(_args(self.folders))
    self.assertLess(time.monotonic() - start, 5)
    self.assertNotIn("\n", str(e.exception))
    return str(e.exception)

  def test_merges_as_written(self):
    plan, _, records, _ = merge.merge(_args(self.folders))
    self.assertEqual([c.name for c in plan.cases], ["seed_mlp"])
    self.assertLen(records, 4)

  def test_fifo_records(self):
    path = os.path.join(self.folders[0], RECORDS_NAME)
    os.remove(path)
    os.mkfifo(path)
    self.assertIn("a FIFO", self._refused("not a regular file"))
    start = time.monotonic()  # the command line: one line, exit 2
    proc = testutil.run_hloprobe_here("merge", *self.folders, timeout_s=10)
    self.assertLess(time.monotonic() - start, 5)
    self.assertEqual(proc.returncode, 2, proc.stderr)
    self.assertLen(proc.stderr.splitlines(), 1, proc.stderr)

  def test_fifo_results_json(self):
    path = os.path.join(self.folders[1], "results.json")
    os.remove(path)
    os.mkfifo(path)
    self.assertTrue(stat.S_ISFIFO(os.stat(path).st_mode))
    self._refused("a FIFO, not a regular file")

  def test_link_to_dev_zero(self):
    for name in (RECORDS_NAME, "results.json"):
      with self.subTest(name):
        path = os.path.join(self.folders[0], name)
        saved = path + ".saved"
        os.rename(path, saved)
        os.symlink("/dev/zero", path)
        self._refused("a character device, not a regular file")
        os.remove(path)
        os.rename(saved, path)

  def test_huge_count(self):
    _edit_results(self.folders[0], lambda d: d["shard"].update(count=10**13))
    self._refused("a count of 10000000000000")

  def test_entry_of_other_types(self):
    for field, value in (
      ("index", "0"),
      ("count", 2.0),
      ("configs", {"0": 1}),
      ("configs", [0, "1"]),
      ("fingerprint", 7),
      ("plan", [1]),
    ):
      with self.subTest(field=field, value=value):
        path = os.path.join(self.folders[0], "results.json")
        with open(path) as f:
          saved = f.read()
        _edit_results(
          self.folders[0], lambda d, f=field, v=value: d["shard"].update({f: v})
        )
        self._refused("not a shard's --output_dir")
        with open(path, "w") as f:
          f.write(saved)

  def test_plan_words_of_other_types(self):
    for key, value in (("batch_sizes", ["1"]), ("cases", "seed_mlp")):
      with self.subTest(key=key):
        for folder in self.folders:
          _edit_results(
            folder, lambda d, k=key, v=value: d["shard"]["plan"].update({k: v})
          )
        self._refused("plan is malformed")

  def test_type_confused_records_with_a_valid_sha256(self):
    # `n` a string, `execution` a dict: dump_record writes them with a
    # correct hash; the schema check refuses them by their types.
    path = os.path.join(self.folders[0], RECORDS_NAME)
    good = merge.merge(_args(self.folders))[2][0]
    for bad in (
      dataclasses.replace(good, config=dataclasses.replace(good.config, n="1")),
      dataclasses.replace(good, execution={"run_s": 1.0}),
    ):
      with self.subTest(bad=bad):
        with open(path, "wb") as f:
          dump_record((bad, good), f)
        self._refused(r"records.hloprobe: .*is a (str|dict), not")


if __name__ == "__main__":
  absltest.main()


# Module files that crashed jaxlib's parsers in process (issue 41): HLO
# text 10^5 tuples deep (a hand count: the ENTRY's `{`, the tuples, the
# `[` of `f32[]`), and StableHLO bytecode whose producer is not UTF-8 (the
# bytecode header as MLIR's BytecodeReader reads it: magic, version
# varint, producer string).
_DEEP = 100_000
_HOSTILE = {
  "deep.hlo": (
    "HloModule m\n\nENTRY e {\n  ROOT p = "
    + "(" * _DEEP
    + "f32[]"
    + ")" * _DEEP
    + " parameter(0)\n}\n"
  ).encode(),
  "bad.mlirbc": b"ML\xefR" + bytes([(6 << 1) | 1]) + b"Stable\xffHLO\0rest",
}


class HostileModuleFileTest(absltest.TestCase):
  """A shard naming a module file that would crash jaxlib's parser: merge
  says so in one line and exits 2, the process alive."""

  def test_each_file_is_one_line_exit_2(self):
    for name, data in _HOSTILE.items():
      with self.subTest(name):
        root = self.create_tempdir().full_path
        with open(os.path.join(root, name), "wb") as f:
          f.write(data)
        folders = _write_shards(root, name, name.split(".")[0])
        cwd = os.getcwd()
        os.chdir(root)  # the shards' --case words, as they ran
        try:
          proc = testutil.run_hloprobe_here("merge", *folders)
        finally:
          os.chdir(cwd)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertLen(proc.stderr.splitlines(), 1, proc.stderr)
        self.assertIn(f"module file '{name}'", proc.stderr)
