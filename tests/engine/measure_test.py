"""Where the numpy executor cannot run a program, one clear line (issue 24
leftovers, attention): jax's cuDNN attention primitive has a CUDA lowering
only (jax/_src/cudnn/fused_attention_stablehlo.py registers
`dot_product_attention_fwd` with platform="cuda"), so the executor's
check (the float64 reference, the F32 run the noise floor is checked
against) names it instead of jax's NotImplementedError, and "what XLA
made" names the optimized module's `__cudnn$fmha...` call (read from the
recorded h100 compile), not a lowering error.
"""

from __future__ import annotations

import jax
import pytest
import recorded
from absl.testing import absltest

from hloprobe.compile import CASES, get_target
from hloprobe.engine.measure import run_config
from hloprobe.numerics import (
  accuracy,
  executed,
  floor_check,
  made,
  reference,
)
from hloprobe.report.verdict_words import made_words

_CASE = CASES["cudnn_attention"]
_WORDS = (
  "GPU-only primitive dot_product_attention_fwd has no CPU lowering for "
  "the executor's check"
)


class WordsTest(absltest.TestCase):
  def test_jax_message_named(self):
    # jax's words (jax/_src/interpreters/mlir.py, lower_per_platform).
    e = NotImplementedError(
      "MLIR translation rule for primitive 'dot_product_attention_fwd' not "
      "found for platform cpu"
    )
    self.assertEqual(executed.why_not_lowered(e), _WORDS)

  def test_other_primitive_not_called_gpu_only(self):
    e = NotImplementedError(
      "MLIR translation rule for primitive 'tpu_custom_call' not found for "
      "platform cpu"
    )
    self.assertEqual(
      executed.why_not_lowered(e),
      "primitive tpu_custom_call has no CPU lowering for the executor's check",
    )

  def test_other_errors_keep_their_first_line(self):
    e = ValueError("bad module\nsecond line")
    self.assertEqual(executed.why_not_lowered(e), "ValueError: bad module")


@pytest.mark.compiles
class AttentionConfigTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.full = _CASE.full_inputs()
    cls.refs = reference.References(_CASE, cls.full, (2,))

  def test_jax_really_says_it(self):
    args = _CASE.inputs_for(self.full, 2)
    with self.assertRaises(NotImplementedError) as raised:
      jax.jit(_CASE.fn).lower(*args)  # jax's CPU lowering
    self.assertEqual(executed.why_not_lowered(raised.exception), _WORDS)

  def test_the_cpu_targets_config_fails_with_one_line(self):
    # break24: the cpu config printed jax's raw NotImplementedError.
    r = run_config(_CASE, self.full, None, get_target("cpu"), "default", 2)
    self.assertFalse(r.ok)
    self.assertEqual(
      r.failure.error,
      "GPU-only primitive dot_product_attention_fwd has no CPU lowering",
    )

  def test_reference_and_floor_check_name_it(self):
    self.assertEqual(
      self.refs.source(2),
      f"XLA:CPU float64 (not executed by the numpy executor: {_WORDS})",
    )
    run = self.refs.executed_f32(2)
    self.assertIsNone(run.outputs)
    self.assertEqual(run.why_not, _WORDS)
    (ref,) = self.refs.at(2)
    check = floor_check.check_floor(
      accuracy.NoiseFloor(1e-3, 1e-3, 0.0),
      None,
      ref,
      0,
      "bfloat16",
      64,
      "case cudnn_attention, n = 2",
      run.why_not,
    )
    self.assertEqual(
      check.status, f"not checked: not executed by the numpy executor: {_WORDS}"
    )
    self.assertNotIn("NotImplementedError", check.status)

  def test_made_names_the_fused_attention_call(self):
    rec = recorded.load("cudnn_attention_h100_n2_bfloat16")
    got = made.MadeChecker(_CASE, self.full, self.refs).check(
      2, rec.optimized_hlo, tuple(recorded.fates(rec))
    )
    # The recorded module's one fmha custom call (its HLO name).
    (call,) = [
      line.split("=")[0].strip().removeprefix("ROOT ").lstrip("%")
      for line in rec.optimized_hlo.splitlines()
      if 'custom_call_target="__cudnn$fmhaSoftmax"' in line
    ]
    self.assertEqual(got.not_executed, (f"__cudnn$fmhaSoftmax ({call})",))
    self.assertEqual(
      made_words(got),
      f"prediction incomplete: not executed: __cudnn$fmhaSoftmax ({call})",
    )


if __name__ == "__main__":
  absltest.main()
