"""`hloprobe verify` on the a100 (compile-only, predicted) and cpu targets."""

from __future__ import annotations

import json
import re

import pytest
import testutil
from absl.testing import absltest, parameterized
from testutil import run_hloprobe_here

from hloprobe import engine, verify
from hloprobe.compile import compat
from hloprobe.errors import InvalidArgumentError
from hloprobe.report import verification
from hloprobe.verify import fix as verify_fix
from hloprobe.verify import outcome as verify_outcome

# Asserts CPU-computed floats: `make test-isa` reruns it under other ISAs.
pytestmark = pytest.mark.cpu_numerics


# One pool of workers for the module's sweeps (baseline and each fix's
# XLA_FLAGS: a worker each, reused by the next test).
_POOL = testutil.SweepPool()


def tearDownModule():
  _POOL.close()


def _verify(
  fix: str,
  require=("consistent", "accurate"),
  targets=("a100",),
  sizes=(1, 2, 3),
  precisions=("bfloat16",),
  **kwargs,
):
  spec = engine.SweepSpec(
    ("seed_mlp",), sizes, precisions, targets, cache_dir=testutil.record_cache()
  )
  parsed = verify_fix.parse_fix(fix)
  results = _POOL.run(verify_fix.fix_sweep(spec, parsed, require))
  return verify_outcome.verify(
    results,
    spec,
    parsed,
    require,
    versions=compat.jaxlib_release().versions,
    **kwargs,
  )


def _by_name(v):
  return {r.name: r for r in v.requirements}


def _lines(requirement) -> tuple[str, ...]:
  """A requirement's evidence records as the lines `verify` prints."""
  return tuple(verification.requirement_lines(requirement))


def _changes(v) -> list[str]:
  return [str(c) for c in v.fate_changes]


class ParseTest(parameterized.TestCase):
  def test_kinds(self):
    self.assertEqual(verify_fix.parse_fix("float32").precision, "float32")
    self.assertEqual(
      verify_fix.parse_fix("F32_F32_F32").precision, "F32_F32_F32"
    )
    self.assertEqual(
      verify_fix.parse_fix("no_triton_gemm").experiment.xla_flags,
      ("--xla_gpu_enable_triton_gemm=false",),
    )
    self.assertEqual(verify_fix.parse_fix("x:--xla_foo=1").name, "x")

  @parameterized.named_parameters(
    (
      "fix",
      lambda: verify_fix.parse_fix("fp32"),
      "neither a matmul precision nor an experiment: did you mean 'float32'",
    ),
    (
      # The README's own short name for a precision.
      "fix_tf32",
      lambda: verify_fix.parse_fix("tf32"),
      "did you mean 'tensorfloat32'\\? unknown experiment 'tf32'",
    ),
    (
      "fix_experiment",
      lambda: verify_fix.parse_fix("no_triton_gem"),
      ": unknown experiment 'no_triton_gem'; did you mean 'no_triton_gemm'",
    ),
    (
      "require",
      lambda: verify.parse_requirements("fast"),
      r"unknown requirement.*e\.g\. --require=consistent,accurate",
    ),
  )
  def test_bad(self, call, message):
    with self.assertRaisesRegex(InvalidArgumentError, message):
      call()

  def test_no_fix_is_the_baseline_at_the_sweeps_precisions(self):
    # `verify` without --fix: nothing added to the sweep, and every
    # baseline config is judged (none is "the baseline it replaces").
    spec = engine.SweepSpec(("tm_mm",), (1, 2), ("bfloat16",), ("cpu",))
    swept = verify_fix.fix_sweep(spec, verify_fix.BASELINE_FIX, ["invariant"])
    self.assertEqual(
      (swept.precisions, swept.experiments, swept.cases),
      (("bfloat16",), (), ("tm_mm",)),
    )
    self.assertTrue(verify_fix.BASELINE_FIX.baseline)
    self.assertFalse(verify_fix.parse_fix("float32").baseline)
    self.assertFalse(verify_fix.parse_fix("no_triton_gemm").baseline)

  def test_invariant_alone_sweeps_the_bits_only(self):
    # As `explain --only=invariance`: "invariant" is judged from the rows'
    # bits and the kernels, never from the float64 reference; "golden"
    # keeps the numerics (its dots.json holds what XLA made).
    spec = engine.SweepSpec(("tm_mm",), (1, 2), ("float32",), ("cpu",))
    for fix in (verify_fix.BASELINE_FIX, verify_fix.parse_fix("float32")):
      for require, numerics in (
        (("invariant",), False),
        (("invariant", "accurate"), True),
        (("consistent",), True),
        (("golden", "invariant"), True),
      ):
        swept = verify_fix.fix_sweep(spec, fix, require)
        self.assertIs(swept.numerics, numerics, (fix.name, require))
        self.assertIs(engine.plan_sweep(swept).numerics, numerics)

  def test_consistent_needs_two_batch_sizes(self):
    verify_fix.check_batch_sizes(("consistent",), (1, 2))
    verify_fix.check_batch_sizes(("accurate", "golden"), (2,))
    with self.assertRaisesRegex(
      InvalidArgumentError,
      "--require=consistent compares row 0 across batch sizes and needs at "
      "least two; got --batch_sizes=2;",
    ):
      verify_fix.check_batch_sizes(("accurate", "consistent"), (2,))

  def test_judge_has_no_golden(self):
    # `judge` (bisect) has no golden folder: only the sweep-alone checks.
    with self.assertRaisesRegex(
      InvalidArgumentError,
      r"cannot judge \['golden'\] on a sweep alone; choose from "
      "consistent, accurate",
    ):
      verify.judge([], ("consistent", "golden"))


