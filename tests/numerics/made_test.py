"""Issue 23 end to end: the seed's story is unchanged, and `verify`
FAILs the scaled_dense rewrite where the jaxlib makes it.

Compiles (marked): the seed fixtures' float64 references and emulations
run jax on the CPU; the verify test runs the command line. What each
jaxlib does is stated from the recorded modules (release_rules):
jaxlib 0.10.2 folds 0.1 into the cuBLASLt alpha over a BIAS epilogue,
0.12.0.1 keeps alpha 1 (tests/testdata/compiles/
scaled_dense_a100_n8_float32_no_triton_gemm).
"""

from __future__ import annotations

import pytest
import recorded
import testutil
from absl.testing import absltest, parameterized

from hloprobe.compile import CASES
from hloprobe.numerics.made import MadeChecker
from hloprobe.numerics.reference import References
from hloprobe.report.verdict_words import CHANGED

_SEED = ("seed_a100_n2_bfloat16", "seed_a100_n9_float32", "seed_cpu_n2_float32")


@pytest.mark.compiles
class SeedStoryTest(parameterized.TestCase):
  """Both predictions agree on the seed: XLA keeps its math."""

  @parameterized.named_parameters(
    (f"{name}_{r.replace('.', '_')}", name, r)
    for name in _SEED
    for r in recorded.RELEASES
  )
  def test_made_agrees_with_the_program(self, name, jaxlib):
    rec = recorded.load(name, jaxlib)
    case = CASES["seed_mlp"]
    n = rec.config["n"]
    full = case.full_inputs()
    refs = References(case, full, (n,))
    predicted = recorded.prediction(case, rec)
    fates = recorded.fates(rec)
    made = MadeChecker(case, full, refs).check(
      n, rec.optimized_hlo, fates, None, predicted.bands, predicted.leaf
    )
    self.assertTrue(made.complete, made.not_executed)
    self.assertFalse(made.changed, (made.deviation_abs, made.bound_abs))
    # "What XLA made" sits where "what the program asks" predicts row 0.
    self.assertLessEqual(
      abs(made.stats.row0 - predicted.stats.row0), predicted.tolerance_abs
    )


@pytest.mark.compiles
@pytest.mark.release_rules
class VerifyTest(absltest.TestCase):
  def test_verify_accurate_fails_where_the_math_changed(self):
    flagged = not testutil.jaxlib_at_least("0.12.0.1")
    proc = testutil.run_hloprobe_here(
      "verify",
      "--case=scaled_dense",
      "--targets=a100",
      "--precisions=float32",
      "--batch_sizes=8",
      "--fix=no_triton_gemm",
      "--require=accurate",
      "--nocache",
      timeout_s=600,
    )
    if flagged:
      self.assertEqual(proc.returncode, 1, proc.stderr)
      self.assertIn(f"{CHANGED}: __cublas$lt$matmul", proc.stdout)
      self.assertIn("alpha_real 0.1, beta 0, epilogue BIAS", proc.stdout)
    else:
      self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
      self.assertNotIn(CHANGED, proc.stdout)


if __name__ == "__main__":
  absltest.main()
