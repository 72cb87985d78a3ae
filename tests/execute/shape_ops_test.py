"""Layouts, data movement, reductions and control flow in the executor,
on small hand-written modules checked against numpy (each expected value
derived by hand from the op's definition in XLA's operation semantics,
https://openxla.org/xla/operation_semantics)."""

from __future__ import annotations

import numpy as np
from absl.testing import absltest, parameterized

from hloprobe.execute import execute_module
from hloprobe.ir import parse_hlo_module


def _run(body: str, params: list[tuple[str, str]], out: str, *args):
  """Executes ENTRY `body` with parameters `params` (name, shape)."""
  heads = ", ".join(f"{n}: {s.split('{')[0]}" for n, s in params)
  decls = "\n".join(
    f"  %{n} = {s} parameter({i})" for i, (n, s) in enumerate(params)
  )
  layout = ", ".join(s for _, s in params)
  text = (
    f"HloModule m, entry_computation_layout={{({layout})->{out}}}\n\n"
    f"ENTRY %main ({heads}) -> {out.split('{')[0]} {{\n{decls}\n{body}\n}}\n"
  )
  run = execute_module(parse_hlo_module(text), list(args))
  assert not run.not_executed, run.not_executed
  return run.outputs[0]


def _run_module(text: str, *args):
  run = execute_module(parse_hlo_module(text), list(args))
  assert not run.not_executed, run.not_executed
  return run.outputs[0]


_P23 = np.arange(6, dtype=np.float32).reshape(2, 3)


class LayoutTest(parameterized.TestCase):
  def test_copy_to_column_major_then_bitcast_transposes(self):
    # The copy keeps the values; its {0,1} layout stores p column-major,
    # so reading those bytes as a row-major [3,2] gives p.T.
    out = _run(
      "  %c = f32[2,3]{0,1} copy(%p)\n  ROOT %b = f32[3,2]{1,0} bitcast(%c)",
      [("p", "f32[2,3]{1,0}")],
      "f32[3,2]{1,0}",
      _P23,
    )
    np.testing.assert_array_equal(out, _P23.T)

  def test_bitcast_of_column_major_parameter_flattens_fortran_order(self):
    out = _run(
      "  ROOT %b = f32[6]{0} bitcast(%p)",
      [("p", "f32[2,3]{0,1}")],
      "f32[6]{0}",
      _P23,
    )
    np.testing.assert_array_equal(out, [0, 3, 1, 4, 2, 5])

  def test_bitcast_between_permuted_layouts(self):
    # [2,3,4]{2,1,0} bytes read as [4,2,3]{0,2,1}: major-to-minor order
    # (1,2,0) of the result is (2,3,4) in memory, so r[k,i,j] = p[i,j,k].
    p = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    out = _run(
      "  ROOT %b = f32[4,2,3]{0,2,1} bitcast(%p)",
      [("p", "f32[2,3,4]{2,1,0}")],
      "f32[4,2,3]{0,2,1}",
      p,
    )
    np.testing.assert_array_equal(out, np.transpose(p, (2, 0, 1)))

  def test_transpose_is_logical_whatever_the_layout(self):
    out = _run(
      "  ROOT %t = f32[3,2]{0,1} transpose(%p), dimensions={1,0}",
      [("p", "f32[2,3]{1,0}")],
      "f32[3,2]{0,1}",
      _P23,
    )
    np.testing.assert_array_equal(out, _P23.T)