@pytest.mark.compiles
class A100Test(absltest.TestCase):
  def test_no_dot_strength_reduction_under_bfloat16(self):
    v = _verify("no_dot_strength_reduction")
    # Without dot-strength-reduction, n = 1 keeps its dots, but only sites 1
    # and 2 become Triton (TF32) gemms: site 0 (K = 2) and site 3 (one
    # output row) become loop-fusion dots running F32 (jaxlib 0.10.2). Site
    # 0 carries most of the TF32 error at n >= 2, so row 0 still moves.
    self.assertIn(
      "a100 seed_mlp n=1 bfloat16 -> no_dot_strength_reduction site 1: "
      "multiply+reduce F32_F32_F32 -> Triton gemm TF32_TF32_F32; emitter: "
      "kInput -> __triton_nested_gemm_fusion",
      _changes(v),
    )
    self.assertIn(
      "a100 seed_mlp n=1 bfloat16 -> no_dot_strength_reduction site 0: "
      "multiply+reduce F32_F32_F32 -> dot F32_F32_F32; emitter: kInput -> kLoop",
      _changes(v),
    )
    req = _by_name(v)
    self.assertFalse(req["consistent"].passed)
    self.assertFalse(req["accurate"].passed)
    self.assertIn("(predicted)", _lines(req["accurate"])[0])
    self.assertFalse(v.passed)

  def test_float32_passes_both(self):
    v = _verify("float32", targets=("a100", "cpu"))
    self.assertTrue(v.passed, [_lines(r)[:2] for r in v.requirements])
    evidence = "\n".join(e for r in v.requirements for e in _lines(r))
    self.assertIn("cpu seed_mlp n=2 float32", evidence)
    self.assertIn("(observed)", evidence)
    self.assertIn("(predicted)", evidence)
    self.assertIn(
      "a100 seed_mlp n=2 bfloat16 -> float32 site 0: Triton gemm TF32_TF32_F32 "
      "-> Triton gemm F32_F32_F32",
      _changes(v),
    )
    # Row 0's error before (TF32 operand rounding, order-free: 0.61 in our
    # numpy emulation) and after (f32: its size depends on the CPU's summation
    # order, so it is bounded by a tenth of the before, not pinned).
    line = next(
      e
      for e in map(verification.evidence_line, v.errors)
      if e.startswith("a100 seed_mlp n=2 bfloat16 ->")
    )
    match = re.search(r"\|err\| (\S+) -> (\S+) \(predicted\)", line)
    self.assertIsNotNone(match, line)
    before, after = float(match[1]), float(match[2])
    self.assertBetween(before, 0.59, 0.63)
    self.assertLess(after, before / 100)

  @pytest.mark.release_rules
  def test_no_triton_gemm_moves_gemms_to_cublaslt(self):
    v = _verify(
      "no_triton_gemm", sizes=(1, 2), precisions=("bfloat16", "tensorfloat32")
    )
    # The effective algorithm comes from the cuBLAS rule (IsTf32Allowed):
    # unchanged TF32 under DEFAULT; under HIGH F32 -> TF32 where the Triton
    # gemm kept f32 (before XLA 251becc5, jaxlib 0.11.1), else unchanged.
    high = (
      "TF32_TF32_F32" if testutil.triton_tf32_under_high() else "F32_F32_F32"
    )
    self.assertIn(
      "a100 seed_mlp n=2 bfloat16 -> no_triton_gemm site 0: Triton gemm "
      "TF32_TF32_F32 -> cuBLASLt TF32_TF32_F32; emitter: "
      "__triton_nested_gemm_fusion -> __cublas$lt$matmul",
      _changes(v),
    )
    self.assertIn(
      "a100 seed_mlp n=2 tensorfloat32 -> no_triton_gemm site 0: Triton gemm "
      f"{high} -> cuBLASLt TF32_TF32_F32; emitter: "
      "__triton_nested_gemm_fusion -> __cublas$lt$matmul",
      _changes(v),
    )
    self.assertFalse(_by_name(v)["consistent"].passed)
    # cuBLASLt is allowed, not required, to use TF32 (a real H200's kept
    # the K = 2 gemm in f32): the predicted move is the upper bound.
    evidence = _lines(_by_name(v)["consistent"])
    n2 = [line for line in evidence if " n=2 " in line]
    self.assertLen(n2, 2)
    for line in n2:
      self.assertIn(
        "(predicted with TF32 at cuBLAS sites [0, 1, 2], which may keep "
        "f32: ambiguous)",
        line,
      )

  def test_golden_requirement(self):
    # Two of the goldens' batch sizes (1, 2, 9): each fix config compiled
    # with its pass dumps (and the baseline's beside it) costs ~1 CPU-s.
    v = _verify("float32", require=("golden",), targets=("a100",), sizes=(1, 2))
    self.assertTrue(v.passed, _lines(v.requirements[0]))
    # 2 configs x (hlo, dots.json, stablehlo) under the goldens' own jaxlib;
    # under another, the dot summaries alone (golden/snapshot.py).
    same = testutil.goldens_from_this_jaxlib()
    self.assertEqual(
      _lines(v.requirements[0]),
      (f"{6 if same else 2} golden files match",),
    )
    v = _verify("no_triton_gemm", require=("golden",), sizes=(2,))
    self.assertFalse(v.passed)
    self.assertIn(
      "missing golden a100/seed_mlp/n2-bfloat16-no_triton_gemm.dots.json",
      _lines(v.requirements[0])[0],
    )


