"""Tests of the golden mechanism: committed goldens pass, planted changes fail.

The mechanism (check, update, their words and errors, the command's exit
statuses) runs on recorded snapshots, without XLA: the committed goldens
read back (`_SNAP`, what a sweep matching them makes; headers are never
compared) and the recorded compiles of tests/testdata/compiles
(`recorded.config_result`). `GoldenEndToEndTest` re-runs parts of the
manifest's sweep for real (marked `compiles`): one check, one update, and
a planted XLA regression; `make golden` checks the whole sweep. The
interrupted update is simulated by making the final rename fail.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import os
import shutil
from unittest import mock

import pytest
import recorded
import testutil
from absl.testing import absltest, flagsaver, parameterized
from testutil import run_hloprobe_here

from hloprobe import engine
from hloprobe.cli import _main as cli
from hloprobe.errors import GoldenError
from hloprobe.golden import folder, format, snapshot, update
from hloprobe.golden.diff import GoldenSiteChange

_REPO = testutil.ROOT
_GOLDEN = os.path.join(_REPO, "golden")
_N1 = "cpu/seed_mlp/n1-bfloat16"
_N1_STABLEHLO = "stablehlo/seed_mlp/n1-bfloat16.stablehlo.mlir"
# The committed sweep's files: 36 configs (cpu, a100, t4, h100 x n = 1, 2, 9
# x 3 precisions) x (.hlo, .dots.json), and one StableHLO per case and
# config (9), shared by the four targets.
_N_FILES = 36 * 2 + 9

# The committed manifest's sweep, and the committed goldens read back as
# the snapshot of a sweep that matches them (made with the manifest's
# jax/jaxlib, so checks compare full text).
_SWEEP = folder.manifest_sweep(_GOLDEN)
_MADE_WITH = folder.read_manifest(_GOLDEN)
_SNAP = snapshot.Snapshot(
  {
    r: folder.read_golden_file(_GOLDEN, r)
    for r in folder.list_golden_files(_GOLDEN)
  },
  {"jax": _MADE_WITH["jax"], "jaxlib": _MADE_WITH["jaxlib"]},
  date=_MADE_WITH["date"],
)
_PRECISIONS = ("bfloat16", "tensorfloat32", "float32")
# The recorded a100 compiles of the manifest's batch sizes and precisions.
_A100_SWEEP = {
  "cases": ["seed_mlp"],
  "targets": ["a100"],
  "batch_sizes": [1, 2, 9],
  "precisions": list(_PRECISIONS),
}
_A100 = tuple(
  f"seed_a100_n{n}_{p}" for n in _A100_SWEEP["batch_sizes"] for p in _PRECISIONS
)
# Every recorded seed_mlp compile of the manifest's sweep (the h200 ones
# ran an experiment, which the manifest has not).
_RECORDED_SEEDS = tuple(
  sorted(
    name
    for name in os.listdir(recorded.COMPILES)
    if name.startswith(("seed_cpu_", "seed_a100_", "seed_t4_"))
  )
)


def _results(names) -> list:
  """The recorded compiles `names` (jaxlib 0.12.0.1) as a sweep's results."""
  return [recorded.config_result(recorded.load(name)) for name in names]


def _recorded_sweep(spec) -> snapshot.Snapshot:
  """`sweep_snapshot` on the recorded snapshot: `_SNAP`'s files of the
  configs `spec` asks for, as a sweep matching the goldens would make."""
  configs = folder.sweep_configs(folder.sweep_record(spec))
  files = {
    r: t for r, t in _SNAP.files.items() if snapshot.in_scope(r, configs)
  }
  return dataclasses.replace(_SNAP, files=files)


def _texts(directory: str) -> dict[str, str]:
  """Every file under `directory` (relative path -> text)."""
  out = {}
  for root, _, names in os.walk(directory):
    for name in names:
      with open(os.path.join(root, name)) as f:
        out[os.path.relpath(os.path.join(root, name), directory)] = f.read()
  return out


def _main(*words: str, **flag_values) -> tuple[int, str, str]:
  """cli.main in this process: (exit status, stdout, stderr)."""
  out, err = io.StringIO(), io.StringIO()
  with flagsaver.as_parsed(**flag_values):
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
      status = cli.main(["hloprobe", *words])
  return status, out.getvalue(), err.getvalue()


