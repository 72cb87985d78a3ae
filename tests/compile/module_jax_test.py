"""The HLO-to-jax.lax translation computes what the module computes.

The independent source is hloprobe's numpy executor (`hloprobe.execute`,
which shares nothing with JAX or XLA:CPU): each module below, written by
hand to use the opcodes a before_optimizations dump holds (shape ops,
compare/select, reduce with its computation, while, conditional, gather,
a sharding annotation, a dot and a convolution), is run by both on the same arguments, in float64, and
must agree to float64 rounding. The translation's jaxpr must have one
contraction per HLO dot/convolution, with `precision=None`.
"""

from __future__ import annotations

import textwrap

import jax
import numpy as np
import pytest
from absl.testing import absltest, parameterized

from hloprobe.compile.module_jax import contraction_count, module_function
from hloprobe.errors import CaseError
from hloprobe.execute import execute_module
from hloprobe.ir import parse_hlo_module

pytestmark = pytest.mark.compiles

_SHAPES = textwrap.dedent("""
  HloModule shapes, entry_computation_layout={(f64[4,6]{1,0}, f64[6]{0})->(f64[3,8]{1,0}, f64[4]{0})}

  max_f64 {
    a = f64[] parameter(0)
    b = f64[] parameter(1)
    ROOT m = f64[] maximum(a, b)
  }

  ENTRY main {
    x = f64[4,6]{1,0} parameter(0)
    v = f64[6]{0} parameter(1)
    b = f64[4,6]{1,0} broadcast(v), dimensions={1}
    s = f64[4,6]{1,0} subtract(x, b)
    t = f64[6,4]{0,1} transpose(s), dimensions={1,0}
    sl = f64[3,4]{1,0} slice(t), slice={[1:6:2], [0:4]}
    z = f64[] constant(0.5)
    p = f64[3,8]{1,0} pad(sl, z), padding=0_0x2_2
    i = s32[3,8]{1,0} iota(), iota_dimension=1
    f = f64[3,8]{1,0} convert(i)
    c = pred[3,8]{1,0} compare(p, f), direction=GT
    sel = f64[3,8]{1,0} select(c, p, f)
    e = f64[3,8]{1,0} exponential(sel)
    r = f64[3,8]{1,0} reverse(e), dimensions={1}
    ninf = f64[] constant(-inf)
    red = f64[4]{0} reduce(x, ninf), dimensions={1}, to_apply=max_f64
    ROOT out = (f64[3,8]{1,0}, f64[4]{0}) tuple(r, red)
  }
""")
_CONTROL = textwrap.dedent("""
  HloModule control, entry_computation_layout={(f64[3,3]{1,0}, f64[3]{0})->f64[3]{0}}

  cond {
    st = (s32[], f64[3]{0}, f64[3,3]{1,0}) parameter(0)
    k = s32[] get-tuple-element(st), index=0
    three = s32[] constant(3)
    ROOT lt = pred[] compare(k, three), direction=LT
  }

  body {
    st = (s32[], f64[3]{0}, f64[3,3]{1,0}) parameter(0)
    k = s32[] get-tuple-element(st), index=0
    y = f64[3]{0} get-tuple-element(st), index=1
    m = f64[3,3]{1,0} get-tuple-element(st), index=2
    d = f64[3]{0} dot(m, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
    t = f64[3]{0} tanh(d)
    one = s32[] constant(1)
    k1 = s32[] add(k, one)
    ROOT out = (s32[], f64[3]{0}, f64[3,3]{1,0}) tuple(k1, t, m)
  }

  neg {
    a = f64[3]{0} parameter(0)
    ROOT n = f64[3]{0} negate(a)
  }

  same {
    ROOT a = f64[3]{0} parameter(0)
  }

  ENTRY main {
    m = f64[3,3]{1,0} parameter(0)
    y = f64[3]{0} parameter(1)
    zero = s32[] constant(0)
    st = (s32[], f64[3]{0}, f64[3,3]{1,0}) tuple(zero, y, m)
    w = (s32[], f64[3]{0}, f64[3,3]{1,0}) while(st), condition=cond, body=body
    r = f64[3]{0} get-tuple-element(w), index=1
    p = pred[] constant(true)
    ROOT c = f64[3]{0} conditional(p, r, r), true_computation=neg, false_computation=same
  }
""")
_CONV = textwrap.dedent("""
  HloModule conv, entry_computation_layout={(f64[2,5,5,3]{3,2,1,0}, f64[3,3,3,4]{3,2,1,0})->f64[2,3,5,4]{3,2,1,0}}

  ENTRY main {
    x = f64[2,5,5,3]{3,2,1,0} parameter(0)
    k = f64[3,3,3,4]{3,2,1,0} parameter(1)
    ROOT c = f64[2,3,5,4]{3,2,1,0} convolution(x, k), window={size=3x3 stride=2x1 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  }
""")

# jnp.take's gather (jax 0.12.0.1's lowering), the index vector implicit
# in one and explicit in the other, behind a `Sharding` annotation.
_GATHER = textwrap.dedent("""
  HloModule gather, entry_computation_layout={(f64[5,3]{1,0}, s32[2]{0}, s32[2,1]{1,0})->(f64[2,3]{1,0}, f64[2,3]{1,0})}

  ENTRY main {
    x = f64[5,3]{1,0} parameter(0)
    s = f64[5,3]{1,0} custom-call(x), custom_call_target="Sharding", sharding={replicated}
    i = s32[2]{0} parameter(1)
    j = s32[2,1]{1,0} parameter(2)
    a = f64[2,3]{1,0} gather(s, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
    b = f64[2,3]{1,0} gather(x, j), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
    ROOT out = (f64[2,3]{1,0}, f64[2,3]{1,0}) tuple(a, b)
  }
""")

