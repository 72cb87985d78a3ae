"""`sort` and `scatter` in the executor against numpy: jax's own
comparators and combiners (recorded unoptimized HLO) and hand-written
ones."""

from __future__ import annotations

import os

import numpy as np
from absl.testing import absltest

from hloprobe.execute import execute_module
from hloprobe.ir import parse_hlo_module

_TESTDATA = os.path.join(os.path.dirname(__file__), "testdata")
# record_unoptimized.py's SORT_INPUT and SCATTER_INDICES.
_X = np.array([[3, -1, np.nan, 0.0, -0.0, 2], [1, 1, -5, 7, 2, 1]], np.float32)
_I = np.array([4, 0, 1, 4, 5], np.int32)


def _recorded(name: str, *args):
  with open(os.path.join(_TESTDATA, name), encoding="utf-8") as f:
    run = execute_module(parse_hlo_module(f.read()), list(args))
  assert not run.not_executed, run.not_executed
  return run.outputs[0]


class SortTest(absltest.TestCase):
  def test_jax_argsort_total_order_and_stability(self):
    # jax's comparator canonicalises -0 to 0 and nan to +nan, then
    # compares in total order: numpy's stable argsort orders them alike.
    out = _recorded("argsort.unoptimized.hlo", _X)
    np.testing.assert_array_equal(out, np.argsort(_X, axis=1, kind="stable"))

  def test_two_operands_descending(self):
    text = """HloModule m, entry_computation_layout={(s32[5]{0}, f32[5]{0})->f32[5]{0}}

%greater (a: s32[], b: s32[], c: f32[], d: f32[]) -> pred[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  %c = f32[] parameter(2)
  %d = f32[] parameter(3)
  ROOT %gt = pred[] compare(%a, %b), direction=GT
}

ENTRY %main (k: s32[5], v: f32[5]) -> f32[5] {
  %k = s32[5]{0} parameter(0)
  %v = f32[5]{0} parameter(1)
  %s = (s32[5]{0}, f32[5]{0}) sort(%k, %v), dimensions={0}, is_stable=true, to_apply=%greater
  ROOT %sv = f32[5]{0} get-tuple-element(%s), index=1
}
"""
    keys = np.array([2, 9, 2, 5, 9], np.int32)
    values = np.arange(5, dtype=np.float32)
    run = execute_module(parse_hlo_module(text), [keys, values])
    order = np.argsort(-keys, kind="stable")
    np.testing.assert_array_equal(run.outputs[0], values[order])


class ScatterTest(absltest.TestCase):
  def test_jax_scatter_add_repeats_indices(self):
    out = _recorded("scatter_add.unoptimized.hlo", _X, _I)
    want = _X.astype(np.float64).copy()
    np.add.at(want, (slice(None), _I), 1.0)
    np.testing.assert_array_equal(out, want)

  def test_out_of_bounds_windows_are_skipped_and_combiner_runs(self):
    text = """HloModule m, entry_computation_layout={(f32[4,2]{1,0}, s32[3,1]{1,0}, f32[3,2]{1,0})->f32[4,2]{1,0}}

%keep_larger_twice (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  %two = f32[] constant(2)
  %yy = f32[] multiply(%y, %two)
  ROOT %m = f32[] maximum(%x, %yy)
}

ENTRY %main (p: f32[4,2], i: s32[3,1], u: f32[3,2]) -> f32[4,2] {
  %p = f32[4,2]{1,0} parameter(0)
  %i = s32[3,1]{1,0} parameter(1)
  %u = f32[3,2]{1,0} parameter(2)
  ROOT %s = f32[4,2]{1,0} scatter(%p, %i, %u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%keep_larger_twice
}
"""
    p = np.zeros((4, 2), np.float32)
    i = np.array([[1], [7], [3]], np.int32)
    u = np.array([[1, -1], [5, 5], [2, 3]], np.float32)
    run = execute_module(parse_hlo_module(text), [p, i, u])
    # Row 7 is outside the operand: that update is skipped.
    want = [[0, 0], [2, 0], [0, 0], [4, 6]]
    np.testing.assert_array_equal(run.outputs[0], want)


if __name__ == "__main__":
  absltest.main()
