"""Convolutions are contraction sites (issue 24 item 1), on recorded compiles.

The conv net (`conv_net`: two 3x3 NHWC convolutions, 16 -> 32 -> 32
channels, then a dense head) as jaxlib 0.10.2 and 0.12.0.1 compiled it
(tests/testdata/compiles/conv_net_*). Expected values come from the
recorded texts themselves, read here with plain regular expressions (the
optimized HLO's cuDNN custom calls and their `operand_precision`, the
StableHLO's ops), and from XLA's cuDNN TF32 rule as its source states it
(xla/backends/gpu/autotuner/cudnn.cc: TF32 allowed iff every operand
precision is DEFAULT or HIGH), never from hloprobe's own output. No XLA
runs.
"""

from __future__ import annotations

import re

import recorded
from absl.testing import absltest, parameterized

from hloprobe.ir.stablehlo import CONVOLUTION, DOT, parse_stablehlo_dots
from hloprobe.sites import conv_rules
from hloprobe.sites.site_fate import Fate

_RELEASES = tuple((r.replace(".", "_"), r) for r in recorded.RELEASES)
_CUDNN_CALL = re.compile(
  r'custom-call\(.*custom_call_target="(__cudnn\$conv[A-Za-z]*)"'
)
# XLA's rule, as cudnn.cc's `allow_tf32` states it, on the A100 (sm_80).
_TF32_ALLOWED = {"default": True, "high": True, "highest": False}


def _cudnn_calls(hlo: str) -> list[tuple[str, tuple[str, ...]]]:
  """(target, operand precisions) of each cuDNN convolution call, in text
  order; a call without `operand_precision` is DEFAULT for every operand."""
  out = []
  for line in hlo.splitlines():
    m = _CUDNN_CALL.search(line)
    if not m:
      continue
    p = re.search(r"operand_precision=\{([a-z,]+)\}", line)
    out.append((m[1], tuple(p[1].split(",")) if p else ("default",) * 2))
  return out


