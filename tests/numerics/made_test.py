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

import re

import numpy as np
import pytest
import recorded
import testutil
from absl.testing import absltest, parameterized

from hloprobe.compile import CASES
from hloprobe.execute import execute_module
from hloprobe.ir import parse_hlo_module
from hloprobe.numerics import made as made_module
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


def _modules_and_args(texts: list[str]):
  """The modules of `texts` parsed, and random f32 arguments of the first
  one's parameters (the modules are one program: the same parameters)."""
  modules = [parse_hlo_module(t) for t in texts]
  params = modules[0].entry.parameters()
  g = np.random.default_rng(0)
  args = [
    g.standard_normal(params[i].shape.dims).astype(np.float32)
    for i in sorted(params)
  ]
  return modules, args


class ExecutedDigestTest(parameterized.TestCase):
  """Configs whose optimized modules differ only in their dots' precision
  attributes share one execution (issue 37: share work across configs):
  the recorded seed on the CPU at bfloat16, float32 and tensorfloat32."""

  _PRECISIONS = ("bfloat16", "float32", "tensorfloat32")

  def _texts(self, target: str, jaxlib: str) -> list[str]:
    return [
      recorded.load(f"seed_{target}_n2_{p}", jaxlib).optimized_hlo
      for p in self._PRECISIONS
    ]

  @parameterized.parameters(*recorded.RELEASES)
  def test_cpu_precisions_are_one_execution(self, jaxlib):
    texts = self._texts("cpu", jaxlib)
    # The texts differ: float32's dots ask operand_precision={highest,
    # highest}, tensorfloat32's {high,high}, bfloat16's none.
    self.assertLen(set(texts), 3)
    self.assertLen({made_module.executed_digest(t) for t in texts}, 1)
    # What the digest stands for: the executor, run on each module alone,
    # reads none of those attributes (the same outputs and gemm records,
    # widened and at F32).
    modules, args = _modules_and_args(texts)
    for widen in (True, False):
      runs = [execute_module(m, args, widen=widen) for m in modules]
      for run in runs[1:]:
        self.assertEqual(run.gemms, runs[0].gemms)
        for got, want in zip(run.outputs, runs[0].outputs, strict=True):
          np.testing.assert_array_equal(got, want)
    checker = MadeChecker(CASES["seed_mlp"], None, None)
    first = checker._module(texts[0])
    for text in texts[1:]:
      digest, module = checker._module(text)
      self.assertEqual(digest, first[0])
      self.assertIs(module, first[1])

  @parameterized.parameters(*recorded.RELEASES)
  def test_a100_tilings_are_one_execution(self, jaxlib):
    # The a100's bfloat16 and float32 modules at n = 2 differ in their
    # dots' algorithm attributes and in Triton's tiling (each nested gemm
    # fusion's block_level_fusion_config, its dot's tile sizes, the
    # header's fingerprint_before_lhs), not in their ops (issue 37).
    texts = self._texts("a100", jaxlib)[:2]
    no_algorithms = [
      re.sub(r", algorithm=[a-z0-9_]+", "", t).replace(", operand_", "")
      for t in texts
    ]
    self.assertNotEqual(*no_algorithms)  # the tilings differ
    self.assertLen({made_module.executed_digest(t) for t in texts}, 1)
    # What the digest stands for: each module executed alone gives the
    # same outputs and gemm records, widened and at one gemm algorithm.
    modules, args = _modules_and_args(texts)
    for widen, default in ((True, "F32"), (False, "F32"), (False, "TF32")):
      runs = [
        execute_module(m, args, widen=widen, default_algorithm=default)
        for m in modules
      ]
      self.assertTrue(runs[0].complete, runs[0].not_executed)
      self.assertNotEmpty(runs[0].gemms)
      self.assertEqual(runs[1].gemms, runs[0].gemms)
      for got, want in zip(runs[1].outputs, runs[0].outputs, strict=True):
        np.testing.assert_array_equal(got, want)

  @parameterized.parameters(*recorded.RELEASES)
  def test_a100_modules_that_differ_otherwise_are_not(self, jaxlib):
    # The seed's a100 modules at the BF16_BF16_F32 and _X3 presets differ
    # in their ops (a split's three dots), not only in tilings.
    texts = [
      recorded.load(f"preset_seed_a100_n2_{p}", jaxlib).optimized_hlo
      for p in ("BF16_BF16_F32", "BF16_BF16_F32_X3")
    ]
    self.assertLen({made_module.executed_digest(t) for t in texts}, 2)

  def test_tilings_are_dropped_the_values_kept(self):
    fusion = (
      "%gemm_fusion_dot = f32[8,4]{1,0} fusion(%a, %b), kind=kCustom, "
      'calls=%c, backend_config={"operation_queue_id":"0",'
      '"fusion_backend_config":{"kind":"__triton_nested_gemm_fusion",'
      '"block_level_fusion_config":{"num_warps":"2","output_tiles":'
      '[{"sizes":["16","32"]}],"num_ctas":1,"num_stages":3}},'
      '"force_earliest_schedule":false}\n'
      "%dot.1 = f32[8,4]{1,0} dot(%a, %b), lhs_contracting_dims={1}, "
      'rhs_contracting_dims={0}, backend_config={"sizes":["64"]}\n'
    )
    header = 'HloModule m, frontend_attributes={fingerprint_before_lhs="%s"}\n'
    digest = made_module.executed_digest
    one = header % "c9ef1c" + fusion
    other = header % "befc93" + fusion.replace('"16","32"', '"16","8"').replace(
      '"num_stages":3', '"num_stages":1'
    ).replace('["64"]', '["128"]')
    self.assertEqual(digest(one), digest(other))
    # What the executor reads stays (the fusion's kind, the dot's dims),
    # and so does a field not known to be unread.
    for read in (
      one.replace("__triton_nested_gemm_fusion", "__cudnn$fusion"),
      one.replace("rhs_contracting_dims={0}", "rhs_contracting_dims={1}"),
      one.replace('"force_earliest_schedule":false', '"x":true'),
    ):
      self.assertNotEqual(digest(read), digest(one))

  def test_only_the_attributes_are_dropped(self):
    line = (
      "%dot.1 = f32[2,3]{1,0} dot(%a, %b), lhs_contracting_dims={1}, "
      "rhs_contracting_dims={0}, operand_precision={highest,highest}, "
      'algorithm=dot_bf16_bf16_f32_x6, metadata={op_name="x, algorithm=y"}'
    )
    kept = (
      "%dot.1 = f32[2,3]{1,0} dot(%a, %b), lhs_contracting_dims={1}, "
      'rhs_contracting_dims={0}, metadata={op_name="x, algorithm=y"}'
    )
    digest = made_module.executed_digest
    self.assertEqual(digest(line), digest(kept))
    # Inside a quoted string the same words are kept.
    self.assertNotEqual(digest(kept), digest(kept.replace(", algorithm=y", "")))


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
