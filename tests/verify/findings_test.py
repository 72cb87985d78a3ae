"""The answer's parts without XLA: findings ranked by distance beyond
their band, the answer's lines, the `verify` command of a fix, and the
candidates that apply (issue 26, "explain answers first")."""

from __future__ import annotations

import dataclasses
import math

from absl.testing import absltest, parameterized

from hloprobe import engine, records, verify
from hloprobe.compile import get_target
from hloprobe.report import Answer, answer_json
from hloprobe.report.explain_answer import answer_lines
from hloprobe.sites import Fate
from hloprobe.verify import candidates
from hloprobe.verify.candidates import TryPlan
from hloprobe.verify.findings import rank_findings


def _finding(ratio, target="a100", kind="row 0", what="unexplained", **kw):
  error = None if ratio is None or math.isinf(ratio) else ratio * 1e-4
  return verify.Finding(
    kind,
    "seed_mlp",
    target,
    "baseline",
    True,
    ("bfloat16",),
    (2, 3, 4, 9),
    what,
    error_abs=error,
    floor_abs=1e-4,
    floor_words="f32 noise floor",
    ratio=ratio,
    source="predicted",
    **kw,
  )


class RankTest(parameterized.TestCase):
  def test_a_bigger_error_first(self):
    small, big = _finding(3.0, "t4"), _finding(6000.0, "a100")
    self.assertEqual(rank_findings([small, big]), (big, small))

  def test_should_fail_twin_equal_ratios_keep_sweep_order(self):
    # Nothing but the ratio reorders: a stable sort.
    a, b = _finding(5.0, "t4"), _finding(5.0, "a100")
    self.assertEqual(rank_findings([a, b]), (a, b))

  def test_exact_band_first_no_distance_last(self):
    failed = _finding(None, kind="failed", what="compile failed: x")
    overflow = _finding(math.inf, kind="integer", what="overflow: ...")
    mid = _finding(40.0)
    self.assertEqual(
      rank_findings([failed, mid, overflow]), (overflow, mid, failed)
    )

  def test_a_failed_config_is_a_finding_without_distance(self):
    config = records.Config("seed_mlp", get_target("a100"), 2, "bfloat16")
    failure = records.Failure("compile", "XlaRuntimeError: INTERNAL: boom")
    (f,) = verify.find_findings([records.ConfigResult(config, failure=failure)])
    self.assertEqual((f.kind, f.ratio, f.batch_sizes), ("failed", None, (2,)))
    self.assertIn("compile failed: XlaRuntimeError", f.what)

  @parameterized.named_parameters(
    ("thousands", 6029.4, "6029x"),
    ("small", 2.345, "2.3x"),
    ("exact_band", math.inf, "beyond an exact band"),
  )
  def test_times_words(self, ratio, words):
    self.assertEqual(verify.times_words(ratio), words)


_X3 = "BF16_BF16_F32_X3"


def _trial(fix: str, passed: bool) -> verify.FixTrial:
  c = verify.Candidate(fix, f"--precisions={fix}", "some cost")
  return verify.FixTrial(c, passed, "why", f"hloprobe verify --fix={fix}")


class AnswerLinesTest(absltest.TestCase):
  def test_no_finding_says_so(self):
    self.assertEqual(
      answer_lines(Answer(())),
      ["Answer: no finding: every config within its band."],
    )

  def test_headline_then_the_first_fix_that_passes(self):
    # A finding without site records reads as `verify` found it; the
    # first fix that passed is its change, then its command (the lines
    # named at fault, the change in JAX terms: tests/report/findings_test).
    f = _finding(6029.4, what="explained by TF32_TF32_F32 at sites [0, 1, 2]")
    lines = answer_lines(
      Answer((f,), (_trial("float32", True), _trial(_X3, False)))
    )
    self.assertEqual(
      lines[0],
      "Answer: seed_mlp on a100 (compile only), n = 2-4, 9, under bfloat16: "
      "row 0 |err| vs f64 6.03e-01 (predicted), 6029x the f32 noise floor "
      "1.0e-04: explained by TF32_TF32_F32 at sites [0, 1, 2]",
    )
    self.assertTrue(
      lines[1].startswith("Do: precision=jax.lax.Precision.HIGHEST "),
      lines[1],
    )
    self.assertEqual(lines[2], "Verify (PASS): hloprobe verify --fix=float32")
    change = (
      f"  fails: precision=jax.lax.DotAlgorithmPreset.{_X3} or "
      f'jax.default_matmul_precision("{_X3}") (some cost)'
    )
    self.assertIn(f"{change}: --fix={_X3}", lines)
    verbose = answer_lines(
      Answer((f,), (_trial("float32", True), _trial(_X3, False))), True
    )
    self.assertIn(f"{change}: why: hloprobe verify --fix={_X3}", verbose)

  def test_a_second_cause_is_listed_below(self):
    big, small = _finding(6000.0), _finding(3.0, "t4")
    lines = answer_lines(Answer((big, small), (_trial("float32", True),)))
    self.assertTrue(lines[0].startswith("Answer: seed_mlp on a100 "))
    self.assertTrue(lines[0].endswith("(and 1 more cause below)"), lines[0])
    self.assertTrue(lines[1].startswith("Do: precision="), lines[1])
    self.assertIn("Findings by cause, worst first:", lines)

  def test_none_passed_says_so(self):
    lines = answer_lines(Answer((_finding(9.0),), (_trial(_X3, False),)))
    self.assertEqual(lines[1], "Do: none of the 1 fix tried passed (below)")

  def test_json_ratio_of_an_exact_band(self):
    f = _finding(math.inf, kind="integer", what="overflow: ...")
    doc = answer_json(Answer((f,), not_tried="--notry_fixes"))
    self.assertEqual(doc["findings"][0]["ratio"], "inf")
    self.assertEqual(doc["not_tried"], "--notry_fixes")


