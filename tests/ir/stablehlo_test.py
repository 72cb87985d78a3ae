"""Tests of StableHLO dot-site extraction, on real lowerings."""

from __future__ import annotations

import glob
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import testutil
from absl.testing import absltest, parameterized
from hypothesis import given, settings
from hypothesis import strategies as st

from hloprobe.compile import cases, lowering, targets
from hloprobe.errors import HloParseError
from hloprobe.ir.stablehlo import (
  TensorType,
  parse_precision_config,
  parse_stablehlo_dots,
)


def _seed_sites(precision: str, n: int = 2):
  case = cases.get_case("seed_mlp")
  args = case.inputs_for(case.make_inputs(), n)
  compiled = lowering.compile_case(
    case, args, precision, targets.get_target("cpu")
  )
  return parse_stablehlo_dots(compiled.stablehlo)


@pytest.mark.compiles
class SeedSitesTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("bfloat16", "bfloat16", ("DEFAULT", "DEFAULT")),
    ("tensorfloat32", "tensorfloat32", ("HIGH", "HIGH")),
    ("float32", "float32", ("HIGHEST", "HIGHEST")),
  )
  def test_precision_config(self, precision, expected):
    sites = _seed_sites(precision)
    self.assertLen(sites, 4)
    self.assertEqual({s.precision for s in sites}, {expected})
    self.assertEqual({s.algorithm for s in sites}, {None})
    self.assertEqual({s.algorithm_preset for s in sites}, {None})

  def test_algorithm_preset(self):
    sites = _seed_sites("BF16_BF16_F32_X3")
    self.assertEqual(sites[0].algorithm["num_primitive_operations"], "3")
    # The preset JAX lowered it from (jax.lax.DotAlgorithmPreset).
    self.assertEqual(sites[0].algorithm_preset, "BF16_BF16_F32_X3")

  def test_shapes_locations_and_ancestry(self):
    sites = _seed_sites("float32", n=2)
    self.assertEqual(
      [str(s.lhs) for s in sites],
      ["f32[48,2]", "f32[48,48]", "f32[48,48]", "f32[1,48]"],
    )
    self.assertEqual(
      [str(s.rhs) for s in sites], ["f32[2,2]"] + ["f32[2,48]"] * 3
    )
    self.assertEqual([s.contracting_size for s in sites], [2, 48, 48, 48])
    # Sites 0-2 are the loop's `W @ x`, site 3 the last layer: two lines.
    lines = [s.location.rsplit(":", 1) for s in sites]
    self.assertTrue(all(f.endswith("cases.py") for f, _ in lines))
    self.assertEqual(len({l for _, l in lines[:3]}), 1)
    self.assertNotEqual(lines[0][1], lines[3][1])
    # Weights are parameters 1..4; x is parameter 0.
    self.assertEqual([set(s.lhs_ancestry) for s in sites], [{1}, {2}, {3}, {4}])
    self.assertTrue(all(0 in s.rhs_ancestry for s in sites))


class CallPathTest(absltest.TestCase):
  def test_nested_jit_and_scan(self):
    """A jitted helper called in a scan and once more gives two sites."""

    def f(x, w):
      inner = jax.jit(lambda a: jnp.tanh(a @ w))
      c, _ = jax.lax.scan(lambda c, _: (inner(c), None), x, None, length=2)
      return inner(c).sum()

    text = (
      jax.jit(f)
      .trace(np.ones((3, 4), np.float32), np.ones((4, 4), np.float32))
      .lower()
      .as_text(debug_info=True)
    )
    sites = parse_stablehlo_dots(text)
    self.assertLen(sites, 2)
    self.assertEqual({s.location for s in sites}, {sites[0].location})
    self.assertIn(__file__.rsplit("/", 1)[-1], sites[0].location)

  def test_malformed(self):
    with self.assertRaisesRegex(HloParseError, "no @main"):
      parse_stablehlo_dots("module {\n}\n")
    with self.assertRaisesRegex(
      HloParseError, r"^\[hloprobe\] StableHLO does not parse: line 2:\d+: "
    ):
      parse_stablehlo_dots(
        "module {\n  func.func public @main(%arg0: tensor<2xf32>) {\n"
      )


