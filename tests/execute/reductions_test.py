"""execute/reductions.py: `reduce` and `reduce-window` in the numpy
executor, on a module written here in HLO text (the syntax XLA prints:
`reduce(x, init), dimensions={1}, to_apply=%add`, `window={size=1x2}`).
Expected values are numpy's sums and maxima of the same array."""

from __future__ import annotations

import numpy as np
from absl.testing import absltest

from hloprobe.execute import execute_module, reductions
from hloprobe.ir import parse_hlo_module

_HLO = """HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%max (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %m = f32[] maximum(%c, %d)
}

ENTRY %main (x: f32[2,4]) -> (f32[2], f32[2,3], f32[4]) {
  %x = f32[2,4]{1,0} parameter(0)
  %z = f32[] constant(0)
  %lo = f32[] constant(-inf)
  %r = f32[2]{0} reduce(%x, %z), dimensions={1}, to_apply=%add
  %w = f32[2,3]{1,0} reduce-window(%x, %z), window={size=1x2}, to_apply=%add
  %m = f32[4]{0} reduce(%x, %lo), dimensions={0}, to_apply=%max
  ROOT %t = (f32[2]{0}, f32[2,3]{1,0}, f32[4]{0}) tuple(%r, %w, %m)
}
"""


class ReductionsTest(absltest.TestCase):
  def test_sums_windows_and_maxima_as_numpy(self):
    module = parse_hlo_module(_HLO)
    x = np.float32([[1, 2, 3, 4], [-5, 6, -7, 8]])
    run = execute_module(module, [x])
    self.assertTrue(run.complete, run.not_executed)
    total, windows, top = run.outputs
    np.testing.assert_array_equal(total, x.sum(axis=1))
    np.testing.assert_array_equal(windows, x[:, :-1] + x[:, 1:])
    np.testing.assert_array_equal(top, x.max(axis=0))

  def test_one_op_reducers_are_ufuncs(self):
    module = parse_hlo_module(_HLO)
    self.assertIs(reductions.fast_reducer(module.computations["add"]), np.add)
    self.assertIs(
      reductions.fast_reducer(module.computations["max"]), np.maximum
    )
    self.assertIsNone(reductions.fast_reducer(None))


if __name__ == "__main__":
  absltest.main()
