"""Tests of hloprobe.numerics.emulate and .jaxpr_sites on real cases."""

from __future__ import annotations

import jax
import jax.extend.core as jex
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import absltest, parameterized
from jax import lax

from hloprobe.compile import cases, lowering, targets
from hloprobe.errors import EmulationError, InvalidArgumentError
from hloprobe.ir.stablehlo import parse_stablehlo_dots
from hloprobe.numerics import emulate, reference

# Asserts CPU-computed floats: `make test-isa` reruns it under other ISAs.
pytestmark = [pytest.mark.cpu_numerics, pytest.mark.compiles]

_TF32, _F32 = "TF32_TF32_F32", "F32_F32_F32"
_W = [np.full(s, 0.5, np.float32) for s in [(3, 4), (4, 5), (3, 3)]]
_X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)


@jax.jit
def _linear(a, w):
  return a @ w


@jax.jit
def _with_dead_dot(a, w):
  del_me = a @ w[:, :2]  # noqa: F841 (dead: the lowering drops it)
  return a @ w


@jax.custom_jvp
def _custom_jvp(a, w):
  return a @ w


_custom_jvp.defjvp(lambda p, t: (_custom_jvp(*p), t[0] @ p[1]))


@jax.custom_vjp
def _custom_vjp(a, w):
  return jnp.tanh(a @ w)


_custom_vjp.defvjp(
  lambda a, w: (_custom_vjp(a, w), (a, w)),
  lambda r, g: (g @ r[1].T, r[0].T @ g),
)


def _scan(unroll=1, length=4, ys=False):
  def body(c, w):
    return c @ _W[2] + w, (c @ _W[0] if ys else None)

  return lambda x: lax.scan(body, x, jnp.ones((length, 3)), unroll=unroll)[0]


# Programs whose dot sites exercise the numbering rules of jaxpr_sites.
_PROGRAMS = {
  "nested_jit_twice": lambda x: _linear(_linear(x, _W[0]), _W[1]),
  "dead_top_level_dot": lambda x: (x @ _W[0], x @ _W[2])[0],
  "dead_dot_in_jit": lambda x: _with_dead_dot(x, _W[0]),
  "custom_jvp": lambda x: _custom_jvp(x, _W[0]),
  "custom_vjp": lambda x: _custom_vjp(x, _W[0]),
  "grad_through_custom_vjp": jax.grad(lambda x: jnp.sum(_custom_vjp(x, _W[0]))),
  "scan": _scan(),
  "scan_dead_ys": _scan(ys=True),
  "scan_unroll_2_of_5": _scan(unroll=2, length=5),
  "scan_full_unroll": _scan(unroll=True, length=3),
  "fori_loop": lambda x: lax.fori_loop(0, 3, lambda i, c: c @ _W[2], x),
  "while_with_dead_body_dot": lambda x: lax.while_loop(
    lambda c: c[1] < 3,
    lambda c: (c[0] @ _W[2], c[1] + 1, c[0] @ _W[0]),
    (x, 0, x @ _W[0]),
  )[0],
  "while_dot_in_cond": lambda x: lax.while_loop(
    lambda c: jnp.sum(c @ _W[0]) < 50.0, lambda c: c @ _W[2] + 1.0, x
  ),
  "cond": lambda x: lax.cond(
    x.sum() > 0, lambda t: t @ _W[2], lambda t: t @ _W[0] @ _W[0].T, x
  ),
  "switch_dead_output": lambda x: lax.switch(
    (x[0, 0] < 0).astype(jnp.int32),
    [lambda t: (t @ _W[2], t @ _W[0]), lambda t: (t, 2 * t @ _W[0])],
    x,
  )[0],
  "checkpoint": lambda x: jax.checkpoint(lambda t: jnp.sin(t @ _W[0]) @ _W[1])(
    x
  ),
  "grad": jax.grad(lambda x: jnp.sum(jnp.sin(x @ _W[0]) @ _W[1])),
  "vmap_einsum": jax.vmap(lambda r: jnp.einsum("i,ij,jk->k", r, _W[0], _W[1])),
}


def _all_dots(jaxpr) -> list:
  """Every dot_general eqn of a jaxpr, nested ones included, live or not."""
  found = [e for e in jaxpr.eqns if e.primitive.name == "dot_general"]
  for e in jaxpr.eqns:
    for sub in jex.jaxprs_in_params(e.params):
      found += _all_dots(sub)
  return found


