"""The command line: its flag checks in this process (exit codes, one line),
and as a user runs it (subprocesses, files; marked `compiles`)."""

from __future__ import annotations

import contextlib
import json
import os

import jax
import pytest
import testutil
from absl.testing import absltest, parameterized
from testutil import run_hloprobe, run_hloprobe_here


def hloprobe(*args: str):
  return run_hloprobe(*args)


def _here(*args: str):
  """The command line in this process (testutil.run_hloprobe_here), for
  commands that compile (tests marked `compiles`)."""
  return run_hloprobe_here(*args, timeout_s=600)


class BadInputTest(parameterized.TestCase):
  @parameterized.named_parameters(
    (
      "precision",
      "--precisions=float32,fp32",
      "flag --precisions=float32,fp32: 'fp32': did you mean 'float32'? "
      "value should be one of "
      "<bfloat16|tensorfloat32|float32|default|high|highest|DEFAULT|",
    ),
    ("precision_preset", "--precisions=TF32_TF32_F33", "'TF32_TF32_F33': "),
    ("columns", "--columns=n,speed", "'speed': value should be one of <"),
    (
      "require",
      "--require=consistent,nice",
      "'nice': value should be one of <consistent|accurate|golden|invariant>",
    ),
    (
      "case",
      "--case=nope",
      # The built-in names follow, sorted (the list grows with the cases).
      "unknown case 'nope'; choose from ",
    ),
    ("target", "--targets=tpu", "unknown target 'tpu'; choose from cpu"),
    ("batch_zero", "--batch_sizes=0", "bad batch size '0'"),
    ("batch_word", "--batch_sizes=1,x", "bad batch size 'x'"),
    ("format", "--format=xml", "--format=xml: value should be one of"),
    # absl's own enum errors with the nearest choice, as hloprobe's have it.
    (
      "format_near",
      "--format=jsno",
      "flag --format=jsno: did you mean 'json'? value should be one of <",
    ),
    (
      "columns_near",
      "--columns=n,verdcit",
      "'verdcit': did you mean 'verdict'? value should be one of <",
    ),
    (
      "experiment_near",
      "--experiment=no_triton_gem",
      "unknown experiment 'no_triton_gem'; did you mean 'no_triton_gemm'? ",
    ),
    ("flag", "--no_such_flag=1", "Unknown command line flag 'no_such_flag'"),
    ("case_empty", "--case=", "--case needs at least one name"),
    ("case_empty_item", "--case=seed_mlp,,", "--case needs at least one name"),
    ("precisions_empty", "--precisions=", "--precisions needs at least one"),
    ("targets_empty", "--targets=", "--targets needs at least one target"),
    ("targets_empty_item", "--targets=cpu,", "--targets needs at least one"),
    # A flag the command does not read would be silently ignored.
    ("fix_for_sweep", "--fix=float32", "--fix is for `hloprobe verify`"),
    ("port_for_sweep", "--port=9000", "--port is for `hloprobe view`"),
    ("good_for_sweep", "--good=0.4.38", "--good is for `hloprobe bisect`"),
    ("jobs_huge", "--jobs=100000", "--jobs=100000"),
  )
  def test_one_line_and_exit_2(self, flag, message):
    proc = run_hloprobe_here("sweep", flag)
    self.assertEqual(proc.returncode, 2, proc.stderr)
    errors = [
      l for l in proc.stderr.splitlines() if l.startswith("hloprobe: error:")
    ]
    self.assertLen(errors, 1, proc.stderr)
    self.assertIn(message, errors[0])
    self.assertEqual(proc.stdout, "")

  def test_verify_and_golden_run_no_experiment(self):
    # verify's only experiment is its --fix; goldens record none.
    for command in (("verify", "--fix=float32"), ("golden", "check")):
      proc = run_hloprobe_here(*command, "--experiment=no_algsimp")
      self.assertEqual(proc.returncode, 2, proc.stderr)
      self.assertIn(
        "--experiment is for `hloprobe sweep / explain / versions / bisect`",
        proc.stderr,
      )

  @pytest.mark.compiles
  def test_config_alone_is_a_target(self):
    proc = run_hloprobe_here(
      "sweep",
      "--targets=",
      "--target_config=hloprobe/compile/gpu_specs/t4.txtpb",
      "--batch_sizes=1",
      "--precisions=float32",
      timeout_s=600,
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertRegex(proc.stdout, r"\nseed_mlp +t4 +1 +float32 ")

  def test_bad_precision_names_every_allowed_value(self):
    proc = run_hloprobe_here("sweep", "--precisions=fp32")
    self.assertEqual(proc.returncode, 2, proc.stderr)
    (line,) = proc.stderr.splitlines()
    self.assertRegex(line, r"^hloprobe: error: flag --precisions=fp32: 'fp32'")
    allowed = line.split("<", 1)[1].removesuffix(">").split("|")
    # jax.default_matmul_precision's names (jax/_src/config.py, 0.10.2)
    # and every DotAlgorithmPreset member, as JAX lists them.
    named = ["bfloat16", "tensorfloat32", "float32", "default", "high"]
    presets = [m.name for m in jax.lax.DotAlgorithmPreset]
    self.assertCountEqual(allowed, [*named, "highest", *presets])

  @pytest.mark.compiles  # a process: --help is what `run` registers
  def test_help_lists_allowed_values(self):
    proc = hloprobe("--help")
    self.assertRegex(
      proc.stdout, r"--precisions: <bfloat16\|tensorfloat32\|float32\|"
    )
    self.assertRegex(proc.stdout, r"--columns: <experiment\|case\|target\|")

  def test_unknown_command(self):
    proc = run_hloprobe_here("frobnicate")
    self.assertEqual(proc.returncode, 2)
    self.assertIn("unknown command 'frobnicate'", proc.stderr)


_WORKERS = contextlib.ExitStack()


def setUpModule():
  # The module's in-process commands share warm workers.
  _WORKERS.enter_context(testutil.shared_workers())


def tearDownModule():  # pytest calls it (not unittest's module cleanups)
  _WORKERS.close()


@pytest.mark.compiles
class SweepCommandTest(absltest.TestCase):
  def test_json_and_output_files(self):
    # In this process, as the other tests here: `python -m hloprobe sweep`
    # runs whole, --output_dir written, in a process of its own in
    # tests/pictures/outputs_test.py, tests/report/files_test.py and
    # tests/runtime/cache_sweep_test.py.
    out = self.create_tempdir().full_path
    proc = _here(
      "sweep",
      "--batch_sizes=1,2",
      "--precisions=bfloat16",
      "--format=json",
      f"--output_dir={out}",
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    doc = json.loads(proc.stdout)
    self.assertEqual(doc["schema_version"], 3)
    self.assertEqual([c["n"] for c in doc["configs"]], [1, 2])
    self.assertEqual(
      doc["configs"][0]["fate_summary"], "dot x3, multiply+reduce x1"
    )
    site = doc["configs"][1]["dot_sites"][3]
    self.assertEqual(
      (site["fate"], site["K"], site["stablehlo_precision"]),
      ("dot", 48, "DEFAULT,DEFAULT"),
    )
    with open(os.path.join(out, "results.json")) as f:
      self.assertEqual(json.load(f)["configs"], doc["configs"])
    cfg = os.path.join(out, "cpu", "seed_mlp", "n2-bfloat16")
    with open(os.path.join(cfg, "stablehlo.mlir")) as f:
      self.assertIn("stablehlo.dot_general", f.read())
    with open(os.path.join(cfg, "optimized.hlo")) as f:
      self.assertTrue(f.read().startswith("HloModule"))

  def test_explain_passes_and_sites(self):
    proc = _here(
      "sweep",
      "--batch_sizes=1",
      "--precisions=float32",
      "--explain_passes",
      "--format=json",
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    config = json.loads(proc.stdout)["configs"][0]
    self.assertTrue(config["passes_explained"])
    by = [s["rewritten_by"] for s in config["dot_sites"]]
    self.assertEqual(by[:3], [None] * 3)
    self.assertEqual(
      by[3],
      {
        "pass": "algsimp",
        "pipeline": "simplification",
        "fate_after": "multiply+reduce",
      },
    )
    # The same config (a record-cache hit), its sites as a table.
    proc = _here(
      "sweep",
      "--batch_sizes=1",
      "--precisions=float32",
      "--explain_passes",
      "--sites",
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    site_rows = [l for l in proc.stdout.splitlines() if l.startswith("cpu ")]
    self.assertLen(site_rows, 4, proc.stdout)
    self.assertIn("multiply+reduce", site_rows[3])
    self.assertIn("algsimp (simplification)", site_rows[3])
    self.assertIn("band worst / expected", proc.stdout)
    self.assertRegex(site_rows[3], r"F32_F32_F32 +\d\.\de-\d\d / \d\.\de-\d\d")

  def test_unwritable_output_dir_is_one_line_after_the_results(self):
    # A folder that cannot be made (its parent is a file); a file itself
    # is refused before the sweep (reliab_outputs_test).
    # --explain_passes: test_explain_passes_and_sites's config, a
    # record-cache hit after it.
    not_a_dir = self.create_tempfile("a_file").full_path + "/out"
    proc = _here(
      "sweep",
      "--batch_sizes=1",
      "--precisions=float32",
      "--explain_passes",
      f"--output_dir={not_a_dir}",
    )
    self.assertEqual(proc.returncode, 1, proc.stderr)
    self.assertLen(
      [l for l in proc.stdout.splitlines() if l.startswith("seed_mlp")], 1
    )
    self.assertRegex(
      proc.stderr,
      rf"^hloprobe: error: cannot write --output_dir={not_a_dir}: [^\n]+\n$",
    )

  def test_failed_config_gives_exit_1_and_a_row(self):
    # n = 1 float32 with --explain_passes: test_explain_passes_and_sites's
    # config, a record-cache hit after it.
    proc = _here(
      "sweep",
      "--batch_sizes=1",
      "--precisions=TF32_TF32_F32,float32",
      "--explain_passes",
    )
    self.assertEqual(proc.returncode, 1, proc.stderr)
    rows = [l for l in proc.stdout.splitlines() if l.startswith("seed_mlp")]
    self.assertLen(rows, 2)
    self.assertIn("FAILED (compile)", rows[0])
    self.assertTrue(rows[1].rstrip().endswith("ok"))


if __name__ == "__main__":
  absltest.main()
