"""A cuDNN fused attention call is a contraction site (issue 24, item 2),
read from recorded compiles (tests/testdata/compiles/cudnn_attention_*) of
jaxlib 0.10.2 and 0.12.0.1, without XLA.

Where the expected values come from: the recorded texts themselves, read
here with regexes and `json`, not hloprobe's parsers (the custom call's
target, its q and k operands, its `cudnn_fmha_backend_config` fields
`math_type` and `intermediate_tensor_shape.element_type`), and cuDNN's
documented flash-attention arithmetic (f32 accumulation and softmax for
bf16 inputs: cuDNN frontend docs, operations/Attention; see
`hloprobe.sites.attention_rules.cudnn_attention_algorithm`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re

import ml_dtypes
import numpy as np
import recorded
from absl.testing import absltest, parameterized

from hloprobe.execute import execute_module
from hloprobe.ir import parse_hlo_module
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.sites import Fate, attribute_passes, map_dot_sites
from hloprobe.sites.attention_rules import cudnn_attention_algorithm

_RELEASES = [(r.replace(".", "_"), r) for r in recorded.RELEASES]
_FORWARD, _BACKWARD = "__cudnn$fmhaSoftmax", "__cudnn$fmhaSoftmaxBackward"
_CALL_RE = re.compile(
  r"custom-call\(%([\w.]+), %([\w.]+), %([\w.]+)[^)]*\), "
  r'custom_call_target="(__cudnn\$fmha\w*)".*?backend_config=(\{.*\})$',
  re.M,
)


def _calls(text: str) -> dict[str, tuple[tuple[str, ...], dict]]:
  """target -> (its first three operands' names, its fmha backend config),
  read from optimized HLO text."""
  return {
    m[4]: ((m[1], m[2], m[3]), json.loads(m[5])["cudnn_fmha_backend_config"])
    for m in _CALL_RE.finditer(text)
  }


class ForwardTest(parameterized.TestCase):
  @parameterized.named_parameters(
    (f"{t}_{tag}", t, r) for t in ("a100", "h100") for tag, r in _RELEASES
  )
  def test_one_site_with_its_fate_and_algorithm(self, target, jaxlib):
    rec = recorded.load(f"cudnn_attention_{target}_n2_bfloat16", jaxlib)
    (operands, config) = _calls(rec.optimized_hlo)[_FORWARD]
    self.assertEqual(operands, ("q.1", "k.1", "v.1"))
    self.assertEqual(config["algorithm"]["math_type"], "TENSOR_OP_MATH")
    self.assertEqual(
      config["intermediate_tensor_shape"]["element_type"], "BF16"
    )
    (f,) = recorded.fates(rec)
    self.assertEqual(f.site.op, _FORWARD)
    self.assertEqual(f.fate, Fate.CUDNN_ATTENTION)
    self.assertEqual(f.fate.value, "cuDNN fused attention")
    self.assertEqual(f.custom_call_target, _FORWARD)
    self.assertEqual(f.carriers[-1], "dot_product_attention_fwd.4")
    # q k^T over the head dim (64) of bf16[2, 128, 4, 64] q and k.
    self.assertEqual(
      (str(f.site.lhs), str(f.site.rhs)), ("bf16[2,128,4,64]",) * 2
    )
    self.assertEqual(f.site.contracting_size, 64)
    self.assertEqual(f.effective_algorithm, "BF16_BF16_F32")
    self.assertEqual(f.algorithm_source, "rule")
    self.assertIn("math_type TENSOR_OP_MATH", f.algorithm_evidence)
    self.assertIn("intermediate BF16", f.algorithm_evidence)
    self.assertRegex(f.site.location, r"issue_cases\.py:\d+$")


class BackwardTest(parameterized.TestCase):
  @parameterized.named_parameters(*_RELEASES)
  def test_forward_and_backward_are_two_sites(self, jaxlib):
    rec = recorded.load("cudnn_attention_grad_h100_n2_bfloat16", jaxlib)
    self.assertEqual(set(_calls(rec.optimized_hlo)), {_FORWARD, _BACKWARD})
    fates = recorded.fates(rec)
    self.assertEqual(
      [(f.site.index, f.custom_call_target) for f in fates],
      [(0, _FORWARD), (1, _BACKWARD)],
    )
    self.assertEqual([f.fate for f in fates], [Fate.CUDNN_ATTENTION] * 2)
    self.assertEqual(
      [f.effective_algorithm for f in fates], ["BF16_BF16_F32"] * 2
    )
    # Each site took its own call, not the other's (same q, k and shapes).
    self.assertEqual(
      [f.carriers[-1].split(".")[0] for f in fates],
      ["dot_product_attention_fwd", "dot_product_attention_bwd"],
    )

  @parameterized.named_parameters(*_RELEASES)
  def test_no_pass_is_named(self, jaxlib):
    # The calls are jax's own, in the module XLA starts from: a pass dump
    # that still holds them attributes no rewrite to any pass.
    rec = recorded.load("cudnn_attention_grad_h100_n2_bfloat16", jaxlib)
    sites = parse_stablehlo_dots(rec.stablehlo)
    dumps = [
      ("module_0001.jit_f.0001.simp.after_algsimp.txt", rec.optimized_hlo)
    ]
    self.assertEqual(attribute_passes(dumps, sites), {})


class AttentionBlockTest(parameterized.TestCase):
  @parameterized.named_parameters(*_RELEASES)
  def test_merged_projections_then_attention_then_output(self, jaxlib):
    # x @ wq, x @ wk, x @ wv (sites 0-2), attention (3), @ wo (4). In the
    # optimized HLO the fmha call reads bitcasts (slices of one merged
    # gemm), not the parameters: its q and k depend on x and all three
    # weights, more than the site's own {x, wq} and {x, wk}.
    rec = recorded.load("attention_block_h100_n2_bfloat16", jaxlib)
    (operands, _) = _calls(rec.optimized_hlo)[_FORWARD]
    self.assertTrue(all(o.startswith("bitcast") for o in operands), operands)
    fates = recorded.fates(rec)
    self.assertEqual(
      [(f.site.op, f.fate) for f in fates],
      [("dot_general", Fate.TRITON_GEMM)] * 3
      + [(_FORWARD, Fate.CUDNN_ATTENTION), ("dot_general", Fate.TRITON_GEMM)],
    )
    self.assertEqual(fates[0].merged_with, (1, 2))
    self.assertEqual(fates[3].carriers[-1], "dot_product_attention_fwd.4")


class PlantedTest(absltest.TestCase):
  def test_a_missing_call_is_gone(self):
    rec = recorded.load("cudnn_attention_h100_n2_bfloat16")
    planted = lambda t: t.replace(_FORWARD, "__planted$call")
    (f,) = recorded.fates(rec, edit_hlo=planted)
    self.assertNotEqual(f.fate, Fate.CUDNN_ATTENTION)
    self.assertIsNone(f.effective_algorithm)

  def test_a_dot_of_q_and_k_does_not_take_the_call(self):
    # A StableHLO dot over q and k (the site's operands) must not be mapped
    # to the fused attention call, nor the attention site to a dot.
    rec = recorded.load("cudnn_attention_h100_n2_bfloat16")
    (site,) = parse_stablehlo_dots(rec.stablehlo)
    module = parse_hlo_module(rec.optimized_hlo)
    dot = dataclasses.replace(site, op="dot_general")
    (mapped,) = map_dot_sites([dot], module)
    self.assertNotEqual(mapped.fate, Fate.CUDNN_ATTENTION)


class ExecutorTest(absltest.TestCase):
  def test_the_numpy_executor_names_the_call_not_executed(self):
    # hloprobe/execute has no model of cuDNN attention: it says so.
    rec = recorded.load("cudnn_attention_h100_n2_bfloat16")
    module = parse_hlo_module(rec.optimized_hlo)
    qkv = [np.zeros((2, 128, 4, 64), ml_dtypes.bfloat16)] * 3
    run = execute_module(module, qkv)
    self.assertIsNone(run.outputs)
    self.assertEqual(
      [(n.instruction, n.target) for n in run.not_executed],
      [("dot_product_attention_fwd.4", _FORWARD)],
    )


@absltest.skipUnless(
  importlib.util.find_spec("model_explorer") is not None,
  "needs Model Explorer (the `explorer` extra, which make installs)",
)
class ModelExplorerTest(absltest.TestCase):
  def test_the_site_maps_to_the_adapters_custom_call_node(self):
    from hloprobe.pictures import model_explorer

    rec = recorded.load("cudnn_attention_grad_h100_n2_bfloat16")
    path = self.create_tempfile("m.mlir", content=rec.stablehlo).full_path
    nodes = model_explorer.adapter_dot_nodes(path)
    # The adapter's own nodes (the authority): its two fmha custom calls.
    self.assertEqual(
      [n["label"] for n in nodes["main"]], ["stablehlo.custom_call"] * 2
    )
    refs = model_explorer.map_sites(recorded.fates(rec), nodes)
    self.assertEqual(
      {i: r.node for i, r in refs.items()},
      {i: str(n["id"]) for i, n in enumerate(nodes["main"])},
    )


class RuleTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("bf16", "bf16", "BF16_BF16_F32"),
    ("f16", "f16", "F16_F16_F32"),
    ("fp8", "f8e4m3fn", None),
    ("f32", "f32", None),
  )
  def test_cudnn_rule(self, dtype, expected):
    algorithm, evidence = cudnn_attention_algorithm(dtype, None)
    self.assertEqual(algorithm, expected)
    self.assertIn(dtype, evidence)


if __name__ == "__main__":
  absltest.main()
