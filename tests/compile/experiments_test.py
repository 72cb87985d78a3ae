"""XLA_FLAGS experiments: parsing, workers, and failure of a bad flag alone."""

from __future__ import annotations

import os

import pytest
from absl.testing import absltest, parameterized

from hloprobe import engine
from hloprobe.compile import experiments
from hloprobe.errors import InvalidArgumentError
from hloprobe.sites import Fate


class ParseTest(parameterized.TestCase):
  def test_named_flags(self):
    e = experiments.Experiment.parse(
      "cublas:--xla_gpu_enable_triton_gemm=false --xla_gpu_autotune_level=0"
    )
    self.assertEqual(e.name, "cublas")
    self.assertEqual(
      e.xla_flags,
      ("--xla_gpu_enable_triton_gemm=false", "--xla_gpu_autotune_level=0"),
    )

  def test_builtin(self):
    e = experiments.Experiment.parse("no_triton_gemm")
    self.assertEqual(e.flags_text, "--xla_gpu_enable_triton_gemm=false")

  @parameterized.named_parameters(
    ("unknown_builtin", "no_such", "unknown experiment 'no_such'"),
    ("not_a_flag", "x:-O3", "malformed XLA flag '-O3'"),
    ("no_flags", "x:", "has no XLA flags"),
    (
      "baseline_taken",
      "baseline:--xla_foo=1",
      "bad experiment name 'baseline'",
    ),
    ("bad_name", "a b:--xla_foo=1", "bad experiment name"),
  )
  def test_reject(self, text, message):
    with self.assertRaisesRegex(InvalidArgumentError, message):
      experiments.Experiment.parse(text)

  def test_file(self):
    path = self.create_tempfile(
      content=(
        "# experiments\n"
        "no_algsimp\n"
        "fast:--xla_cpu_enable_fast_math=true  # trailing comment\n"
      )
    ).full_path
    found = experiments.parse_experiments_file(path)
    self.assertEqual([e.name for e in found], ["no_algsimp", "fast"])
    bad = self.create_tempfile(content="ok:--xla_a=1\nbroken:oops\n").full_path
    with self.assertRaisesRegex(
      InvalidArgumentError, ":2: malformed XLA flag 'oops'"
    ):
      experiments.parse_experiments_file(bad)
    with self.assertRaisesRegex(
      InvalidArgumentError, "--experiments_file=.*cannot read it"
    ):
      experiments.parse_experiments_file(os.path.join(bad, "missing"))


@pytest.mark.compiles
@pytest.mark.release_rules  # XLA:CPU's fates with and without algsimp
class SweepWithExperimentsTest(absltest.TestCase):
  def test_flags_change_fates_and_a_bad_flag_fails_alone(self):
    spec = engine.SweepSpec(
      ("seed_mlp",),
      (1,),
      ("float32",),
      ("cpu",),
      experiments=(
        experiments.BUILTIN_EXPERIMENTS["no_algsimp"],
        experiments.Experiment.parse("typo:--xla_cpu_enable_fast_mathh=false"),
      ),
    )
    base, no_algsimp, typo = engine.run_sweep(spec)
    self.assertEqual(
      [r.config.experiment for r in (base, no_algsimp, typo)],
      ["baseline", "no_algsimp", "typo"],
    )
    self.assertEqual(base.compilation.fates[3].fate, Fate.MULTIPLY_REDUCE)
    # Without AlgebraicSimplifier the CPU keeps the last layer as a dot.
    self.assertEqual(no_algsimp.compilation.fates[3].fate, Fate.DOT)
    self.assertIsNotNone(no_algsimp.execution.stats)
    self.assertFalse(typo.ok)
    self.assertEqual(typo.failure.stage, "worker")
    self.assertIn(
      "XLA rejected flag --xla_cpu_enable_fast_mathh=false", typo.failure.error
    )

  def test_duplicate_names_rejected(self):
    # The same experiment twice is swept once (as any repeated name is);
    # one name for two flag sets is an error.
    e = experiments.BUILTIN_EXPERIMENTS["no_algsimp"]
    other = experiments.Experiment.parse("no_algsimp:--xla_foo=1")
    with self.assertRaisesRegex(InvalidArgumentError, "unique"):
      engine.plan_sweep(
        engine.SweepSpec(
          ("seed_mlp",), (1,), ("float32",), ("cpu",), experiments=(e, other)
        )
      )


if __name__ == "__main__":
  absltest.main()