class UnusualOpsTest(absltest.TestCase):
  def _sites(self, fn, *args):
    text = jax.jit(fn).trace(*args).lower().as_text(debug_info=True)
    return parse_stablehlo_dots(text)

  def test_custom_call_is_not_a_function_call(self):
    a = np.eye(4, dtype=np.float32) * 2
    sites = self._sites(
      lambda m, v: jnp.linalg.solve(m, v) @ m, a, np.ones((4, 4), np.float32)
    )
    self.assertLen(sites, 1)

  def test_complex_operands(self):
    x = np.ones((8, 4), np.complex64)
    (site,) = self._sites(lambda a, b: a @ b, x, x.T)
    self.assertEqual(
      (str(site.lhs), str(site.result)), ("c64[8,4]", "c64[8,8]")
    )

  def test_result_of_a_branch_depends_on_what_it_returns(self):
    fn = lambda p, x, w: jax.lax.cond(p[0] > 0, lambda a: a * 2, jnp.sin, x) @ w
    args = (
      np.ones(1, np.float32),
      np.ones((2, 3), np.float32),
      np.ones((3, 3), np.float32),
    )
    (site,) = self._sites(fn, *args)
    self.assertEqual(site.lhs_ancestry, frozenset({0, 1}))
    self.assertEqual(site.rhs_ancestry, frozenset({2}))


def _module(loc: str, attrs: str = "") -> str:
  """A hand-written one-dot module; `loc` is the dot's `loc(...)` body."""
  return (
    "module {\n"
    "  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>)"
    " -> tensor<2x4xf32> {\n"
    "    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0]"
    f"{attrs} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>"
    f" loc({loc})\n"
    "    return %0 : tensor<2x4xf32>\n"
    "  }\n"
    "}\n"
  )


class MlirFormsTest(parameterized.TestCase):
  """Forms MLIR prints that a line-by-line reading would have to know."""

  @parameterized.named_parameters(
    ("file", '"a.py":7:3', "a.py:7"),
    ("name", '"jit(f)/dot_general"("a.py":7:3 to :9)', "a.py:7"),
    ("callsite_innermost", 'callsite("a.py":7:3 at "b.py":9:1)', "a.py:7"),
    ("callsite_caller", 'callsite(unknown at "b.py":9:1)', "b.py:9"),
    ("fused", 'fused[unknown, "n"("a.py":7:3), "b.py":9:1]', "a.py:7"),
    ("unknown", "unknown", None),
  )
  def test_location_kinds(self, loc, expected):
    (site,) = parse_stablehlo_dots(_module(loc))
    self.assertEqual(site.location, expected)

  def test_alias_locations_as_jax_prints_them(self):
    text = _module("#loc3").replace(
      "module {",
      '#loc1 = loc("a.py":7:3)\n#loc2 = loc("b.py":9:1)\n'
      "#loc3 = loc(callsite(#loc1 at #loc2))\nmodule {",
    )
    (site,) = parse_stablehlo_dots(text)
    self.assertEqual(site.location, "a.py:7")

  def test_precision_config(self):
    (site,) = parse_stablehlo_dots(_module("unknown"))
    self.assertEqual((site.precision, site.algorithm), (("DEFAULT",) * 2, None))
    precision = ", precision = [HIGH, HIGHEST]"
    (site,) = parse_stablehlo_dots(_module("unknown", precision))
    self.assertEqual(site.precision, ("HIGH", "HIGHEST"))

  def test_algorithm_fields(self):
    algorithm = (
      ", precision = [DEFAULT, DEFAULT], algorithm = <lhs_precision_type = tf32,"
      " rhs_precision_type = tf32, accumulation_type = f32,"
      " lhs_component_count = 1, rhs_component_count = 1,"
      " num_primitive_operations = 3, allow_imprecise_accumulation = false>"
    )
    (site,) = parse_stablehlo_dots(_module("unknown", algorithm))
    self.assertEqual(
      site.algorithm,
      {
        "lhs_precision_type": "tf32",
        "rhs_precision_type": "tf32",
        "accumulation_type": "f32",
        "lhs_component_count": "1",
        "rhs_component_count": "1",
        "num_primitive_operations": "3",
        "allow_imprecise_accumulation": "false",
      },
    )

  def test_generic_form_reads_the_same(self):
    lowered = (
      jax.jit(lambda a, b: jnp.tanh(a @ b) @ b.T)
      .trace(np.ones((2, 3), np.float32), np.ones((3, 3), np.float32))
      .lower()
    )
    pretty = parse_stablehlo_dots(lowered.as_text(debug_info=True))
    generic = lowered.compiler_ir("stablehlo").operation.get_asm(
      print_generic_op_form=True, enable_debug_info=True
    )
    self.assertIn('"stablehlo.dot_general"', generic)
    self.assertEqual(parse_stablehlo_dots(generic), pretty)
    self.assertLen(pretty, 2)
    self.assertEqual(pretty[1].rhs, TensorType("f32", (3, 3)))

  def test_text_without_locations_has_none(self):
    (site,) = parse_stablehlo_dots(
      _module("unknown").replace(" loc(unknown)", "")
    )
    self.assertIsNone(site.location)

  def test_dynamic_shape_is_a_parse_error(self):
    text = _module("unknown").replace("tensor<2x3xf32>", "tensor<?x3xf32>")
    text = text.replace("tensor<2x4xf32>", "tensor<?x4xf32>")
    with self.assertRaisesRegex(HloParseError, "static-shaped"):
      parse_stablehlo_dots(text)


