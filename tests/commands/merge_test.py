"""`sweep --shard=I/N` and `hloprobe merge`: the merge of the seed sweep's
shards (with an experiment) equals the unsharded run, and shards that do
not make one sweep are refused with one line.

The independent source is the unsharded run's own output. The shards
share its records through the test process's record cache
(`testutil.record_cache`: same plan, same keys), so the three shards and
the re-run cost little more than the one sweep.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import tempfile

import pytest
import testutil
from absl.testing import absltest

# results.json without "created" and timings (`make bench` compares so too).
from hloprobe.tools.bench_shards import comparable as _comparable

# The seed sweep with an experiment, as small as shows the merge: two flag
# sets, two precisions, n = 1..3 (batch consistency against n = 1 crosses
# shards).
_SWEEP = (
  "--case=seed_mlp",
  "--batch_sizes=1-3",
  "--precisions=bfloat16,float32",
  "--targets=cpu",
  "--experiment=nodsr:--xla_disable_hlo_passes=dot-strength-reduction",
  "--jobs=1",
)


def _stream(path: str) -> list[dict]:
  """results.jsonl's configs, timings removed."""
  with open(path, encoding="utf-8") as f:
    lines = [json.loads(line) for line in f]
  for c in lines:
    c.pop("timing_s")
  return lines


def _sweep(*args):
  # The first sweep compiles 12 configs: more than run_hloprobe_here's
  # default minute on a loaded 2-core machine.
  return testutil.run_hloprobe_here(
    "sweep",
    *_SWEEP,
    f"--cache_dir={testutil.record_cache()}",
    *args,
    timeout_s=900,
  )


def _root(cls, name: str) -> str:
  """A new empty folder of `cls`'s own, removed after its tests (not a
  fixed path: a leftover or a concurrent run must not meet it)."""
  root = tempfile.mkdtemp(prefix=f"hloprobe-{name}-")
  cls.addClassCleanup(shutil.rmtree, root, ignore_errors=True)
  return root


# The module's some twenty in-process commands share warm workers.
_WORKERS = contextlib.ExitStack()


def setUpModule():
  _WORKERS.enter_context(testutil.shared_workers())


def tearDownModule():  # pytest calls it (not unittest's module cleanups)
  _WORKERS.close()


