"""compile/int_dots.py: the integer-overflow fix applied to a whole case,
read from the fixed program's jaxpr (`jax.make_jaxpr`: no XLA compile).
Expected is JAX's documented fix (jax.lax.dot_general's
`preferred_element_type`): the int8 dot keeps its sums in int32, what
consumes it takes int32, and a float dot is left alone."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest

from hloprobe.compile import Case, int_dots


def _program(x, w, f):
  y = jnp.matmul(x, w)  # int8 x int8 -> int8: wraps
  return y + x[:, :1], f @ f


def _case() -> Case:
  def inputs():
    return (
      np.ones((4, 3), np.int8),
      np.ones((3, 5), np.int8),
      np.ones((2, 2), np.float32),
    )

  return Case(
    "ints", "an int8 matmul", _program, inputs, in_axes=(0, None, None)
  )


class Int32DotsCaseTest(absltest.TestCase):
  def test_narrow_dots_widened_float_dots_kept(self):
    fixed = int_dots.INT32_DOTS_FIX.fixed_case(_case())
    self.assertEqual(fixed.name, "ints+preferred_element_type=int32")
    args = _case().make_inputs()
    jaxpr = jax.make_jaxpr(fixed.fn)(*args)
    dots = [e for e in jaxpr.eqns if e.primitive.name == "dot_general"]
    self.assertEqual(
      [str(e.outvars[0].aval.dtype) for e in dots], ["int32", "float32"]
    )
    self.assertEqual(
      [str(v.aval.dtype) for v in jaxpr.jaxpr.outvars], ["int32", "float32"]
    )
    before = jax.make_jaxpr(_program)(*args)
    self.assertEqual(str(before.jaxpr.outvars[0].aval.dtype), "int8")


if __name__ == "__main__":
  absltest.main()