# Real StableHLO, target-independent: the seed's golden modules.
_GOLDEN_MLIR = sorted(
  glob.glob(
    os.path.join(testutil.ROOT, "golden", "**", "*.stablehlo.mlir"),
    recursive=True,
  )
)
# Characters that carry MLIR syntax, for replacements and insertions.
_SYNTAX = '%@#{}()<>[],:="x0123456789 \n-'


@st.composite
def _mutated(draw) -> str:
  with open(draw(st.sampled_from(_GOLDEN_MLIR)), encoding="utf-8") as f:
    text = f.read()
  for _ in range(draw(st.integers(1, 3))):
    i = draw(st.integers(0, len(text)))
    j = draw(st.integers(i, min(len(text), i + 40)))
    kind = draw(st.sampled_from(["delete", "replace", "insert", "repeat"]))
    if kind == "delete":
      text = text[:i] + text[j:]
    elif kind == "replace":
      text = text[:i] + draw(st.text(_SYNTAX, max_size=4)) + text[j:]
    elif kind == "insert":
      text = (
        text[:i] + draw(st.text(_SYNTAX, min_size=1, max_size=4)) + text[i:]
      )
    else:
      text = text[:j] + text[i:j] + text[j:]
  return text


class PrecisionConfigTextTest(absltest.TestCase):
  """`parse_precision_config`: the attribute as Model Explorer prints it."""

  def test_reads_each_operand_exactly(self):
    text = "[#stablehlo<precision HIGH>, #stablehlo<precision HIGHEST>]"
    self.assertEqual(parse_precision_config(text), ("HIGH", "HIGHEST"))
    self.assertEqual(parse_precision_config(None), ("DEFAULT", "DEFAULT"))

  def test_not_a_precision_config_is_an_error(self):
    for text in ("[1, 2]", "#stablehlo<precision HIGH>", "HIGH,"):
      with self.assertRaises(HloParseError, msg=text):
        parse_precision_config(text)


class FuzzTest(absltest.TestCase):
  def test_goldens_found(self):
    self.assertNotEmpty(_GOLDEN_MLIR)

  @settings(max_examples=300, deadline=None)
  @given(_mutated())
  def test_mutated_module_gives_sites_or_a_parse_error(self, text):
    try:
      sites = parse_stablehlo_dots(text)
    except HloParseError as e:
      self.assertNotIn("\n", str(e))
      return
    for s in sites:  # what parses gives records the later stages can use
      self.assertGreaterEqual(s.contracting_size, 0)


if __name__ == "__main__":
  absltest.main()
