"""Tests of StableHLO dot-site extraction, on real lowerings."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest, parameterized

from hloprobe.compile import cases, lowering, targets
from hloprobe.errors import HloParseError
from hloprobe.ir.stablehlo import parse_stablehlo_dots


def _seed_sites(precision: str, n: int = 2):
  case = cases.get_case("seed_mlp")
  args = case.inputs_for(case.make_inputs(), n)
  compiled = lowering.compile_case(
    case, args, precision, targets.get_target("cpu")
  )
  return parse_stablehlo_dots(compiled.stablehlo)


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

  def test_algorithm_preset(self):
    sites = _seed_sites("BF16_BF16_F32_X3")
    self.assertEqual(sites[0].algorithm["num_primitive_operations"], "3")

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
    with self.assertRaisesRegex(HloParseError, "not closed"):
      parse_stablehlo_dots(
        "module {\n  func.func public @main(%arg0: tensor<2xf32>) {\n"
      )


if __name__ == "__main__":
  absltest.main()


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
