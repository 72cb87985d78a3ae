"""cuDNN attention compiles for compile-only targets on a machine with no GPU
(issue 24, item 2), with the nvidia-cudnn-cu12 wheel pyproject.toml pins.

Where the expected values come from: the optimized HLO text itself (its
`custom_call_target="__cudnn$fmha..."` instructions, found here by a
regex, not by hloprobe's parser) and jax's own list of targets
(jax/_src/cudnn/fused_attention_stablehlo.py `_custom_name_maps`:
`__cudnn$fmhaSoftmax` forward, `__cudnn$fmhaSoftmaxBackward` under a
grad).
"""

from __future__ import annotations

import dataclasses
import inspect
import re

import jax
import pytest
from absl.testing import absltest, parameterized

from hloprobe import engine
from hloprobe.compile import cases, lowering, targets
from hloprobe.compile.cudnn import cudnn_version

pytestmark = pytest.mark.compiles

_CASE = cases.get_case("cudnn_attention")
_TARGET_RE = re.compile(r'custom_call_target="(__cudnn\$fmha\w*)"')


def _compile(case, target: str, n: int = 2):
  args = case.inputs_for(case.make_inputs(), n)
  return lowering.compile_case(
    case, args, "bfloat16", targets.get_target(target)
  )


def _grad_case():
  def loss(q, k, v):
    return _CASE.fn(q, k, v).astype("float32").sum()

  grad = jax.grad(loss, argnums=(0, 1, 2))
  return dataclasses.replace(_CASE, name="cudnn_attention_grad", fn=grad)


class CompileOnlyTest(parameterized.TestCase):
  def test_the_wheel_is_found(self):
    # 9.10.2: the version pyproject.toml pins (major*10000 + minor*100 +
    # patch, cudnnGetVersion's encoding for cuDNN 9).
    self.assertEqual(cudnn_version(), 91002)

  @parameterized.named_parameters(("h100", "h100"), ("a100", "a100"))
  def test_forward_compiles_to_the_fmha_call(self, target):
    compiled = _compile(_CASE, target)
    self.assertEqual(
      _TARGET_RE.findall(compiled.optimized_hlo), ["__cudnn$fmhaSoftmax"]
    )
    self.assertIn(
      "stablehlo.custom_call @__cudnn$fmhaSoftmax", compiled.stablehlo
    )

  def test_grad_compiles_to_forward_and_backward_calls(self):
    compiled = _compile(_grad_case(), "h100")
    self.assertEqual(
      sorted(_TARGET_RE.findall(compiled.optimized_hlo)),
      ["__cudnn$fmhaSoftmax", "__cudnn$fmhaSoftmaxBackward"],
    )


class SweepTest(absltest.TestCase):
  def test_the_site_shows_with_its_fate(self):
    spec = engine.SweepSpec(
      ("cudnn_attention",), (2,), ("bfloat16",), ("h100",)
    )
    (r,) = engine.run_sweep(spec)
    self.assertTrue(r.ok, r.failure)
    (fate,) = r.compilation.fates
    self.assertEqual(
      (fate.fate.value, fate.custom_call_target, fate.effective_algorithm),
      ("cuDNN fused attention", "__cudnn$fmhaSoftmax", "BF16_BF16_F32"),
    )
    # Predicted: the emulation and float64 reference exist for the forward.
    self.assertIsNone(r.prediction_error)
    self.assertIsNotNone(r.prediction)
    # The source line: the case's call of jax.nn.dot_product_attention.
    lines, first = inspect.getsourcelines(_CASE.fn)
    call = first + next(
      i for i, t in enumerate(lines) if "implementation=" in t
    )
    self.assertTrue(
      fate.site.location.endswith(f"hloprobe/compile/issue_cases.py:{call}"),
      fate.site.location,
    )


if __name__ == "__main__":
  absltest.main()
