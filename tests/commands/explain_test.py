"""Issue 39 item 10: `explain --results=DIR` reads the sweep from DIR's
results.json (a merge's or an unsharded sweep's "plan", a shard's "shard"
plan) when no sweep flag is given; a results.json without one is one line
asking for the flags. The merged sweep end to end is
tests/commands/merge_test.py's.

And `explain --only=invariance` (issue 38 item 6): what it refuses, in
one line before any work.
"""

from __future__ import annotations

import json
import os

import pytest
from absl.testing import absltest
from testutil import run_hloprobe_here

from hloprobe.commands import common, explain, merge
from hloprobe.errors import InvalidArgumentError
from hloprobe.report import results_json

_PLAN = {
  "cases": ["seed_mlp"],
  "batch_sizes": [1, 2, 3],
  "precisions": ["bfloat16", "float32"],
  "targets": ["cpu", "a100"],
  "experiments": ["nodsr:--xla_disable_hlo_passes=dot-strength-reduction"],
  "explain_passes": False,
  "inputs": None,
}


class RecordedPlanTest(absltest.TestCase):
  def _folder(self, doc: dict) -> str:
    folder = self.create_tempdir().full_path
    with open(os.path.join(folder, "results.json"), "w") as f:
      json.dump(doc, f)
    return folder

  def test_a_merged_plan_is_read(self):
    doc = results_json([], {"jax": "x", "jaxlib": "x"}, plan=_PLAN)
    self.assertEqual(merge.recorded_plan(self._folder(doc)), _PLAN)

  def test_a_shards_plan_is_read(self):
    folder = self._folder({"configs": [], "shard": {"plan": _PLAN}})
    self.assertEqual(merge.recorded_plan(folder), _PLAN)

  def test_no_plan_is_one_line(self):
    folder = self._folder({"configs": []})
    with self.assertRaises(InvalidArgumentError) as e:
      merge.recorded_plan(folder)
    self.assertNotIn("\n", str(e.exception))
    self.assertIn("records no plan", str(e.exception))
    with self.assertRaises(InvalidArgumentError):
      merge.recorded_plan(self.create_tempdir().full_path)

  def test_the_words_become_the_sweep_flags(self):
    doc = results_json([], {"jax": "x", "jaxlib": "x"}, plan=_PLAN)
    given = common.SweepWords(jobs=3)
    words, experiments = explain._recorded_words(self._folder(doc), given)
    self.assertEqual(words.case, ("seed_mlp",))
    self.assertEqual(words.batch_sizes, "1,2,3")
    self.assertEqual(words.precisions, ("bfloat16", "float32"))
    self.assertEqual(words.targets, ("cpu", "a100"))
    self.assertEqual(words.jobs, 3)  # the flags given stay
    self.assertEqual(experiments, tuple(_PLAN["experiments"]))


class NumbersHostTest(absltest.TestCase):
  """Review finding 13: --results=DIR never falls back to this CPU."""

  def _folder(self, doc) -> str:
    folder = self.create_tempdir().full_path
    with open(os.path.join(folder, "results.json"), "w") as f:
      json.dump(doc, f)
    return folder

  def test_no_host_is_unknown_not_this_cpu(self):
    folder = self._folder({"schema": "hloprobe.results", "host": None})
    path = os.path.join(folder, "results.json")
    self.assertEqual(
      explain.numbers_host(folder),
      (None, f"host: unknown (not in {path})"),
    )

  def test_unreadable_results_is_unknown(self):
    folder = self.create_tempdir().full_path
    cpu, words = explain.numbers_host(folder)
    self.assertIsNone(cpu)
    self.assertEqual(words, f"host: unknown (not in {folder}/results.json)")

  def test_the_named_host_is_used(self):
    host = {
      "model": "Planted CPU",
      "machine": "x86_64",
      "host_isa": "AVX2",
      "max_isa": None,
      "isa": "AVX2",
    }
    cpu, words = explain.numbers_host(self._folder({"host": host}))
    self.assertEqual(cpu.as_json(), host)
    self.assertIsNone(words)

  def test_without_results_this_cpu(self):
    self.assertEqual(explain.numbers_host(None), (common.host(), None))


@pytest.mark.compiles  # a cpu sweep of two configs, in this process
class ExplainFolderTest(absltest.TestCase):
  def test_explain_records_its_plan_and_results_asks_for_records(self):
    # Found walking issue 39 as a user: explain's results.json held no
    # plan, so `explain --results=` of it blamed "an older hloprobe". Its
    # plan is recorded now, as sweep's is; the records --results judges
    # come from `sweep --shard` and `merge` only, which one line says.
    out = self.create_tempdir().full_path
    flags = ["--targets=cpu", "--batch_sizes=1,2", "--precisions=float32"]
    first = run_hloprobe_here(
      "explain", *flags, f"--output_dir={out}", timeout_s=300
    )
    self.assertEqual(first.returncode, 0, first.stderr)
    plan = merge.recorded_plan(out)
    self.assertEqual(
      (plan["cases"], plan["targets"], plan["batch_sizes"]),
      (["seed_mlp"], ["cpu"], [1, 2]),
    )
    self.assertEqual(plan["precisions"], ["float32"])
    again = run_hloprobe_here("explain", f"--results={out}", timeout_s=300)
    self.assertEqual(again.returncode, 2, again.stderr)
    self.assertLen(again.stderr.splitlines(), 1)
    self.assertIn("records.hloprobe", again.stderr)
    self.assertIn("`hloprobe merge`", again.stderr)
    self.assertNotIn("an older hloprobe", again.stderr)


class OnlyFlagTest(absltest.TestCase):
  def _refused(self, *words: str) -> str:
    proc = run_hloprobe_here("explain", "--batch_sizes=1,2", *words)
    self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
    self.assertLen(proc.stderr.splitlines(), 1, proc.stderr)
    self.assertEqual(proc.stdout, "")
    return proc.stderr

  def test_no_question_left(self):
    err = self._refused("--only=invariance", "--invariance=off")
    self.assertIn("--invariance=off", err)

  def test_the_accuracy_pictures_are_refused(self):
    for flag in ("--format=html", "--plot=p.png", "--model_explorer=m"):
      with self.subTest(flag):
        self.assertIn(
          flag.split("=")[0], self._refused("--only=invariance", flag)
        )

  def test_one_batch_size_compares_nothing(self):
    err = self._refused("--only=invariance", "--batch_sizes=8")
    self.assertIn("at least two", err)

  def test_an_unknown_question(self):
    self.assertIn("invariance", self._refused("--only=accuracy"))

  def test_every_fix_and_none_are_refused(self):
    err = self._refused("--all_fixes", "--notry_fixes")
    self.assertIn("--all_fixes", err)
    self.assertIn("--notry_fixes", err)

  def test_explains_flag_only(self):
    proc = run_hloprobe_here("verify", "--fix=float32", "--only=invariance")
    self.assertEqual(proc.returncode, 2, proc.stderr)
    self.assertIn("--only", proc.stderr)


if __name__ == "__main__":
  absltest.main()
