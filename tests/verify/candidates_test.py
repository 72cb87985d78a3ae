"""verify/candidates.py: the `verify` command of a fix and the candidate
fixes that apply, on findings made by hand (tests/verify_findings.py; no
XLA). Moved from verify/findings_test.py (CommandTest). The expected
commands are the `hloprobe verify` words the README gives for the seed."""

from __future__ import annotations

import dataclasses

from absl.testing import absltest
from verify_findings import finding

from hloprobe import engine, records, verify
from hloprobe.api import answering
from hloprobe.compile import get_target
from hloprobe.report import explain_answer
from hloprobe.sites import Fate
from hloprobe.verify import candidates
from hloprobe.verify.candidates import TryPlan


class CommandTest(absltest.TestCase):
  def _tries(self, *names):
    plan = engine.plan_sweep(
      engine.SweepSpec(("seed_mlp",), (1, 2, 9), ("bfloat16",), ("a100",))
    )
    found = [
      finding(
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
      candidates.verify_command(tries, tries.candidates[0]),
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
      candidates.verify_command(tries, tries.candidates[0]),
      "hloprobe verify "
      "--case=dump/module_0000.jit_f.before_optimizations.txt "
      "--targets=a100 --precisions=bfloat16 --fix=float32 "
      "--require=accurate",
    )

  def test_a_flag_fix_is_quoted(self):
    word = "split_k_off:--xla_gpu_experimental_force_split_k=1"
    tries = self._tries(word)
    self.assertIn(
      f"--fix={word} ", candidates.verify_command(tries, tries.candidates[0])
    )
    spaced = verify.Candidate("a:--xla_x=1 --xla_y=2", "", "")
    self.assertIn(
      "'--fix=a:--xla_x=1 --xla_y=2'", candidates.verify_command(tries, spaced)
    )

  @staticmethod
  def _applies(target: str, fate: str, split_k: tuple[int, ...] = ()) -> tuple:
    """The candidates for one finding at sites that became `fate`."""
    kinds = (Fate.TRITON_GEMM,)  # both tests' fates are Triton gemms
    found = [
      finding(
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


class UnloweredTest(absltest.TestCase):
  """A config jax could not trace or lower for its target (stage "lower":
  `errors.TraceError`, `compile.missing_lowering`) is a finding no fix is
  tried on: tracing and lowering come before XLA's flags and do not read
  the dots' precision; the answer says so rather than that none passed.
  A config XLA rejected (stage "compile") still gets the candidates."""

  def _swept(self, stage: str):
    plan = engine.plan_sweep(
      engine.SweepSpec(("seed_mlp",), (2,), ("bfloat16",), ("a100",))
    )
    config = records.Config("seed_mlp", get_target("a100"), 2, "bfloat16")
    failure = records.Failure(stage, "io_callback cannot be lowered for x")
    return plan, [records.ConfigResult(config, failure=failure)]

  def _tries(self, stage: str):
    plan, results = self._swept(stage)
    return candidates.plan_tries(verify.find_findings(results), results, plan)

  def test_no_fix_for_a_program_jax_cannot_lower(self):
    self.assertIsNone(self._tries("lower"))

  def test_fixes_for_a_compile_xla_rejected(self):
    tries = self._tries("compile")
    self.assertIn("float32", [c.fix for c in tries.candidates])

  def test_the_answer_says_why_none_was_tried(self):
    answer = answering.answer(*self._swept("lower"), try_fixes=True)
    self.assertEqual((answer.trials, answer.untried), ((), ()))
    self.assertEqual(
      explain_answer.answer_lines(answer)[1],
      "Do: fixes not tried (the configs at fault fail before XLA compiles "
      "them, at lower, where jax reads no XLA flag and a precision only as "
      "the dots' parameters)",
    )


if __name__ == "__main__":
  absltest.main()
