"""emulate_many: several site assignments in one compile, each as alone."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from absl.testing import absltest, parameterized

from hloprobe.compile import cases
from hloprobe.errors import EmulationError
from hloprobe.numerics import emulate

# Compiles with XLA (`make test-fast` skips it).
pytestmark = [pytest.mark.cpu_numerics, pytest.mark.compiles]

_T, _F, _B = "TF32_TF32_F32", "F32_F32_F32", "BF16_BF16_F32_X3"
_H = "BF16_BF16_F32"


class EmulateManyTest(absltest.TestCase):
  def test_same_bits_as_one_emulation_per_assignment(self):
    # The predictor's speed-up must not change a prediction: each output of
    # the shared compile equals the one-by-one emulation bit for bit (the
    # same ops on the same CPU, so this holds under any ISA).
    case = cases.get_case("seed_mlp")
    args = case.inputs_for(case.make_inputs(), 5)
    assignments = [(_T, _F, _F, _F), (_F, _T, _T, _F), (_B, _B, _B, _F), _F]
    together = emulate.emulate_many(case.fn, args, assignments)
    self.assertLen(together, len(assignments))
    for assignment, out in zip(assignments, together):
      alone = emulate.emulate_case(case.fn, args, assignment)
      (leaf,) = out
      np.testing.assert_array_equal(leaf, alone, err_msg=str(assignment))
    # and the assignments do differ, so the check can fail
    self.assertFalse(np.array_equal(together[0][0], together[3][0]))


class EmulateSwitchedTest(parameterized.TestCase):
  """One compile, each site's algorithm a run-time argument (issue 37):
  each output equals its own emulation's, bit for bit."""

  @parameterized.parameters(
    ("seed_mlp", 5, [(_T, _F, _F, _F), (_F, _T, _T, _F), (_H, _H, _T, _F), _F]),
    ("conv_net", 2, [_T, _F, _H, (_F, _T)]),
    ("scaled_dense", 2, [_T, _F, _H]),
  )
  def test_same_bits_as_one_emulation_per_assignment(
    self, name, n, assignments
  ):
    case = cases.get_case(name)
    args = case.inputs_for(case.make_inputs(), n)
    count = emulate.count_sites(case.fn, args)
    assignments = [
      a if isinstance(a, str) else (a + (_F,) * count)[:count]
      for a in assignments
    ]
    switched = emulate.emulate_switched(case.fn, args, assignments)
    self.assertLen(switched, len(assignments))
    for assignment, out in zip(assignments, switched):
      alone = emulate.emulate_case(case.fn, args, assignment)
      for got, want in zip(out, jax.tree_util.tree_leaves(alone), strict=True):
        np.testing.assert_array_equal(got, want, err_msg=str(assignment))
    self.assertFalse(
      all(np.array_equal(switched[0][0], o[0]) for o in switched[1:])
    )

  @parameterized.parameters(("seed_mlp", 3), ("conv_net", 1))
  def test_several_orders_one_compile_same_bits_as_each_alone(self, name, n):
    # Each call names its order; its outputs are those of that order's
    # own emulation (emulate_case), bit for bit, for every assignment:
    # the orders that sum in loops (emulation_cache._COMPILED_TOGETHER).
    case = cases.get_case(name)
    args = case.inputs_for(case.make_inputs(), n)
    count = emulate.count_sites(case.fn, args)
    orders = ("sequential", "blocked")
    choices = ((_F, _T, _H),) * count
    several = emulate.SwitchedEmulation(case.fn, args, choices, order=orders)
    leaves = jax.tree_util.tree_leaves(args)
    got = {}
    for order in orders:
      for assignment in ((_F,) * count, (_T,) * count, (_H, _T) * count):
        assignment = assignment[:count]
        out = several(assignment, leaves, order=order)
        want = emulate.emulate_case(case.fn, args, assignment, order=order)
        for a, b in zip(out, jax.tree_util.tree_leaves(want), strict=True):
          np.testing.assert_array_equal(a, b, err_msg=f"{order} {assignment}")
        got[order, assignment[0]] = out[0]
    # the orders do differ, so the check can fail
    self.assertFalse(np.array_equal(got["sequential", _F], got["blocked", _F]))
    with self.assertRaisesRegex(ValueError, "name one of the orders"):
      several((_F,) * count, leaves)
    with self.assertRaisesRegex(ValueError, "not among"):
      several((_F,) * count, leaves, order="xla")

  def test_splits_and_attention_are_not_switched(self):
    self.assertFalse(emulate.switchable([(_B, _F), (_F, _F)]))
    self.assertTrue(emulate.switchable([(_B, _F), (_B, _T)]))
    with self.assertRaisesRegex(EmulationError, "single-pass"):
      emulate.emulate_switched(
        lambda a, b: a @ b,
        (np.ones((2, 2), np.float32),) * 2,
        [(_B,), (_F,), (_T,)],
      )
    case = cases.get_case("cudnn_attention")
    args = case.inputs_for(case.make_inputs(), 1)
    count = emulate.count_sites(case.fn, args)
    with self.assertRaisesRegex(EmulationError, "attention site"):
      emulate.emulate_switched(case.fn, args, [(_H,) * count, (_F,) * count])

  def test_a_scan_whose_copies_differ_is_an_error(self):
    def f(x, w):
      def body(c, _):
        return c @ w, None

      return jax.lax.scan(body, x, None, length=2, unroll=2)[0]

    args = (np.ones((2, 3), np.float32), np.ones((3, 3), np.float32))
    count = emulate.count_sites(f, args)
    if count < 2:
      self.skipTest("this jax keeps one copy of an unrolled scan body")
    rest = (_F,) * (count - 2)
    # Each copy's site may be T or F (the same choices), but the third
    # assignment gives the copies different ones.
    with self.assertRaisesRegex(EmulationError, "different algorithms"):
      emulate.emulate_switched(
        f, args, [(_T, _T, *rest), (_F, _F, *rest), (_T, _F, *rest)]
      )


if __name__ == "__main__":
  absltest.main()