# `x.at[i].add(u)`, a 2x2 max pool ("SAME") and `x.at[i].set(u)` as jax
# 0.12.0.1 lowers them (f64, JAX_ENABLE_X64=1).
_SCATTER = textwrap.dedent("""
  HloModule jit_f, entry_computation_layout={(f64[5,3]{1,0}, s32[2]{0}, f64[2,3]{1,0})->(f64[5,3]{1,0}, f64[5,3]{1,0}, f64[5,3]{1,0})}
  region_0.1 {
    scatter-add.2 = f64[] parameter(0)
    scatter-add.3 = f64[] parameter(1)
    ROOT add.2 = f64[] add(scatter-add.2, scatter-add.3)
  }
  region_1.2 {
    reduce_window_max.3 = f64[] parameter(0)
    reduce_window_max.4 = f64[] parameter(1)
    ROOT reduce_window_max.5 = f64[] maximum(reduce_window_max.3, reduce_window_max.4)
  }
  region_2.3 {
    scatter.2 = f64[] parameter(0)
    ROOT scatter.3 = f64[] parameter(1)
  }
  ENTRY main.4 {
    x.1 = f64[5,3]{1,0} parameter(0)
    i.1 = s32[2]{0} parameter(1)
    constant.5 = s32[] constant(0)
    broadcast.3 = s32[2]{0} broadcast(constant.5), dimensions={}
    lt.2 = pred[2]{0} compare(i.1, broadcast.3), direction=LT
    constant.4 = s32[] constant(5)
    broadcast.2 = s32[2]{0} broadcast(constant.4), dimensions={}
    add.4 = s32[2]{0} add(i.1, broadcast.2)
    select_n.2 = s32[2]{0} select(lt.2, add.4, i.1)
    broadcast_in_dim.2 = s32[2,1]{1,0} reshape(select_n.2)
    u.1 = f64[2,3]{1,0} parameter(2)
    scatter-add.5 = f64[5,3]{1,0} scatter(x.1, broadcast_in_dim.2, u.1), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=region_0.1
    constant.3 = f64[] constant(-inf)
    reduce_window_max.7 = f64[5,3]{1,0} reduce-window(x.1, constant.3), window={size=2x2 pad=0_1x0_1}, to_apply=region_1.2
    lt.3 = pred[2]{0} compare(i.1, broadcast.3), direction=LT
    add.5 = s32[2]{0} add(i.1, broadcast.2)
    select_n.3 = s32[2]{0} select(lt.3, add.5, i.1)
    broadcast_in_dim.3 = s32[2,1]{1,0} reshape(select_n.3)
    scatter.5 = f64[5,3]{1,0} scatter(x.1, broadcast_in_dim.3, u.1), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=region_2.3
    ROOT tuple.1 = (f64[5,3]{1,0}, f64[5,3]{1,0}, f64[5,3]{1,0}) tuple(scatter-add.5, reduce_window_max.7, scatter.5)
  }
""")


def _arguments(module, seed: int = 0):
  """Standard normal floats, integers in [0, 4] (in range as indices)."""
  g = np.random.default_rng(seed)
  return tuple(
    g.standard_normal(p.shape.dims)
    if p.shape.dtype.startswith("f")
    else g.integers(0, 5, p.shape.dims).astype(np.int32)
    for _, p in sorted(module.entry.parameters().items())
  )


class TranslationTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("shapes", _SHAPES, 0),
    ("control", _CONTROL, 1),
    ("conv", _CONV, 1),
    ("gather", _GATHER, 0),
  )
  def test_agrees_with_the_numpy_executor(self, text, contractions):
    module = parse_hlo_module(text)
    args = _arguments(module)
    want = execute_module(module, args, widen=True)
    self.assertTrue(want.complete, want.not_executed)
    fn = module_function(module, "test.txt")
    with jax.enable_x64(True):
      got = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
      jaxpr = str(jax.make_jaxpr(fn)(*args))
    self.assertLen(got, len(want.outputs))
    for g, w in zip(got, want.outputs):
      np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)
    self.assertEqual(contraction_count(module), contractions)
    found = jaxpr.count("dot_general[") + jaxpr.count("conv_general_dilated[")
    self.assertEqual(found, contractions)
    self.assertNotIn("Precision.", jaxpr)

  def test_scatter_and_reduce_window(self):
    module = parse_hlo_module(_SCATTER)
    x, _, u = _arguments(module)
    args = (x, np.array([1, 3], np.int32), u)  # distinct: `set` is defined
    want = execute_module(module, args, widen=True)
    self.assertTrue(want.complete, want.not_executed)
    with jax.enable_x64(True):
      got = jax.jit(module_function(module, "test.txt"))(*args)
    for g, w in zip(got, want.outputs):
      np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)

  def test_custom_call_refused_by_name(self):
    module = parse_hlo_module(
      _CONV.replace(
        "convolution(x, k)", 'custom-call(x, k), custom_call_target="foo"'
      )
    )
    with self.assertRaisesRegex(CaseError, r"custom-call.*foo"):
      module_function(module, "test.txt")


if __name__ == "__main__":
  absltest.main()