@pytest.mark.compiles
class MergeTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = _root(cls, "shards_merge")
    cls.full = _sweep(f"--output_dir={cls.root}/full")
    # Out of order, and shard 1 run twice (a retried CI job).
    cls.shards = {}
    for i in (2, 1, 0, 1):
      # The retry replaces the first run's results (`--overwrite`).
      again = ("--overwrite",) if i in cls.shards else ()
      cls.shards[i] = _sweep(
        f"--shard={i}/3", f"--output_dir={cls.root}/s{i}", *again
      )
    cls.merged = testutil.run_hloprobe_here(
      "merge",
      *(f"{cls.root}/s{i}" for i in (1, 2, 0)),
      f"--output_dir={cls.root}/merged",
    )

  def _dir(self, name):
    return os.path.join(self.root, name)

  def test_runs_succeed(self):
    self.assertEqual(self.full.returncode, 0, self.full.stderr)
    for i, proc in self.shards.items():
      self.assertEqual(proc.returncode, 0, (i, proc.stderr))
    self.assertEqual(self.merged.returncode, 0, self.merged.stderr)

  def test_shards_split_the_configs(self):
    counts = [
      len(
        _comparable(os.path.join(self._dir(f"s{i}"), "results.json"))["configs"]
      )
      for i in range(3)
    ]
    self.assertEqual(counts, [4, 4, 4])  # 12 configs, cost 1 each

  def test_merged_results_json_equals_unsharded(self):
    full = _comparable(os.path.join(self._dir("full"), "results.json"))
    merged = _comparable(os.path.join(self._dir("merged"), "results.json"))
    self.assertLen(full["configs"], 12)
    self.assertNotIn("shard", merged)
    self.assertEqual(merged["plan"]["cases"], ["seed_mlp"])
    self.assertEqual(merged["plan"]["batch_sizes"], [1, 2, 3])
    self.assertEqual(merged, full)

  def test_merged_table_stream_and_files_equal_unsharded(self):
    self.assertMultiLineEqual(self.merged.stdout, self.full.stdout)
    self.assertEqual(
      _stream(os.path.join(self._dir("merged"), "results.jsonl")),
      _stream(os.path.join(self._dir("full"), "results.jsonl")),
    )
    for name in ("report.html", "cpu/seed_mlp/n2-bfloat16-nodsr/optimized.hlo"):
      with open(os.path.join(self._dir("full"), name), encoding="utf-8") as f:
        want = f.read()
      with open(os.path.join(self._dir("merged"), name), encoding="utf-8") as f:
        self.assertEqual(f.read(), want, name)

  def test_shard_results_json_says_its_part(self):
    doc = _comparable(os.path.join(self._dir("s2"), "results.json"))
    entry = doc["shard"]
    self.assertEqual((entry["index"], entry["count"]), (2, 3))
    self.assertEqual(entry["configs"], [8, 9, 10, 11])
    self.assertRegex(entry["fingerprint"], "^[0-9a-f]{64}$")
    self.assertEqual(entry["plan"]["batch_sizes"], [1, 2, 3])

  def test_missing_shard_is_named(self):
    proc = testutil.run_hloprobe_here(
      "merge",
      self._dir("s0"),
      self._dir("s2"),
      f"--output_dir={self._dir('m')}",
    )
    self.assertEqual(proc.returncode, 2)
    self.assertEqual(
      proc.stderr.strip().splitlines(),
      [proc.stderr.strip()],  # one line
    )
    self.assertRegex(proc.stderr, r"missing shard 1/3 of plan [0-9a-f]{12}")

  def test_shard_twice_is_refused(self):
    proc = testutil.run_hloprobe_here(
      "merge",
      self._dir("s0"),
      self._dir("s1"),
      self._dir("s1"),
      self._dir("s2"),
    )
    self.assertEqual(proc.returncode, 2)
    self.assertRegex(proc.stderr, r"^hloprobe: error: shard 1/3 given twice")
    self.assertLen(proc.stderr.strip().splitlines(), 1)

  def test_foreign_shard_is_refused(self):
    # A shard of another plan (one precision less): its configs are hits.
    other = self._dir("other1")
    proc = testutil.run_hloprobe_here(
      "sweep",
      *_SWEEP[:2],
      "--precisions=bfloat16",
      *_SWEEP[3:],
      f"--cache_dir={testutil.record_cache()}",
      "--shard=1/3",
      f"--output_dir={other}",
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    proc = testutil.run_hloprobe_here(
      "merge", self._dir("s0"), other, self._dir("s2")
    )
    self.assertEqual(proc.returncode, 2)
    self.assertRegex(
      proc.stderr, r"^hloprobe: error: shards of different plans"
    )
    self.assertLen(proc.stderr.strip().splitlines(), 1)

  def test_unsharded_folder_is_refused(self):
    proc = testutil.run_hloprobe_here("merge", self._dir("full"))
    self.assertEqual(proc.returncode, 2)
    self.assertRegex(proc.stderr, "is not a shard's --output_dir")
    self.assertLen(proc.stderr.strip().splitlines(), 1)


@pytest.mark.compiles
class ResultsTest(absltest.TestCase):
  """`golden check --results` and `verify --results` on a merge's folder."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = _root(cls, "shards_results")
    for i in range(2):
      _sweep(f"--shard={i}/2", f"--output_dir={cls.root}/s{i}")
    testutil.run_hloprobe_here(
      "merge", f"{cls.root}/s0", f"{cls.root}/s1", f"--output_dir={cls.root}/m"
    )
    # The goldens from a sweep of their own (golden update caches
    # nothing): the independent side of the check.
    cls.golden = f"{cls.root}/golden"
    cls.update = testutil.run_hloprobe_here(
      "golden",
      "update",
      *_SWEEP[:4],
      f"--golden_dir={cls.golden}",
      timeout_s=900,
    )

  def test_golden_check_of_merged_results_matches(self):
    self.assertEqual(self.update.returncode, 0, self.update.stderr)
    proc = testutil.run_hloprobe_here(
      "golden",
      "check",
      f"--golden_dir={self.golden}",
      f"--results={self.root}/m",
    )
    self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

  def test_golden_check_of_changed_results_differs(self):
    from hloprobe.runtime import dump_record, load_record

    changed = f"{self.root}/changed"
    shutil.copytree(f"{self.root}/m", changed, dirs_exist_ok=True)
    path = os.path.join(changed, "records.hloprobe")
    with open(path, "rb") as f:
      records = list(load_record(f.read()))
    # Config 0 (n = 1) given config 1's (n = 2) compilation: other shapes.
    records[0] = dataclasses.replace(
      records[0], compilation=records[1].compilation
    )
    with open(path, "wb") as f:
      dump_record(tuple(records), f)
    proc = testutil.run_hloprobe_here(
      "golden",
      "check",
      f"--golden_dir={self.golden}",
      f"--results={changed}",
      f"--output_dir={self.root}/candidate",
    )
    self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)

  def test_verify_judges_merged_results(self):
    proc = testutil.run_hloprobe_here(
      "verify",
      *_SWEEP[:4],
      "--fix=" + _SWEEP[4].split("=", 1)[1],
      "--require=accurate",
      f"--results={self.root}/m",
    )
    self.assertIn(proc.returncode, (0, 1), proc.stderr)
    self.assertIn("accurate", proc.stdout)
    self.assertEqual(proc.stderr, "")

  def test_explain_of_merged_results_equals_explain(self):
    # explain's own sweep is this plan's: every config a cache hit. The
    # batch-invariance answer (on by default) runs each config's rows
    # again, about a third of a second sweep per explain: it is compared
    # once, the recorded plan below without it.
    run = (*_SWEEP, f"--cache_dir={testutil.record_cache()}", "--notry_fixes")
    swept = testutil.run_hloprobe_here("explain", *run, timeout_s=900)
    merged = testutil.run_hloprobe_here(
      "explain", *run, f"--results={self.root}/m", timeout_s=900
    )
    self.assertEqual(swept.returncode, 0, swept.stderr)
    self.assertEqual(merged.returncode, 0, merged.stderr)
    self.assertIn("batch-invariant", swept.stdout)
    self.assertMultiLineEqual(merged.stdout, swept.stdout)
    # Issue 39 item 10: no sweep flag retyped: the merge's recorded plan
    # gives what the flags typed out give (so what the sweep gives, above).
    off = (*run, "--invariance=off", f"--results={self.root}/m")
    typed = testutil.run_hloprobe_here("explain", *off, timeout_s=900)
    plain = testutil.run_hloprobe_here("explain", *off[5:], timeout_s=900)
    self.assertEqual(typed.returncode, 0, typed.stderr)
    self.assertEqual(plain.returncode, 0, plain.stderr)
    self.assertNotIn("batch-invariant", plain.stdout)
    self.assertMultiLineEqual(plain.stdout, typed.stdout)

  def test_results_missing_a_config_are_refused(self):
    proc = testutil.run_hloprobe_here(
      "verify",
      *_SWEEP[:4],
      "--fix=no_triton_gemm",
      "--require=accurate",
      f"--results={self.root}/m",
    )
    self.assertEqual(proc.returncode, 2)
    self.assertRegex(
      proc.stderr, r"has no config cpu seed_mlp n=1 bfloat16 \(no_triton_gemm\)"
    )

  def test_a_shard_is_not_results(self):
    proc = testutil.run_hloprobe_here(
      "golden",
      "check",
      f"--golden_dir={self.golden}",
      f"--results={self.root}/s1",
    )
    self.assertEqual(proc.returncode, 2)
    self.assertIn("one part of a sweep", proc.stderr)


class FlagsTest(absltest.TestCase):
  """Bad input, refused before anything compiles."""

  def test_shard_needs_output_dir(self):
    proc = testutil.run_hloprobe_here("sweep", "--shard=0/2")
    self.assertEqual(proc.returncode, 2)
    self.assertIn("--shard=0/2 needs --output_dir", proc.stderr)

  def test_shard_is_sweep_only(self):
    proc = testutil.run_hloprobe_here("explain", "--shard=0/2")
    self.assertEqual(proc.returncode, 2)
    self.assertIn("--shard is for `hloprobe sweep`", proc.stderr)

  def test_bad_shard(self):
    proc = testutil.run_hloprobe_here("sweep", "--shard=3/3", "--output_dir=x")
    self.assertEqual(proc.returncode, 2)
    self.assertIn("must be 0 to 2", proc.stderr)

  def test_merge_refuses_sweep_flags(self):
    proc = testutil.run_hloprobe_here("merge", "a", "--targets=a100")
    self.assertEqual(proc.returncode, 2)
    self.assertIn("--targets is the shards' own", proc.stderr)

  def test_merge_of_nothing(self):
    proc = testutil.run_hloprobe_here("merge")
    self.assertEqual(proc.returncode, 2)
    self.assertIn("`merge` takes the shards' folders", proc.stderr)

  def test_merge_of_a_folder_that_is_not_a_shard(self):
    folder = self.create_tempdir().full_path
    proc = testutil.run_hloprobe_here("merge", folder)
    self.assertEqual(proc.returncode, 2)
    self.assertIn(f"{folder} is not a shard's --output_dir", proc.stderr)

  def test_records_it_cannot_read_say_to_merge_again(self):
    # A merge's folder written by another hloprobe (its records' fields
    # differ) or damaged: one line that says what to do.
    from hloprobe.commands.shards import read_records
    from hloprobe.errors import InvalidArgumentError

    folder = self.create_tempdir()
    folder.create_file("records.hloprobe", content="not records")
    with self.assertRaisesRegex(
      InvalidArgumentError, r"records.hloprobe: .*shard and merge again\)$"
    ):
      read_records(folder.full_path)

  def test_a_case_file_not_found_says_where_to_merge(self):
    # Shards ran in another folder: their relative module-file --case word
    # is looked up from here, and the one line says to merge from theirs.
    from hloprobe.commands import merge
    from hloprobe.compile import get_target
    from hloprobe.errors import CaseError
    from hloprobe.ir import Precision
    from hloprobe.records import Config, ConfigResult

    words = {
      "cases": ["no_such_module.hlo"],
      "batch_sizes": [1],
      "precisions": ["float32"],
      "targets": ["cpu"],
      "explain_passes": False,
      "experiments": [],
    }
    config = Config("no_such_module", get_target("cpu"), 1, Precision.float32)
    with self.assertRaisesRegex(
      CaseError, "no_such_module.hlo.*run `merge` from the folder the shards"
    ) as e:
      merge._plan(words, [ConfigResult(config)])
    self.assertNotIn("\n", str(e.exception))


if __name__ == "__main__":
  absltest.main()