def _compiled(fn, args):
  case = cases.Case("test", "test program", fn, lambda: args)
  return lowering.compile_case(case, args, "float32", targets.get_target("cpu"))


def _shapes(sites):
  return [(tuple(s.lhs.shape), tuple(s.rhs.shape)) for s in sites]


def _stablehlo_shapes(compiled):
  return [
    (d.lhs.dims, d.rhs.dims) for d in parse_stablehlo_dots(compiled.stablehlo)
  ]


@pytest.mark.release_rules
class SiteNumberingTest(parameterized.TestCase):
  @parameterized.named_parameters(*_PROGRAMS.items())
  def test_sites_match_stablehlo_and_f32_matches_cpu(self, fn):
    compiled = _compiled(fn, (_X,))
    sites = emulate.jaxpr_sites(fn, (_X,))
    self.assertNotEmpty(sites)
    self.assertEqual(_shapes(sites), _stablehlo_shapes(compiled))
    (observed,), _ = compiled.run((_X,))
    predicted = emulate.emulate_case(fn, (_X,), _F32)
    np.testing.assert_allclose(predicted, observed, rtol=1e-6, atol=1e-6)

  @parameterized.parameters(
    "dead_top_level_dot",
    "dead_dot_in_jit",
    "scan_dead_ys",
    "switch_dead_output",
    "grad_through_custom_vjp",
  )
  def test_dead_dots_are_not_sites(self, name):
    # Without jax's DCE rules these programs would number more sites than
    # their StableHLO has (the test above compares the two).
    fn = _PROGRAMS[name]
    traced = len(_all_dots(jax.make_jaxpr(fn)(_X).jaxpr))
    self.assertLess(emulate.count_sites(fn, (_X,)), traced)

  def test_scan_copies_are_numbered_apart(self):
    fn = _PROGRAMS["scan_unroll_2_of_5"]  # 2 copies in the loop + 1 after it
    self.assertEqual(emulate.count_sites(fn, (_X,)), 3)
    self.assertEqual(
      [s.path for s in emulate.jaxpr_sites(fn, (_X,))], ["scan"] * 3
    )
    emulate.emulate_case(fn, (_X,), [_TF32] * 3)
    with self.assertRaisesRegex(EmulationError, "unroll=2 has 3 copies"):
      emulate.emulate_case(fn, (_X,), [_TF32, _F32, _TF32])

  def test_paths_name_the_enclosing_primitives(self):
    paths = [s.path for s in emulate.jaxpr_sites(_PROGRAMS["cond"], (_X,))]
    self.assertEqual(paths, ["cond[0]", "cond[0]", "cond[1]"])
    paths = [
      s.path for s in emulate.jaxpr_sites(_PROGRAMS["nested_jit_twice"], (_X,))
    ]
    self.assertEqual(paths, ["jit(_linear)", "jit(_linear)"])