class DataMovementTest(absltest.TestCase):
  def test_broadcast_permuting_dimensions(self):
    out = _run(
      "  ROOT %b = f32[3,4,2]{2,1,0} broadcast(%p), dimensions={2,0}",
      [("p", "f32[2,3]{1,0}")],
      "f32[3,4,2]{2,1,0}",
      _P23,
    )
    want = np.broadcast_to(_P23.T[:, None, :], (3, 4, 2))
    np.testing.assert_array_equal(out, want)

  def test_pad_with_negative_edge_and_interior(self):
    p = np.array([1, 2, 3], np.float32)
    out = _run(
      "  %z = f32[] constant(9)\n"
      "  ROOT %q = f32[6]{0} pad(%p, %z), padding=-1_2_1",
      [("p", "f32[3]{0}")],
      "f32[6]{0}",
      p,
    )
    # interior: 1 9 2 9 3; low -1 drops the 1; high 2 appends 9 9.
    np.testing.assert_array_equal(out, [9, 2, 9, 3, 9, 9])

  def test_slice_concatenate_reverse(self):
    out = _run(
      "  %s = f32[2,2]{1,0} slice(%p), slice={[0:2], [0:3:2]}\n"
      "  %r = f32[2,2]{1,0} reverse(%s), dimensions={1}\n"
      "  ROOT %c = f32[2,4]{1,0} concatenate(%s, %r), dimensions={1}",
      [("p", "f32[2,3]{1,0}")],
      "f32[2,4]{1,0}",
      _P23,
    )
    np.testing.assert_array_equal(out, [[0, 2, 2, 0], [3, 5, 5, 3]])

  def test_dynamic_slice_clamps_and_update(self):
    p = np.arange(5, dtype=np.float32)
    out = _run(
      "  %i = s32[] constant(4)\n"
      "  %d = f32[2]{0} dynamic-slice(%p, %i), dynamic_slice_sizes={2}\n"
      "  %z = s32[] constant(0)\n"
      "  ROOT %u = f32[5]{0} dynamic-update-slice(%p, %d, %z)",
      [("p", "f32[5]{0}")],
      "f32[5]{0}",
      p,
    )
    # start 4 is clamped to 3: the slice is [3, 4], written at 0.
    np.testing.assert_array_equal(out, [3, 4, 2, 3, 4])

  def test_gather_rows(self):
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    rows = np.array([2, 0, 3], np.int32)
    out = _run(
      "  ROOT %g = f32[3,3]{1,0} gather(%t, %i), offset_dims={1}, "
      "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
      "slice_sizes={1,3}",
      [("t", "f32[4,3]{1,0}"), ("i", "s32[3]{0}")],
      "f32[3,3]{1,0}",
      table,
      rows,
    )
    np.testing.assert_array_equal(out, table[rows])

  def test_iota_and_select(self):
    out = _run(
      "  %i = s32[2,3]{1,0} iota(), iota_dimension=1\n"
      "  %one = s32[] constant(1)\n"
      "  %b = s32[2,3]{1,0} broadcast(%one), dimensions={}\n"
      "  %m = pred[2,3]{1,0} compare(%i, %b), direction=GE\n"
      "  %zero = f32[] constant(0)\n"
      "  %zs = f32[2,3]{1,0} broadcast(%zero), dimensions={}\n"
      "  ROOT %s = f32[2,3]{1,0} select(%m, %p, %zs)",
      [("p", "f32[2,3]{1,0}")],
      "f32[2,3]{1,0}",
      _P23,
    )
    np.testing.assert_array_equal(out, [[0, 1, 2], [0, 4, 5]])


_REDUCERS = """
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%max_by_select (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  %gt = pred[] compare(%x, %y), direction=GT
  ROOT %s = f32[] select(%gt, %x, %y)
}
"""


class ReduceAndControlFlowTest(absltest.TestCase):
  def test_reduce_fast_and_general_reducers(self):
    p = np.array([[3, -1, 7], [2, 8, -5]], np.float32)
    text = (
      "HloModule m, entry_computation_layout={(f32[2,3]{1,0})->"
      "(f32[3]{0}, f32[2]{0})}\n"
      + _REDUCERS
      + """
ENTRY %main (p: f32[2,3]) -> (f32[3], f32[2]) {
  %p = f32[2,3]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %low = f32[] constant(-inf)
  %sum = f32[3]{0} reduce(%p, %zero), dimensions={0}, to_apply=%add
  %max = f32[2]{0} reduce(%p, %low), dimensions={1}, to_apply=%max_by_select
  ROOT %t = (f32[3]{0}, f32[2]{0}) tuple(%sum, %max)
}
"""
    )
    run = execute_module(parse_hlo_module(text), [p])
    np.testing.assert_array_equal(run.outputs[0], [5, 7, 2])
    np.testing.assert_array_equal(run.outputs[1], [7, 8])

  def test_reduce_window_sums_padded_windows(self):
    p = np.arange(1, 7, dtype=np.float32)
    text = (
      "HloModule m, entry_computation_layout={(f32[6]{0})->f32[3]{0}}\n"
      + _REDUCERS
      + """
ENTRY %main (p: f32[6]) -> f32[3] {
  %p = f32[6]{0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %w = f32[3]{0} reduce-window(%p, %zero), window={size=3 stride=2 pad=1_0}, to_apply=%add
}
"""
    )
    # padded: 0 1 2 3 4 5 6; windows at 0, 2, 4: 0+1+2, 2+3+4, 4+5+6.
    np.testing.assert_array_equal(_run_module(text, p), [3, 9, 15])

  def test_while_and_conditional(self):
    text = """HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

%cond (s: (s32[], f32[2])) -> pred[] {
  %s = (s32[], f32[2]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (s: (s32[], f32[2])) -> (s32[], f32[2]) {
  %s = (s32[], f32[2]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[2]{0} get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %y = f32[2]{0} add(%x, %x)
  ROOT %t = (s32[], f32[2]{0}) tuple(%j, %y)
}

%neg (x: f32[2]) -> f32[2] {
  %x = f32[2]{0} parameter(0)
  ROOT %n = f32[2]{0} negate(%x)
}

%same (x: f32[2]) -> f32[2] {
  ROOT %x = f32[2]{0} parameter(0)
}

ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[2]{0}) tuple(%zero, %p)
  %loop = (s32[], f32[2]{0}) while(%init), condition=%cond, body=%body
  %x = f32[2]{0} get-tuple-element(%loop), index=1
  %t = pred[] constant(true)
  ROOT %c = f32[2]{0} conditional(%t, %x, %x), true_computation=%neg, false_computation=%same
}
"""
    out = _run_module(text, np.array([1, -2], np.float32))
    np.testing.assert_array_equal(out, [-8, 16])


if __name__ == "__main__":
  absltest.main()