class CommandTest(absltest.TestCase):
  def _tries(self, *names):
    plan = engine.plan_sweep(
      engine.SweepSpec(("seed_mlp",), (1, 2, 9), ("bfloat16",), ("a100",))
    )
    found = [
      _finding(
        6000.0,
        fates=("Triton gemm (triton-gemm-rewriter)",),
        fate_kinds=(Fate.TRITON_GEMM,),
      )
    ]
    return TryPlan(
      dataclasses.replace(plan, batch_sizes=(1, 2, 9)),
      tuple(verify.Candidate(n, n, "") for n in names),
      tuple(found),
    )

  def test_verify_command(self):
    tries = self._tries("float32")
    self.assertEqual(
      verify.verify_command(tries, tries.candidates[0]),
      "hloprobe verify --case=seed_mlp --targets=a100 --batch_sizes=1,2,9 "
      "--precisions=bfloat16 --fix=float32 --require=consistent,accurate",
    )

  def test_a_module_file_case_gets_no_batch_sizes(self):
    # A module file runs at its own size (`fixed_size`): `verify` refuses
    # --batch_sizes for it and has no "consistent" (README, "A module
    # file as a case"), so the printed command must not ask for either.
    tries = self._tries("float32")
    swept = tries.plan.cases[0]
    module = dataclasses.replace(
      swept,
      case=dataclasses.replace(swept.case, fixed_size=8),
      source="dump/module_0000.jit_f.before_optimizations.txt",
    )
    tries = dataclasses.replace(
      tries, plan=dataclasses.replace(tries.plan, cases=(module,))
    )
    self.assertEqual(
      verify.verify_command(tries, tries.candidates[0]),
      "hloprobe verify "
      "--case=dump/module_0000.jit_f.before_optimizations.txt "
      "--targets=a100 --precisions=bfloat16 --fix=float32 "
      "--require=accurate",
    )

  def test_a_flag_fix_is_quoted(self):
    word = "split_k_off:--xla_gpu_experimental_force_split_k=1"
    tries = self._tries(word)
    self.assertIn(
      f"--fix={word} ", verify.verify_command(tries, tries.candidates[0])
    )
    spaced = verify.Candidate("a:--xla_x=1 --xla_y=2", "", "")
    self.assertIn(
      "'--fix=a:--xla_x=1 --xla_y=2'", verify.verify_command(tries, spaced)
    )

  @staticmethod
  def _applies(target: str, fate: str, split_k: tuple[int, ...] = ()) -> tuple:
    """The candidates for one finding at sites that became `fate`."""
    kinds = (Fate.TRITON_GEMM,)  # both tests' fates are Triton gemms
    found = [
      _finding(
        6000.0, target=target, fates=(fate,), fate_kinds=kinds, split_k=split_k
      )
    ]
    config = records.Config("seed_mlp", get_target(target), 2, "bfloat16")
    return candidates._applies(found, [records.ConfigResult(config)])

  def test_candidates_for_a_triton_finding_on_an_a100(self):
    got = self._applies("a100", "Triton gemm (triton-gemm-rewriter)")
    self.assertEqual(
      [c.fix for c in got],
      [
        "float32",
        "BF16_BF16_F32_X6",
        "TF32_TF32_F32_X3",
        "BF16_BF16_F32_X3",
        "no_triton_gemm",
      ],
    )

  def test_should_fail_twin_no_presets_below_sm80(self):
    # XLA's IsSupportedDotAlgorithmOnGpu: the multi-pass presets need
    # Ampere; a T4 (sm_75) is offered float32 and the flags only.
    got = self._applies("t4", "Triton gemm split-K 4", (4,))
    self.assertEqual(
      [c.words for c in got],
      [
        "--precisions=float32",
        "--xla_gpu_enable_triton_gemm=false",
        "--xla_gpu_experimental_force_split_k=1",
      ],
    )


if __name__ == "__main__":
  absltest.main()