class SeedCaseTest(absltest.TestCase):
  """The reporter's MLP: TF32 at the three hidden layers on an A100."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.case = cases.seed_mlp
    cls.args = cls.case.inputs_for(cls.case.make_inputs(), 2)
    (cls.ref,) = reference.float64_reference(cls.case, cls.args)

  def _row0_error(self, algorithms, **kwargs) -> float:
    out = emulate.emulate_case(self.case.fn, self.args, algorithms, **kwargs)
    return abs(float(out[0]) - float(self.ref[0]))

  def test_sites_match_stablehlo(self):
    compiled = _compiled(self.case.fn, self.args)
    sites = emulate.jaxpr_sites(self.case.fn, self.args)
    self.assertEqual(emulate.count_sites(self.case.fn, self.args), 4)
    self.assertEqual(_shapes(sites), _stablehlo_shapes(compiled))

  def test_tf32_hidden_layers_give_the_reported_error(self):
    # Our numpy emulation of TF32 gave 0.61; measured 0.6100 (rna and rne).
    for rounding in ("rna", "rne"):
      got = self._row0_error([_TF32] * 3 + [_F32], tf32_rounding=rounding)
      self.assertBetween(got, 0.58, 0.64)

  def test_f32_stays_near_the_noise_floor(self):
    # Measured 1.06e-4 (AVX-512; the f32 sum order is the CPU's): this
    # network amplifies f32 rounding too, but far less than TF32's 0.61.
    f32 = self._row0_error([_F32] * 4)
    self.assertGreater(f32, 0.0)
    self.assertLess(f32, self._row0_error([_TF32] * 3 + [_F32]) / 100)

  def test_order_spread_is_f32_sized(self):
    spread = emulate.order_spread(self.case.fn, self.args, _F32)
    self.assertEqual(tuple(spread.outputs), emulate.SUMMATION_ORDERS)
    self.assertEqual(spread.spread_abs.shape, (2,))
    # Measured 1.24e-4 (AVX-512): nonzero, far below the 0.61 of TF32.
    self.assertGreater(spread.max_spread_abs, 0.0)
    self.assertLess(
      spread.max_spread_abs, self._row0_error([_TF32] * 3 + [_F32]) / 100
    )


class Jax11628Test(absltest.TestCase):
  """jacrev of a 100x1000 linear map: one GEMM, exact but for TF32."""

  def test_jacobian_error_is_tf32_rounding_of_m(self):
    g = np.random.default_rng(11628)
    mat = g.standard_normal((100, 1000)).astype(np.float32)
    x = g.standard_normal((1000,)).astype(np.float32)
    fn = lambda m, v: jax.jacrev(lambda u: m @ u)(v)
    sites = emulate.jaxpr_sites(fn, (mat, x))
    # The forward matvec is dead; the GEMM is identity(100) @ M.
    self.assertEqual(_shapes(sites), [((100, 100), (100, 1000))])
    jac = emulate.emulate_case(fn, (mat, x), _TF32)
    # Reported 2.09e-4 on an A100; README emulation 2.07e-4; measured 2.070e-4.
    self.assertBetween(float(np.std(jac - mat)), 2.03e-4, 2.11e-4)
    self.assertLessEqual(float(np.max(np.abs(jac - mat) / np.abs(mat))), 2**-11)
    np.testing.assert_array_equal(emulate.emulate_case(fn, (mat, x), _F32), mat)


class ErrorTest(absltest.TestCase):
  def test_unsupported_primitive_is_named(self):
    def solve(b):
      return lax.custom_linear_solve(
        lambda v: _W[2] @ v, b, solve=lambda mv, r: r / 2.0
      )

    with self.assertRaisesRegex(EmulationError, "'custom_linear_solve'"):
      emulate.count_sites(solve, (np.ones(3, np.float32),))

  def test_site_count_must_match(self):
    with self.assertRaisesRegex(EmulationError, "3 site algorithms .* 2 dot"):
      emulate.make_emulator(_PROGRAMS["nested_jit_twice"], (_X,), [_F32] * 3)

  def test_unknown_names(self):
    fn = _PROGRAMS["nested_jit_twice"]
    with self.assertRaisesRegex(InvalidArgumentError, r"\['TF16'\]"):
      emulate.make_emulator(fn, (_X,), "TF16")
    with self.assertRaisesRegex(InvalidArgumentError, "'random'"):
      emulate.make_emulator(fn, (_X,), _F32, order="random")
    # rounding.ROUNDING_MODES: 'rna', 'rne', 'rz'; 'ru' (toward +inf) is
    # no TF32 rounding a kernel hloprobe reads uses.
    with self.assertRaisesRegex(InvalidArgumentError, "'ru'"):
      emulate.make_emulator(fn, (_X,), _F32, tf32_rounding="ru")

  def test_emulator_checks_argument_shapes(self):
    emulator = emulate.make_emulator(_PROGRAMS["grad"], (_X,), _F32)
    with self.assertRaisesRegex(
      InvalidArgumentError, "one emulator per batch size"
    ):
      emulator(_X[:1])

  def test_f64_sites_need_x64(self):
    fn = _PROGRAMS["nested_jit_twice"]
    with self.assertRaisesRegex(EmulationError, "enable_x64"):
      emulate.emulate_case(fn, (_X,), "F64_F64_F64")
    with jax.enable_x64(True):
      got = emulate.emulate_case(fn, (_X,), "F64_F64_F64")
    # Each site sums in f64 and returns the case's f32.
    inner = (_X.astype(np.float64) @ _W[0]).astype(np.float32)
    want = (inner.astype(np.float64) @ _W[1]).astype(np.float32)
    self.assertEqual(got.dtype, np.float32)
    np.testing.assert_array_equal(got, want)


if __name__ == "__main__":
  absltest.main()
