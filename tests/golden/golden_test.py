"""Tests of the golden mechanism: committed goldens pass, planted changes fail.

Real jax compiles, no mocks of JAX. The interrupted update is simulated by
making the final rename fail.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import shutil
from unittest import mock

import pytest
import testutil
from absl.testing import absltest, flagsaver, parameterized
from testutil import run_hloprobe

from hloprobe import cli, records, sweep
from hloprobe.compile import lowering
from hloprobe.errors import GoldenError
from hloprobe.golden import folder, format, snapshot, update
from hloprobe.golden.diff import describe_site_changes

pytestmark = pytest.mark.compiles

_REPO = testutil.ROOT
_GOLDEN = os.path.join(_REPO, "golden")
_N1 = "cpu/seed_mlp/n1-bfloat16"
_N1_STABLEHLO = "stablehlo/seed_mlp/n1-bfloat16.stablehlo.mlir"
# The committed sweep's files: 36 configs (cpu, a100, t4, h100 x n = 1, 2, 9
# x 3 precisions) x (.hlo, .dots.json), and one StableHLO per case and
# config (9), shared by the four targets.
_N_FILES = 36 * 2 + 9


# The committed manifest's sweep, re-run once for the module (setUpModule):
# its results, its record, and their snapshot.
_RESULTS: list[records.ConfigResult] = []
_SWEEP: dict = {}
_SNAP: snapshot.Snapshot | None = None


def setUpModule():
  global _SNAP
  _SWEEP.update(folder.manifest_sweep(_GOLDEN))
  _RESULTS.extend(sweep.run_sweep(folder.spec_from_record(_SWEEP)))
  _SNAP = snapshot.take_snapshot(_RESULTS, lowering.jax_versions())


def _cli(*args: str, env: dict | None = None):
  return run_hloprobe(
    *args, env={"JAX_PLATFORMS": "cpu", **(env or {})}, timeout=300
  )


def _texts(directory: str) -> dict[str, str]:
  """Every file under `directory` (relative path -> text)."""
  out = {}
  for root, _, names in os.walk(directory):
    for name in names:
      with open(os.path.join(root, name)) as f:
        out[os.path.relpath(os.path.join(root, name), directory)] = f.read()
  return out


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

  def test_committed_goldens_pass(self):
    self.assertEqual(_SWEEP["targets"][:1], ["cpu"])
    result = snapshot.check(_GOLDEN, _SNAP)
    self.assertTrue(result.ok, result.render())
    self.assertEqual(result.compared, _N_FILES)
    self.assertLen(_RESULTS, 4 * 3 * 3)  # cpu, a100, t4, h100 x n=1,2,9 x 3
    self.assertIn("OK", result.render())

  def test_update_is_idempotent_and_keeps_unchanged_files(self):
    path = os.path.join(self.create_tempdir().full_path, "golden")
    first = update.update_goldens(
      path,
      snapshot.take_snapshot(_RESULTS, lowering.jax_versions(), "2000-01-01"),
      _SWEEP,
    )
    self.assertLen(first.added, _N_FILES)
    before = _texts(path)
    again = update.update_goldens(
      path,
      snapshot.take_snapshot(_RESULTS, lowering.jax_versions(), "2099-12-31"),
      _SWEEP,
    )
    self.assertEqual(
      (again.added, again.changed, again.removed, again.unchanged),
      ((), (), (), _N_FILES),
    )
    with open(os.path.join(path, _N1 + ".hlo")) as f:
      self.assertIn("date=2000-01-01", f.readline())
    self.assertEqual(before, _texts(path))
    self.assertTrue(snapshot.check(path, _SNAP).ok)

  @pytest.mark.release_rules
  def test_planted_pass_disable_is_caught_in_words_and_diff(self):
    # A real regression: without dot-strength-reduction, the a100 compile at
    # n = 1 keeps the matrix-vector dots as dots (jaxlib 0.10.2): sites 1-2
    # become Triton gemms with TF32 kernels, sites 0 (K = 2) and 3 (one
    # output row) dots in loop fusions.
    out = self.create_tempdir().full_path
    proc = _cli(
      "golden",
      "check",
      f"--golden_dir={_GOLDEN}",
      "--targets=a100",
      "--batch_sizes=1",
      "--precisions=bfloat16",
      f"--output_dir={out}",
      env={"XLA_FLAGS": "--xla_disable_hlo_passes=dot-strength-reduction"},
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
      if (c.target.name, c.n, c.precision) != ("t4", 1, "bfloat16"):
        return r
      text = comp.stablehlo.replace("DEFAULT, DEFAULT", "HIGH, HIGH")
      return dataclasses.replace(
        r, compilation=dataclasses.replace(comp, stablehlo=text)
      )

    planted = [plant(r) for r in _RESULTS]
    snap = snapshot.take_snapshot(planted, lowering.jax_versions())
    self.assertEqual(len(snap.failed), 1)
    self.assertRegex(
      snap.failed[0],
      r"^t4 seed_mlp n=1 bfloat16: failed at golden: its StableHLO differs "
      r"from (cpu|a100)'s, and goldens keep one per case and config$",
    )
    self.assertNotIn("t4/seed_mlp/n1-bfloat16.hlo", snap.files)
    self.assertEqual(snap.files[_N1_STABLEHLO], _SNAP.files[_N1_STABLEHLO])

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
    proc = _cli(
      "golden",
      "check",
      f"--golden_dir={path}",
      "--batch_sizes=1",
      "--precisions=bfloat16",
    )
    self.assertEqual(proc.returncode, 1)
    self.assertIn(
      f"hloprobe: error: corrupt golden files:\n  {path}/{_N1}.hlo",
      proc.stderr,
    )
    self.assertNotIn("Traceback", proc.stderr + proc.stdout)

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
  def test_check_exits_0_on_match_with_manifest_sweep_narrowed_by_flags(self):
    with flagsaver.as_parsed(
      golden_dir=_GOLDEN, batch_sizes="2", precisions="float32"
    ):
      self.assertEqual(cli.main(["hloprobe", "golden", "check"]), cli.EXIT_OK)

  def test_update_then_check_in_a_new_folder(self):
    path = os.path.join(self.create_tempdir().full_path, "g")
    with flagsaver.as_parsed(
      golden_dir=path, batch_sizes="1", precisions="float32"
    ):
      self.assertEqual(cli.main(["hloprobe", "golden", "update"]), cli.EXIT_OK)
    with flagsaver.as_parsed(golden_dir=path):  # the manifest's sweep
      self.assertEqual(cli.main(["hloprobe", "golden", "check"]), cli.EXIT_OK)
    self.assertLen(folder.list_golden_files(path), 3)

  def _main(self, *words: str, **flag_values) -> tuple[int, str, str]:
    """cli.main in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with flagsaver.as_parsed(**flag_values):
      with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["hloprobe", *words])
    return status, out.getvalue(), err.getvalue()

  def test_unwritable_golden_dir_is_one_line(self):
    not_a_dir = self.create_tempfile("a_file").full_path
    status, _, err = self._main(
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
    status, out, err = self._main(
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

  def test_narrow_update_on_the_command_line_keeps_every_other_golden(self):
    path = os.path.join(self.create_tempdir().full_path, "golden")
    shutil.copytree(_GOLDEN, path)
    status, out, _ = self._main(
      "golden",
      "update",
      golden_dir=path,
      **_ONE_CPU_CONFIG,
    )
    self.assertEqual(status, cli.EXIT_OK)
    self.assertIn("0 removed, 3 unchanged, 78 kept outside this sweep", out)
    self.assertEqual(_texts(path), _texts(_GOLDEN))

  def test_empty_sweep_is_a_usage_error(self):
    for args, message in (
      (("--targets=",), "--targets needs at least one target"),
      (("--precisions=",), "--precisions needs at least one name"),
      (
        ("--targets=", "--target_config=hloprobe/compile/gpu_specs/t4.txtpb"),
        "`golden` does not read --target_config",
      ),
    ):
      proc = _cli("golden", "check", f"--golden_dir={_GOLDEN}", *args)
      self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
      self.assertEqual(proc.stdout, "")
      self.assertRegex(proc.stderr, rf"^hloprobe: error: [^\n]*{message}")
      self.assertLen(proc.stderr.splitlines(), 1)

  def test_bad_subcommand_is_a_usage_error(self):
    self.assertEqual(
      cli.main(["hloprobe", "golden", "frobnicate"]), cli.EXIT_USAGE
    )
    self.assertEqual(cli.main(["hloprobe", "golden"]), cli.EXIT_USAGE)


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
      "split_k: n/a -> 4",
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
    changes = describe_site_changes(
      "a100 seed_mlp n=1 bfloat16", [{"site": 2, **old}], [{"site": 2, **new}]
    )
    self.assertEqual(
      [str(c) for c in changes], [f"a100 seed_mlp n=1 bfloat16 site 2: {words}"]
    )

  def test_same_sites_no_change_and_added_removed(self):
    sites = [{"site": 0, "fate": "dot"}]
    self.assertEqual(describe_site_changes("c", sites, sites), [])
    self.assertEqual(
      [c.words for c in describe_site_changes("c", sites, [])],
      ["dot -> (site gone from the StableHLO)"],
    )
    self.assertEqual(
      [c.words for c in describe_site_changes("c", [], sites)],
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
    path = self.create_tempdir().full_path
    spec = sweep.SweepSpec(("seed_mlp",), (1,), ("float32",), ("cpu",))
    written = update.golden_update(spec, path)
    self.assertLen(written.added, 3)  # .stablehlo.mlir, .hlo, .dots.json
    self.assertEqual(
      folder.golden_spec(path), sweep.plan_sweep(spec, explain_passes=True)
    )
    result = snapshot.golden_check(golden_dir=path)  # the manifest's sweep
    self.assertTrue(result.ok, result.render())

  def test_check_without_manifest_is_a_golden_error(self):
    with self.assertRaisesRegex(GoldenError, "MANIFEST"):
      snapshot.golden_check(golden_dir=self.create_tempdir().full_path)


if __name__ == "__main__":
  absltest.main()