class ConvNetSitesTest(parameterized.TestCase):
  """Three sites: two convolutions, then the dense head's dot."""

  @parameterized.named_parameters(*_RELEASES)
  def test_three_sites_in_program_order(self, jaxlib):
    text = recorded.load("conv_net_a100_n4_bfloat16", jaxlib).stablehlo
    ops = re.findall(r"stablehlo\.(convolution|dot_general)\b", text)
    self.assertEqual(ops, ["convolution", "convolution", "dot_general"])
    sites = parse_stablehlo_dots(text)
    self.assertEqual([s.op for s in sites], [CONVOLUTION, CONVOLUTION, DOT])
    self.assertEqual([s.index for s in sites], [0, 1, 2])
    # K: 3 x 3 window x 16 and 32 input features; the head's 32.
    self.assertEqual([s.contracting_size for s in sites], [144, 288, 32])
    self.assertEqual(str(sites[0].lhs), "f32[4,8,8,16]")
    self.assertEqual(str(sites[0].rhs), "f32[3,3,16,32]")
    self.assertEqual(str(sites[1].result), "f32[4,8,8,32]")
    w = sites[0].window
    self.assertEqual((w.input_batch, w.input_feature), (0, 3))
    self.assertEqual(w.kernel_spatial, (0, 1))
    self.assertEqual(w.padding, ((1, 1), (1, 1)))
    self.assertEqual((w.feature_group_count, w.batch_group_count), (1, 1))
    # Each convolution's source line is its own line of the case.
    self.assertTrue(all(s.location for s in sites))
    self.assertNotEqual(sites[0].location, sites[1].location)
    self.assertIn("issue_cases.py", sites[0].location)

  @parameterized.named_parameters(
    (f"{p}_{tag}", p, r)
    for p in ("bfloat16", "tensorfloat32", "float32")
    for tag, r in _RELEASES
  )
  def test_convolutions_are_cudnn_calls_at_xla_rule(self, precision, jaxlib):
    rec = recorded.load(f"conv_net_a100_n4_{precision}", jaxlib)
    calls = _cudnn_calls(rec.optimized_hlo)
    self.assertLen(calls, 2)
    fates = recorded.fates(rec)
    self.assertLen(fates, 3)
    for f, (target, precisions) in zip(fates[:2], calls):
      self.assertEqual(f.fate, Fate.CUDNN_CONV)
      self.assertEqual(f.custom_call_target, target)
      self.assertEqual(target, "__cudnn$convBiasActivationForward")
      tf32 = all(_TF32_ALLOWED[p] for p in precisions)
      self.assertEqual(
        f.effective_algorithm, "TF32_TF32_F32" if tf32 else "F32_F32_F32"
      )
      self.assertEqual(f.algorithm_source, "rule")
      self.assertEqual(f.tf32_optional, tf32)
      self.assertIsNone(f.conflict)
    self.assertNotIn(fates[2].fate, (Fate.CUDNN_CONV, Fate.CONV))
    records = [f.record() for f in fates]
    self.assertEqual(
      [r["op"] for r in records], ["convolution", "convolution", "dot_general"]
    )
    self.assertEqual(records[0]["custom_call_target"], calls[0][0])

  @parameterized.named_parameters(*_RELEASES)
  def test_float32_writes_highest_on_the_calls(self, jaxlib):
    """The independent fact behind F32 under `float32`: the HLO says so."""
    rec = recorded.load("conv_net_a100_n4_float32", jaxlib)
    calls = _cudnn_calls(rec.optimized_hlo)
    self.assertLen(calls, 2)  # conv_net's two convolutions
    for _, precisions in calls:
      self.assertEqual(precisions[:2], ("highest", "highest"))

  @parameterized.named_parameters(*_RELEASES)
  def test_planted_highest_turns_tf32_off(self, jaxlib):
    """Should-fail half: the bfloat16 compile with one call's precision
    edited to HIGHEST runs that site in F32 and only that one."""
    rec = recorded.load("conv_net_a100_n4_bfloat16", jaxlib)

    def edit(text):
      return text.replace(
        'custom_call_target="__cudnn$convBiasActivationForward"',
        "operand_precision={highest,highest,default}, "
        'custom_call_target="__cudnn$convBiasActivationForward"',
        1,
      )

    fates = recorded.fates(rec, edit_hlo=edit)
    algorithms = [f.effective_algorithm for f in fates[:2]]
    self.assertCountEqual(algorithms, ["F32_F32_F32", "TF32_TF32_F32"])
    edited = next(f for f in fates if f.effective_algorithm == "F32_F32_F32")
    self.assertEqual(edited.conflict.optimized, "highest,highest")

  @parameterized.named_parameters(*_RELEASES)
  def test_cpu_keeps_convolutions(self, jaxlib):
    rec = recorded.load("conv_net_cpu_n4_bfloat16", jaxlib)
    self.assertEqual(rec.optimized_hlo.count(" convolution("), 2)
    fates = recorded.fates(rec)
    self.assertEqual([f.fate for f in fates[:2]], [Fate.CONV, Fate.CONV])
    self.assertEqual({f.effective_algorithm for f in fates}, {"F32_F32_F32"})
    self.assertIn("convolution in f32", fates[0].algorithm_evidence)


class CudnnConvRuleTest(parameterized.TestCase):
  """`cudnn_conv_algorithm` against XLA's and cuDNN's stated rules."""

  @parameterized.parameters(
    ("f32", "default,default", "8.0", "TF32_TF32_F32"),
    ("f32", "high,high", "8.0", "TF32_TF32_F32"),
    ("f32", "highest,highest", "8.0", "F32_F32_F32"),
    ("f32", "high,highest", "9.0", "F32_F32_F32"),
    ("f32", "default,default", "7.5", "F32_F32_F32"),  # no TF32 before sm_80
    ("f32", "default,default", None, None),
    ("f32", "packed_nibble,default", "8.0", None),  # not a rank: unknown
    ("bf16", "default,default", "8.0", "BF16_BF16_F32"),
    ("f16", "highest,highest", "8.0", "F16_F16_F32"),
    ("s8", "default,default", "8.0", None),
  )
  def test_rule(self, dtype, precision, cc, want):
    got, why = conv_rules.cudnn_conv_algorithm(dtype, precision, cc)
    self.assertEqual(got, want)
    self.assertTrue(why)


if __name__ == "__main__":
  absltest.main()
