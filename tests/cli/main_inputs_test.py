"""The smaller input rules of issue 13.9, one test each."""

from __future__ import annotations

import os
import stat

from absl.testing import absltest
from testutil import run_hloprobe_here

from hloprobe import engine, verify
from hloprobe.compile import experiments, targets
from hloprobe.errors import GoldenError, InvalidArgumentError
from hloprobe.golden import folder
from hloprobe.golden import format as fmt
from hloprobe.report import files

_NESTED = """\
gpu_device_info {
  zzz_sub { a: 1 }
  core_count: 40
  cuda_compute_capability { major: 7 minor: 5 }
}
"""


def _manifest(targets_: list, batch_sizes: list) -> str:
  sweep_ = {
    "cases": ["seed_mlp"],
    "targets": targets_,
    "batch_sizes": batch_sizes,
    "precisions": ["float32"],
  }
  return fmt.manifest_text(
    {"jax": "0.10.2", "jaxlib": "0.10.2"}, sweep_, "2026-01-01"
  )


class InputRulesTest(absltest.TestCase):
  def test_nested_unknown_field_is_dropped(self):
    # protobuf (jaxlib 0.10.2) names a message field at its `{`: column 11.
    field = targets.UnknownField(
      "stream_executor.GpuDeviceInfoProto", "zzz_sub", 2, 11
    )
    self.assertEqual(
      targets.drop_field(_NESTED, field),
      _NESTED.replace("  zzz_sub { a: 1 }\n", ""),
    )

  def test_manifest_configs_stay_in_the_golden_folder(self):
    parent = self.create_tempdir().full_path
    golden = os.path.join(parent, "golden")
    os.makedirs(golden)
    outside = os.path.join(parent, "x.txtpb")
    with open(os.path.join(golden, "MANIFEST.json"), "w") as f:
      f.write(_manifest(["cpu", outside], [1]))
    with self.assertRaisesRegex(GoldenError, "is outside the golden folder"):
      folder.manifest_sweep(golden)

  def test_manifest_batch_size_true_is_rejected(self):
    with self.assertRaisesRegex(GoldenError, "manifest lacks"):
      fmt.parse_manifest("MANIFEST.json", _manifest(["cpu"], [True]))

  def test_empty_requirement_is_rejected(self):
    with self.assertRaisesRegex(InvalidArgumentError, "has an empty item"):
      verify.parse_requirements("consistent,,accurate")

  def test_duplicates_are_swept_once_everywhere(self):
    spec = engine.plan_sweep(
      engine.SweepSpec(
        ("seed_mlp", "seed_mlp"),
        (2, 1, 2),
        ("float32", "bfloat16", "float32"),
        ("cpu", "t4", "cpu"),
        experiments=(experiments.Experiment.parse("no_algsimp"),) * 2,
      )
    )
    self.assertEqual(
      (spec.case_names, spec.batch_sizes, spec.precisions, spec.target_names),
      (("seed_mlp",), (2, 1), ("float32", "bfloat16"), ("cpu", "t4")),
    )
    self.assertLen(spec.experiments, 1)
    self.assertEqual(engine.parse_batch_sizes("1-3,2"), (1, 2, 3))

  def test_hash_inside_a_flag_value_is_kept(self):
    path = self.create_tempfile(
      "e.txt", "d:--xla_dump_to=/tmp/run#2  # a comment\n# whole line\n"
    ).full_path
    (found,) = experiments.parse_experiments_file(path)
    self.assertEqual(found.flags_text, "--xla_dump_to=/tmp/run#2")

  def test_output_files_follow_the_umask(self):
    out = self.create_tempdir().full_path
    old = os.umask(0o002)
    try:
      files.atomic_write(os.path.join(out, "a.txt"), "x")
    finally:
      os.umask(old)
    mode = stat.S_IMODE(os.stat(os.path.join(out, "a.txt")).st_mode)
    self.assertEqual(mode, 0o664)


class InputRulesCliTest(absltest.TestCase):
  def _usage_error(self, *args: str) -> str:
    proc = run_hloprobe_here(*args)
    self.assertEqual(proc.returncode, 2, proc.stderr)
    self.assertEqual(proc.stdout, "")
    (line,) = proc.stderr.splitlines()
    return line

  def test_error_bounds_are_finite_and_not_negative(self):
    for flag in ("--abs_error_bound=-1", "--rel_error_bound=nan"):
      line = self._usage_error("verify", "--fix=float32", flag)
      self.assertIn("must be a finite number >= 0", line)

  def test_golden_refuses_target_config(self):
    line = self._usage_error(
      "golden", "check", "--target_config=hloprobe/compile/gpu_specs/t4.txtpb"
    )
    self.assertIn("`golden` does not read --target_config", line)


if __name__ == "__main__":
  absltest.main()