# Each check parses every golden file of its scope on both sides (~0.9
# CPU-s for the committed 81, most of it the HLO's canonical text), and the
# tests check the same committed texts again and again. `canonical_text` is
# a function of its two strings alone, so the module makes each text's
# canonical form once: an edited text is another key, made afresh (a text
# it refuses raises each time; functools.cache keeps no exception).
_CANONICAL = mock.patch.object(
  format, "canonical_text", functools.cache(format.canonical_text)
)


def setUpModule():
  _CANONICAL.start()


def tearDownModule():  # pytest calls it (not unittest's module cleanups)
  _CANONICAL.stop()


class GoldenTest(parameterized.TestCase):
  def _copy(self) -> str:
    path = os.path.join(self.create_tempdir().full_path, "golden")
    shutil.copytree(_GOLDEN, path)
    return path

  def _edit(self, path: str, old: str, new: str) -> None:
    with open(path) as f:
      text = f.read()
    self.assertIn(old, text)
    with open(path, "w") as f:
      f.write(text.replace(old, new, 1))

  def test_unchanged_goldens_pass(self):
    self.assertEqual(_SWEEP["targets"][:1], ["cpu"])
    self.assertLen(_SNAP.files, _N_FILES)
    result = snapshot.check(_GOLDEN, _SNAP)
    self.assertTrue(result.ok, result.render())
    self.assertEqual(result.compared, _N_FILES)
    self.assertIn("OK", result.render())

  def test_recorded_compiles_reproduce_the_committed_goldens(self):
    # The goldens and the recorded compiles were made by jaxlib 0.12.0.1
    # apart (README there): their StableHLO and HLO bodies are equal, and
    # their dot summaries but for the pass (not recorded: no pass dumps).
    self.assertEqual(_MADE_WITH["jaxlib"], recorded.RELEASES[-1])
    self.assertLen(_RECORDED_SEEDS, 16)  # cpu n=1,2 x3, a100 x9, t4 n=2
    snap = snapshot.take_snapshot(_results(_RECORDED_SEEDS), _SNAP.versions)
    self.assertEqual(snap.failed, ())
    self.assertLen(snap.files, 16 * 2 + 9)  # StableHLO: one per n, precision
    for rel, text in snap.files.items():
      old = format.parse(rel, rel, _SNAP.files[rel])
      new = format.parse(rel, rel, text)
      if rel.endswith(".dots.json"):
        drop = lambda doc: [{**s, "pass": None} for s in doc["sites"]]
        self.assertEqual(drop(new.content), drop(old.content), rel)
        self.assertEqual(
          new.content["fate_summary"], old.content["fate_summary"], rel
        )
      else:
        self.assertEqual(new.content, old.content, rel)

  def test_update_is_idempotent_and_keeps_unchanged_files(self):
    path = os.path.join(self.create_tempdir().full_path, "golden")
    results = _results(_A100)
    first = update.update_goldens(
      path,
      snapshot.take_snapshot(results, _SNAP.versions, "2000-01-01"),
      _A100_SWEEP,
    )
    self.assertLen(first.added, 9 * 3)  # 9 configs x (hlo, dots, StableHLO)
    before = _texts(path)
    again = update.update_goldens(
      path,
      snapshot.take_snapshot(results, _SNAP.versions, "2099-12-31"),
      _A100_SWEEP,
    )
    self.assertEqual(
      (again.added, again.changed, again.removed, again.unchanged),
      ((), (), (), 9 * 3),
    )
    with open(os.path.join(path, "a100/seed_mlp/n1-bfloat16.hlo")) as f:
      self.assertIn("date=2000-01-01", f.readline())
    self.assertEqual(before, _texts(path))
    self.assertTrue(
      snapshot.check(path, snapshot.take_snapshot(results, _SNAP.versions)).ok
    )

  def test_hand_edited_fate_is_reported(self):
    path = self._copy()
    self._edit(
      os.path.join(path, _N1 + ".dots.json"),
      '"fate": "multiply+reduce", "fusion_kind": "kLoop", "backend_config_kind": null, "custom_call_target": null, "precision_config": "default,default", "algorithm": null, "effective_algorithm": "F32_F32_F32"',
      '"fate": "Triton gemm", "fusion_kind": "kCustom", "backend_config_kind": "__triton_gemm", "custom_call_target": null, "precision_config": "high,high", "algorithm": "TF32_TF32_F32", "effective_algorithm": "TF32_TF32_F32"',
    )
    result = snapshot.check(path, _SNAP)
    self.assertFalse(result.ok)
    self.assertEqual(
      [str(s) for s in result.sites],
      [
        "cpu seed_mlp n=1 bfloat16 site 3: Triton gemm TF32_TF32_F32 -> multiply+reduce "
        "F32_F32_F32; emitter: __triton_gemm -> kLoop; precision_config: high,high -> "
        "default,default; algorithm: TF32_TF32_F32 -> n/a"
      ],
    )
    self.assertEqual([c.path for c in result.changed], [_N1 + ".dots.json"])

  def test_other_jaxlib_compares_dot_summaries_unless_strict(self):
    path = self._copy()
    self._edit(
      os.path.join(path, "MANIFEST.json"), '"jaxlib": "', '"jaxlib": "0.0.1-'
    )
    self._edit(os.path.join(path, _N1 + ".hlo"), "kind=kLoop", "kind=kInput")
    loose = snapshot.check(path, _SNAP)
    self.assertTrue(loose.ok, loose.render())
    self.assertRegex(
      loose.note, r"made with jax \S+ / jaxlib 0\.0\.1-.*dot summaries only"
    )
    self.assertLen(loose.not_compared, 36 + 9)  # .hlo and .stablehlo.mlir
    strict = snapshot.check(path, _SNAP, strict=True)
    self.assertEqual([c.path for c in strict.changed], [_N1 + ".hlo"])
    self.assertIn(
      "-  %bitcast_bitcast_fusion.0 = f32[2,1]{1,0} fusion(%xs.0), kind=kInput",
      strict.changed[0].diff,
    )
    self._edit(
      os.path.join(path, _N1 + ".dots.json"),
      '"fate": "multiply+reduce"',
      '"fate": "dot"',
    )
    self.assertLen(snapshot.check(path, _SNAP).sites, 1)

  def test_missing_and_stale_files_are_listed(self):
    path = self._copy()
    os.remove(os.path.join(path, _N1 + ".hlo"))
    shutil.copy(
      os.path.join(path, _N1 + ".dots.json"),
      os.path.join(path, "cpu/seed_mlp/n3-bfloat16.dots.json"),
    )
    result = snapshot.check(path, _SNAP)
    self.assertFalse(result.ok)
    self.assertEqual(result.missing, (_N1 + ".hlo",))
    self.assertEqual(result.stale, ("cpu/seed_mlp/n3-bfloat16.dots.json",))
    # A sweep narrower than the manifest's checks only its own files.
    narrow = {**_SWEEP, "batch_sizes": [2]}
    files = {r: t for r, t in _SNAP.files.items() if "/n2-" in r}
    self.assertTrue(
      snapshot.check(path, dataclasses.replace(_SNAP, files=files), narrow).ok
    )

  @parameterized.named_parameters(
    (
      "truncated_hlo",
      _N1 + ".hlo",
      lambda t: t[: len(t) // 2],
      "not a complete HLO module",
    ),
    (
      "truncated_stablehlo",
      _N1_STABLEHLO,
      lambda t: t[: len(t) // 2],
      "not a complete StableHLO",
    ),
    (
      "truncated_dots",
      _N1 + ".dots.json",
      lambda t: t[: len(t) // 2],
      "not valid JSON",
    ),
    (
      "no_header",
      _N1 + ".hlo",
      lambda t: t.split("\n", 1)[1],
      "is not a header",
    ),
    (
      "wrong_header",
      _N1 + ".hlo",
      lambda t: t.replace("n=1", "n=7", 1),
      "does not match the file name",
    ),
    (
      "newer_schema",
      _N1 + ".hlo",
      lambda t: t.replace("golden v1", "golden v9", 1),
      "schema version '9'",
    ),
    (
      "not_a_summary",
      _N1 + ".dots.json",
      lambda t: "[1, 2]",
      "not a dot summary",
    ),
    (
      "manifest",
      "MANIFEST.json",
      lambda t: t[:40],
      "MANIFEST.json: not valid JSON",
    ),
  )
  def test_corrupt_golden_is_a_clear_error(self, rel, damage, message):
    path = self._copy()
    with open(os.path.join(path, rel)) as f:
      text = f.read()
    with open(os.path.join(path, rel), "w") as f:
      f.write(damage(text))
    with self.assertRaisesRegex(GoldenError, message) as caught:
      snapshot.check(path, _SNAP)
    self.assertIn(os.path.join(path, rel), str(caught.exception))

  def test_edited_stablehlo_is_compared(self):
    path = self._copy()
    self._edit(
      os.path.join(path, _N1_STABLEHLO),
      "precision = [DEFAULT, DEFAULT]",
      "precision = [HIGH, HIGH]",
    )
    result = snapshot.check(path, _SNAP)
    self.assertEqual([c.path for c in result.changed], [_N1_STABLEHLO])

  def test_targets_lowering_differently_fail_that_config(self):
    def plant(r):
      c, comp = r.config, r.compilation
      if c.target.name != "t4":
        return r
      text = comp.stablehlo.replace("DEFAULT, DEFAULT", "HIGH, HIGH")
      return dataclasses.replace(
        r, compilation=dataclasses.replace(comp, stablehlo=text)
      )

    # The sweep's order: cpu, a100, then t4.
    results = _results(f"seed_{t}_n2_bfloat16" for t in ("cpu", "a100", "t4"))
    snap = snapshot.take_snapshot(map(plant, results), _SNAP.versions)
    self.assertEqual(len(snap.failed), 1)
    self.assertRegex(
      snap.failed[0],
      r"^t4 seed_mlp n=2 bfloat16: failed at golden: its StableHLO differs "
      r"from (cpu|a100)'s, and goldens keep one per case and config$",
    )
    self.assertNotIn("t4/seed_mlp/n2-bfloat16.hlo", snap.files)
    self.assertIn("a100/seed_mlp/n2-bfloat16.hlo", snap.files)
    shared = "stablehlo/seed_mlp/n2-bfloat16.stablehlo.mlir"
    unplanted = snapshot.take_snapshot(results, _SNAP.versions)
    self.assertEqual(unplanted.failed, ())
    self.assertEqual(snap.files[shared], unplanted.files[shared])

  def test_older_manifest_is_refused_but_its_sweep_is_read(self):
    path = self._copy()
    self._edit(
      os.path.join(path, "MANIFEST.json"),
      '"schema_version": 2',
      '"schema_version": 1',
    )
    self.assertEqual(folder.manifest_sweep(path), _SWEEP)
    with self.assertRaisesRegex(
      GoldenError, "schema version 1; this hloprobe reads 2"
    ):
      snapshot.check(path, _SNAP)

  def test_cli_corrupt_golden_no_traceback(self):
    path = self._copy()
    with open(os.path.join(path, _N1 + ".hlo"), "a") as f:
      f.write("%broken = \n")
    with mock.patch.object(snapshot, "sweep_snapshot", _recorded_sweep):
      status, out, err = _main(
        "golden",
        "check",
        golden_dir=path,
        batch_sizes="1",
        precisions="bfloat16",
      )
    self.assertEqual(status, cli.EXIT_FAILED)
    self.assertIn(
      f"hloprobe: error: corrupt golden files:\n  {path}/{_N1}.hlo", err
    )
    self.assertNotIn("Traceback", err + out)

  def test_interrupted_update_leaves_previous_goldens(self):
    path = self._copy()
    before = _texts(path)
    real_rename = os.rename

    def failing_rename(src, dst):
      is_stage = os.path.basename(src).startswith(
        ".golden.update-"
      ) and not src.endswith(".old")
      if is_stage and dst == path:
        raise OSError("simulated crash")
      return real_rename(src, dst)

    changed = dataclasses.replace(
      _SNAP, files={r: t for r, t in _SNAP.files.items() if "n9" not in r}
    )
    with mock.patch.object(os, "rename", failing_rename):
      with self.assertRaisesRegex(
        GoldenError, "previous goldens are unchanged"
      ):
        update.update_goldens(path, changed, _SWEEP)
    self.assertEqual(before, _texts(path))
    self.assertEqual(os.listdir(os.path.dirname(path)), ["golden"])

  def test_narrow_update_replaces_its_configs_and_keeps_the_rest(self):
    path = self._copy()
    in_scope = "cpu/seed_mlp/n1-float32"
    self._edit(
      os.path.join(path, in_scope + ".dots.json"),
      '"fate": "multiply+reduce"',
      '"fate": "dot"',
    )
    outside = os.path.join(path, "a100/seed_mlp/n2-bfloat16.hlo")
    self._edit(outside, "HloModule", "HloModule edited_by_hand")
    with open(os.path.join(path, in_scope + "-old.hlo"), "w") as f:
      f.write("an in-scope file no config makes\n")
    before = _texts(path)
    made_with = folder.read_manifest(path)  # the committed goldens' jax
    narrow = {
      "cases": ["seed_mlp"],
      "targets": ["cpu"],
      "batch_sizes": [1],
      "precisions": ["float32"],
    }
    shared = "stablehlo/seed_mlp/n1-float32.stablehlo.mlir"
    files = {
      r: _SNAP.files[r]
      for r in (in_scope + ".dots.json", in_scope + ".hlo", shared)
    }
    result = update.update_goldens(
      path, dataclasses.replace(_SNAP, files=files), narrow
    )
    self.assertEqual(result.changed, (in_scope + ".dots.json",))
    self.assertEqual(result.removed, (in_scope + "-old.hlo",))
    self.assertEqual((result.added, result.unchanged), ((), 2))
    self.assertEqual(result.kept, _N_FILES - 3)
    self.assertIn("78 kept outside this sweep", result.render().splitlines()[0])
    self.assertIn("merged into MANIFEST.json's sweep", result.render())
    after = _texts(path)
    self.assertEqual(
      after[in_scope + ".dots.json"], files[in_scope + ".dots.json"]
    )
    self.assertNotIn(in_scope + "-old.hlo", after)
    self.assertIn(
      "HloModule edited_by_hand", after[os.path.relpath(outside, path)]
    )
    untouched = set(before) - {in_scope + ".dots.json", in_scope + "-old.hlo"}
    self.assertEqual(
      {r: after[r] for r in untouched - {"MANIFEST.json"}},
      {r: before[r] for r in untouched - {"MANIFEST.json"}},
    )
    manifest = folder.read_manifest(path)
    self.assertEqual(manifest["sweep"], _SWEEP)
    # The manifest keeps the jax/jaxlib that made the files it keeps.
    self.assertEqual(
      (manifest["jax"], manifest["jaxlib"]),
      (made_with["jax"], made_with["jaxlib"]),
    )

  def test_update_beyond_the_manifest_replaces_the_folder_and_says_so(self):
    path = self._copy()
    wider = {
      "cases": ["seed_mlp"],
      "targets": ["cpu"],
      "batch_sizes": [1, 5],
      "precisions": ["float32"],
    }
    files = {r: t for r, t in _SNAP.files.items() if "cpu/seed_mlp/n1-f" in r}
    result = update.update_goldens(
      path, dataclasses.replace(_SNAP, files=files), wider
    )
    self.assertIn(
      "this sweep is not within MANIFEST.json's (batch_sizes 5 not in it): "
      "replaced the whole folder, and MANIFEST.json records this sweep",
      result.render(),
    )
    self.assertEqual(folder.list_golden_files(path), sorted(files))
    self.assertLen(result.removed, _N_FILES - 2)  # all but the two written
    self.assertEqual(folder.manifest_sweep(path), wider)

  def test_update_refuses_failed_configs(self):
    path = self.create_tempdir().full_path
    failed = dataclasses.replace(
      _SNAP, failed=("cpu seed_mlp n=1 bfloat16: failed at compile: boom",)
    )
    with self.assertRaisesRegex(GoldenError, "(?s)refusing to update.*boom"):
      update.update_goldens(path, failed, _SWEEP)
    self.assertEqual(os.listdir(path), [])

  def test_update_reports_added_changed_removed(self):
    path = os.path.join(self.create_tempdir().full_path, "golden")
    files = {r: t for r, t in _SNAP.files.items() if "n9" not in r}
    update.update_goldens(path, dataclasses.replace(_SNAP, files=files), _SWEEP)
    self._edit(
      os.path.join(path, _N1 + ".dots.json"),
      '"fate": "multiply+reduce"',
      '"fate": "dot"',
    )
    with open(os.path.join(path, "cpu/seed_mlp/n5-float32.hlo"), "w") as f:
      f.write("stale\n")
    result = update.update_goldens(path, _SNAP, _SWEEP)
    self.assertLen(result.added, _N_FILES // 3)  # the n=9 third
    self.assertEqual(result.changed, (_N1 + ".dots.json",))
    self.assertEqual(result.removed, ("cpu/seed_mlp/n5-float32.hlo",))
    self.assertIn(f"  changed {_N1}.dots.json", result.render())


# The narrowest sweep: cpu, batch 1, float32 (3 goldens).
_ONE_CPU_CONFIG = {
  "targets": "cpu",
  "batch_sizes": "1",
  "precisions": "float32",
}


class GoldenCliTest(absltest.TestCase):
  """`hloprobe golden` in this process, its sweep the recorded snapshot."""

  def setUp(self):
    super().setUp()
    for module in (snapshot, update):  # check's, and update's
      self.enter_context(
        mock.patch.object(module, "sweep_snapshot", _recorded_sweep)
      )

  def test_update_then_check_in_a_new_folder(self):
    path = os.path.join(self.create_tempdir().full_path, "g")
    status, out, _ = _main(
      "golden", "update", golden_dir=path, batch_sizes="1", precisions="float32"
    )
    self.assertEqual(status, cli.EXIT_OK)
    self.assertIn("3 added", out)
    self.assertEqual(
      folder.manifest_sweep(path),
      {
        "cases": ["seed_mlp"],
        "targets": ["cpu"],
        "batch_sizes": [1],
        "precisions": ["float32"],
      },
    )
    status, out, _ = _main("golden", "check", golden_dir=path)  # its manifest's
    self.assertEqual(status, cli.EXIT_OK, out)
    self.assertEqual(
      folder.list_golden_files(path),
      [
        "cpu/seed_mlp/n1-float32.dots.json",
        "cpu/seed_mlp/n1-float32.hlo",
        "stablehlo/seed_mlp/n1-float32.stablehlo.mlir",
      ],
    )

  def test_unwritable_golden_dir_is_one_line(self):
    not_a_dir = self.create_tempfile("a_file").full_path
    status, _, err = _main(
      "golden",
      "update",
      golden_dir=os.path.join(not_a_dir, "golden"),
      batch_sizes="1",
      precisions="float32",
    )
    self.assertEqual(status, cli.EXIT_FAILED)
    self.assertRegex(
      err,
      rf"^hloprobe: error: cannot write the new goldens for {not_a_dir}/golden "
      r"\([^\n]+\); the previous goldens are unchanged\n$",
    )

  def test_unwritable_candidate_dir_keeps_the_check_result(self):
    path = os.path.join(self.create_tempdir().full_path, "golden")
    shutil.copytree(_GOLDEN, path)
    dots = os.path.join(path, "cpu/seed_mlp/n1-float32.dots.json")
    with open(dots) as f:
      text = f.read()
    with open(dots, "w") as f:
      f.write(text.replace('"fate": "multiply+reduce"', '"fate": "dot"'))
    not_a_dir = self.create_tempfile("a_file").full_path
    status, out, err = _main(
      "golden",
      "check",
      golden_dir=path,
      output_dir=not_a_dir,
      **_ONE_CPU_CONFIG,
    )
    self.assertEqual(status, cli.EXIT_FAILED)
    self.assertIn("1 changed", out)
    self.assertIn("MISMATCH", out)
    self.assertRegex(
      err, r"^hloprobe: error: cannot write the candidate goldens: [^\n]+\n$"
    )

  def test_empty_sweep_is_a_usage_error(self):
    for args, message in (
      (("--targets=",), "--targets needs at least one target"),
      (("--precisions=",), "--precisions needs at least one name"),
      (
        ("--targets=", "--target_config=hloprobe/compile/gpu_specs/t4.txtpb"),
        "`golden` does not read --target_config",
      ),
    ):
      proc = run_hloprobe_here(
        "golden", "check", f"--golden_dir={_GOLDEN}", *args
      )
      self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
      self.assertEqual(proc.stdout, "")
      self.assertRegex(proc.stderr, rf"^hloprobe: error: [^\n]*{message}")
      self.assertLen(proc.stderr.splitlines(), 1)

  def test_bad_subcommand_is_a_usage_error(self):
    self.assertEqual(
      cli.main(["hloprobe", "golden", "frobnicate"]), cli.EXIT_USAGE
    )
    self.assertEqual(cli.main(["hloprobe", "golden"]), cli.EXIT_USAGE)


@pytest.mark.compiles
class GoldenEndToEndTest(absltest.TestCase):
  """Parts of the manifest's sweep compiled again: the committed goldens
  match them, and a planted XLA regression is caught."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    # The in-process checks and update share warm workers.
    cls.enterClassContext(testutil.shared_workers())

  # The CPU's optimized HLO text is compared whole; make test-isa checks
  # that it does not depend on the host's ISA (it passed under AVX).
  @pytest.mark.cpu_numerics
  def test_check_exits_0_on_match_with_manifest_sweep_narrowed_by_flags(self):
    # The CPU and the a100 at n = 2 under float32. The t4 and h100 goldens
    # are compared live by `make golden` (CI; the whole manifest), t4's n = 2
    # recorded compile by test_recorded_compiles_reproduce_the_committed_goldens.
    status, out, err = _main(
      "golden",
      "check",
      golden_dir=_GOLDEN,
      targets="cpu,a100",
      batch_sizes="2",
      precisions="float32",
      jobs="1",  # the two configs in one worker, not one each
    )
    self.assertEqual(status, cli.EXIT_OK, out + err)
    self.assertIn("OK", out)

  def test_narrow_update_on_the_command_line_keeps_every_other_golden(self):
    path = os.path.join(self.create_tempdir().full_path, "golden")
    shutil.copytree(_GOLDEN, path)
    status, out, _ = _main(
      "golden",
      "update",
      golden_dir=path,
      **_ONE_CPU_CONFIG,
    )
    self.assertEqual(status, cli.EXIT_OK)
    self.assertIn("0 removed, 3 unchanged, 78 kept outside this sweep", out)
    self.assertEqual(_texts(path), _texts(_GOLDEN))

  @pytest.mark.release_rules
  def test_planted_pass_disable_is_caught_in_words_and_diff(self):
    # A real regression: without dot-strength-reduction, the a100 compile at
    # n = 1 keeps the matrix-vector dots as dots (jaxlib 0.10.2): sites 1-2
    # become Triton gemms with TF32 kernels, sites 0 (K = 2) and 3 (one
    # output row) dots in loop fusions. The command runs in this process,
    # the environment's XLA_FLAGS planted as a user's shell would set them:
    # the command checks them in a worker of their own and its workers run
    # under them (`WorkerPool.user_xla_flags`, read from the environment);
    # this process compiles nothing (`common.start_jax`). A whole `python
    # -m hloprobe` under the environment's XLA_FLAGS runs in
    # tests/runtime/host_test.py.
    out = self.create_tempdir().full_path
    planted = {
      "JAX_PLATFORMS": "cpu",
      "XLA_FLAGS": "--xla_disable_hlo_passes=dot-strength-reduction",
    }
    with mock.patch.dict(os.environ, planted):
      proc = run_hloprobe_here(
        "golden",
        "check",
        f"--golden_dir={_GOLDEN}",
        "--targets=a100",
        "--batch_sizes=1",
        "--precisions=bfloat16",
        f"--output_dir={out}",
        timeout_s=300,
      )
    self.assertEqual(proc.returncode, 1, proc.stderr[-2000:])
    text = proc.stdout
    site_lines = [
      l.strip() for l in text.splitlines() if " site " in l and "seed_mlp" in l
    ]
    was = "multiply+reduce F32_F32_F32 -> "
    dsr = "pass: dot-strength-reduction (simplification) -> "
    # The pipeline fusion-wrapper runs in, as XLA names it in the pass dump
    # file names: "autotuner" in jaxlib 0.10.2, its own in 0.12.0.1.
    wrap = (
      "fusion-wrapper" if testutil.jaxlib_at_least("0.12.0.1") else "autotuner"
    )
    self.assertEqual(
      site_lines,
      [
        f"a100 seed_mlp n=1 bfloat16 site 0: {was}dot F32_F32_F32; emitter: "
        f"kInput -> kLoop; {dsr}fusion-wrapper ({wrap})",
        f"a100 seed_mlp n=1 bfloat16 site 1: {was}Triton gemm TF32_TF32_F32; emitter: "
        f"kInput -> __triton_nested_gemm_fusion; {dsr}triton-gemm-rewriter (hlo_normalization)",
        f"a100 seed_mlp n=1 bfloat16 site 2: {was}Triton gemm TF32_TF32_F32; emitter: "
        f"kInput -> __triton_nested_gemm_fusion; {dsr}triton-gemm-rewriter (hlo_normalization)",
        f"a100 seed_mlp n=1 bfloat16 site 3: {was}dot F32_F32_F32; emitter: "
        f"kInput -> kLoop; {dsr}fusion-wrapper ({wrap})",
      ],
    )
    n1 = "a100/seed_mlp/n1-bfloat16"
    self.assertIn(f"--- golden/{n1}.dots.json", text)
    if testutil.goldens_from_this_jaxlib():  # else dot summaries alone
      self.assertIn(f"--- golden/{n1}.hlo", text)
    self.assertNotIn("stablehlo.mlir\n", text)  # lowering is unchanged
    changed_sites = [
      l[:16]
      for l in text.splitlines()
      if l.startswith(('-    {"site"', '+    {"site"'))
    ]
    self.assertEqual(
      changed_sites,
      [f'{sign}    {{"site": {i},' for sign in "-+" for i in range(4)],
    )
    self.assertIn("__triton_nested_gemm_fusion", text)
    self.assertIn(f"candidate files written to {out}", text)
    self.assertTrue(os.path.isfile(os.path.join(out, n1 + ".hlo")))


class DescribeSiteChangesTest(parameterized.TestCase):
  @parameterized.named_parameters(
    (
      "fate_and_algorithm",
      {"fate": "multiply+reduce", "effective_algorithm": "F32_F32_F32"},
      {"fate": "Triton gemm", "effective_algorithm": "TF32_TF32_F32"},
      "multiply+reduce F32_F32_F32 -> Triton gemm TF32_TF32_F32",
    ),
    (
      "split_k_only",
      {"fate": "Triton gemm", "split_k": None},
      {"fate": "Triton gemm", "split_k": 4},
      "split_k: none -> 4",
    ),
    (
      "declared_algorithm_behind_effective",
      {"fate": "dot", "algorithm": None, "effective_algorithm": "F32_F32_F32"},
      {
        "fate": "dot",
        "algorithm": "F32_F32_F32",
        "effective_algorithm": "F32_F32_F32",
      },
      "algorithm: n/a -> F32_F32_F32",
    ),
    (
      "field_lands",
      {"fate": "dot"},
      {"fate": "dot", "pass": "algsimp"},
      "pass: (absent) -> algsimp",
    ),
    (
      # The emitter is the most specific name XLA prints; a site none of
      # whose three names is printed is computed at the top level.
      "emitter_in_one_name",
      {"fate": "dot", "fusion_kind": None, "backend_config_kind": None},
      {
        "fate": "dot",
        "fusion_kind": "kCustom",
        "backend_config_kind": "__ynn_fusion",
      },
      "emitter: top level -> __ynn_fusion",
    ),
    (
      "fusion_kind_behind_the_same_backend_kind",
      {"fate": "dot", "fusion_kind": "kCustom", "backend_config_kind": "b"},
      {"fate": "dot", "fusion_kind": "kLoop", "backend_config_kind": "b"},
      "fusion_kind: kCustom -> kLoop",
    ),
  )
  def test_words(self, old, new, words):
    changes = GoldenSiteChange.between(
      "a100 seed_mlp n=1 bfloat16", [{"site": 2, **old}], [{"site": 2, **new}]
    )
    self.assertEqual(
      [str(c) for c in changes], [f"a100 seed_mlp n=1 bfloat16 site 2: {words}"]
    )

  def test_same_sites_no_change_and_added_removed(self):
    sites = [{"site": 0, "fate": "dot"}]
    self.assertEqual(GoldenSiteChange.between("c", sites, sites), [])
    self.assertEqual(
      [c.words for c in GoldenSiteChange.between("c", sites, [])],
      ["dot -> (site gone from the StableHLO)"],
    )
    self.assertEqual(
      [c.words for c in GoldenSiteChange.between("c", [], sites)],
      ["(new site) -> dot"],
    )

  def test_path_names_round_trip(self):
    key = format.ConfigKey("a100", "seed_mlp", 9, "TF32_TF32_F32", "no-algsimp")
    self.assertEqual(format.path_key(key.path("dots.json")), (key, "dots.json"))
    self.assertIsNone(format.path_key("cpu/seed_mlp/README.md"))
    # StableHLO is kept once for all targets: its path and key have none.
    path = key.path("stablehlo.mlir")
    self.assertEqual(
      path, "stablehlo/seed_mlp/n9-TF32_TF32_F32-no-algsimp.stablehlo.mlir"
    )
    shared = dataclasses.replace(key, target=None)
    self.assertEqual(format.path_key(path), (shared, "stablehlo.mlir"))
    self.assertIsNone(
      format.path_key("a100/seed_mlp/n9-float32.stablehlo.mlir")
    )


class GoldenApiTest(absltest.TestCase):
  def test_update_then_check_with_the_manifest_sweep(self):
    self.enter_context(
      mock.patch.object(update, "sweep_snapshot", _recorded_sweep)
    )
    self.enter_context(
      mock.patch.object(snapshot, "sweep_snapshot", _recorded_sweep)
    )
    path = self.create_tempdir().full_path
    spec = engine.SweepSpec(("seed_mlp",), (1,), ("float32",), ("cpu",))
    written = update.golden_update(spec, path)
    self.assertLen(written.added, 3)  # .stablehlo.mlir, .hlo, .dots.json
    self.assertEqual(
      folder.golden_spec(path), engine.plan_sweep(spec, explain_passes=True)
    )
    result = snapshot.golden_check(golden_dir=path)  # the manifest's sweep
    self.assertTrue(result.ok, result.render())

  def test_check_without_manifest_is_a_golden_error(self):
    with self.assertRaisesRegex(GoldenError, "MANIFEST"):
      snapshot.golden_check(golden_dir=self.create_tempdir().full_path)


if __name__ == "__main__":
  absltest.main()