@pytest.mark.compiles
class OneBatchSizeTest(absltest.TestCase):
  # After A100Test (pytest runs the classes in file order): n = 3 is
  # test_float32_passes_both's cpu config, baseline and fix, so both are
  # record-cache hits (the key has the largest batch size, 3 in both).
  def test_consistent_fails_saying_why(self):
    v = _verify(
      "float32",
      require=("consistent",),
      targets=("cpu",),
      sizes=(3,),
    )
    (consistent,) = v.requirements
    self.assertFalse(consistent.passed)
    self.assertEqual(
      _lines(consistent),
      (
        "cpu seed_mlp float32: consistent needs at least two batch sizes; "
        "got n=3",
      ),
    )


class CliUsageTest(absltest.TestCase):
  """`hloprobe verify`'s input checks, in this process (they end before
  any work)."""

  def test_consistent_with_one_batch_size_is_a_usage_error(self):
    proc = run_hloprobe_here(
      "verify", "--targets=cpu", "--batch_sizes=2", "--fix=float32"
    )
    self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
    self.assertEqual(proc.stdout, "")
    self.assertRegex(
      proc.stderr,
      r"^hloprobe: error: --require=consistent compares row 0 across batch "
      r"sizes and needs at least two; got --batch_sizes=2; [^\n]+\n$",
    )

  def test_usage(self):
    # No --fix is the baseline (tests/commands/verify_test.py); an empty
    # --fix= is refused, as a misspelt one.
    for args in (
      ("--fix=fp64",),
      ("--fix=float32", "--require=nice"),
      ("--fix=",),
      ("--require=nice",),
      ("--require=invariant", "--batch_sizes=8"),
    ):
      proc = run_hloprobe_here("verify", "--targets=cpu", *args)
      self.assertEqual(proc.returncode, 2, (args, proc.stderr))
      self.assertTrue(
        proc.stderr.strip().startswith("hloprobe: error:"), proc.stderr
      )


@pytest.mark.compiles
class CliTest(absltest.TestCase):
  def test_json_pass_exit_0(self):
    # On A100Test.test_float32_passes_both's cpu configs (record-cache hits
    # after it: the cache's key has the sweep's largest batch size), in
    # this process: `python -m hloprobe verify` runs whole in a process of
    # its own in tests/compile/cases_user_test.py (by module name).
    proc = run_hloprobe_here(
      "verify",
      "--targets=cpu",
      "--batch_sizes=1-3",
      "--precisions=bfloat16",
      "--fix=float32",
      "--format=json",
      timeout_s=600,
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    doc = json.loads(proc.stdout)
    self.assertEqual((doc["passed"], doc["fix_kind"]), (True, "precision"))
    self.assertEqual(
      [r["name"] for r in doc["requirements"]], ["consistent", "accurate"]
    )

  def test_misspelled_flag_fails_alone_and_is_named(self):
    # The baseline: A100Test.test_float32_passes_both's cpu configs,
    # record-cache hits; only the fix's worker starts (and fails).
    proc = run_hloprobe_here(
      "verify",
      "--targets=cpu",
      "--batch_sizes=1-3",
      "--precisions=bfloat16",
      "--fix=typo:--xla_cpu_enable_fast_mathh=false",
      "--require=accurate",
      timeout_s=600,
    )
    self.assertEqual(proc.returncode, 1, proc.stderr)
    self.assertIn(
      "the fix failed: XLA rejected flag --xla_cpu_enable_fast_mathh=false",
      proc.stdout,
    )

  def test_bounds(self):
    # test_json_pass_exit_0's configs: record-cache hits.
    proc = run_hloprobe_here(
      "verify",
      "--targets=cpu",
      "--batch_sizes=1-3",
      "--precisions=bfloat16",
      "--fix=float32",
      "--require=accurate",
      "--abs_error_bound=1e-9",
      timeout_s=600,
    )
    self.assertEqual(proc.returncode, 1, proc.stdout)
    self.assertIn("abs bound 1e-09", proc.stdout)


if __name__ == "__main__":
  absltest.main()
