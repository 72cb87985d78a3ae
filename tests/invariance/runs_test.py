"""The CPU's classes, by running: hloprobe's rows against bits obtained
independently.

Expected values:
  * elementwise_only: numpy float32 (`elementwise_only_numpy`: each
    operation correctly rounded, as IEEE 754 and XLA's elementwise ops
    compute it), for row 0 and the anchor at every offset and n.
  * tm_mm, jax_34080, transformer_block: `jax.jit(fn)` called directly here on the batch
    (no hloprobe code), its rows compared as numpy uint views; hloprobe's
    classes must be the same partition.
"""

from __future__ import annotations

import pickle
from unittest import mock

import jax
import numpy as np
import pytest
from absl.testing import absltest

from hloprobe.compile import CASES, Case, get_target
from hloprobe.compile.invariance_cases import elementwise_only_numpy
from hloprobe.engine import KEPT
from hloprobe.engine.compiled import compile_and_run_case
from hloprobe.invariance.rows import ANCHOR, ROW0, anchor_offsets, classes_of
from hloprobe.invariance.runs import RowsRequest, anchor_inputs, rows_here
from hloprobe.ir import as_precision
from hloprobe.numerics import rows as numeric_rows
from hloprobe.records import Config

pytestmark = [pytest.mark.compiles, pytest.mark.cpu_numerics]

_SIZES = (1, 2, 3, 8, 64)


def _rows(name, sizes=_SIZES, anchors=True):
  case = CASES[name]
  full = case.full_inputs()
  cpu = get_target("cpu")
  return (
    case,
    full,
    [
      rows_here(
        case, full, Config(name, cpu, n, as_precision("float32")), anchors
      )
      for n in sizes
    ],
  )


# A CPU config's precisions whose modules differ only in the dots'
# precision attributes.
_TWIN_PRECISIONS = ("bfloat16", "float32")


def _outer(x, y):
  return x @ y.T


class _Counting:
  """A kept executable that counts its calls (and reads as its text)."""

  def __init__(self, compiled, calls: list):
    self.compiled, self.calls = compiled, calls

  def __call__(self, *args):
    self.calls.append(1)
    return self.compiled(*args)

  def as_text(self) -> str:
    return self.compiled.as_text()


def _assert_anchor_bits(case, full, n: int, anchor) -> None:
  """`anchor` (a `ConfigRows.anchor`) holds, at each offset of n, the
  bits jax.jit of the case at float32 gives there on that offset's own
  batch (`anchor_inputs`), called directly."""
  with jax.default_matmul_precision("float32"):
    for offset, got in zip(anchor_offsets(n), anchor):
      want = jax.jit(case.fn)(*anchor_inputs(case, full, n, offset))
      np.testing.assert_array_equal(
        got[0].view(np.uint32),
        np.asarray(want)[offset].ravel().view(np.uint32),
      )


def _partition(keys: dict[int, bytes]) -> set[tuple[int, ...]]:
  groups: dict[bytes, list[int]] = {}
  for n in sorted(keys):
    groups.setdefault(keys[n], []).append(n)
  return {tuple(g) for g in groups.values()}


class CpuRunsTest(absltest.TestCase):
  def test_elementwise_control_is_numpys_bits_everywhere(self):
    case, full, rows = _rows("elementwise_only")
    x, b, s = full
    want0 = elementwise_only_numpy(x[0], b, s).view(np.uint32)
    want_anchor = elementwise_only_numpy(x[-1], b, s).view(np.uint32)
    for r in rows:
      np.testing.assert_array_equal(r.row0[0].view(np.uint32), want0)
      for a in r.anchor:
        np.testing.assert_array_equal(a[0].view(np.uint32), want_anchor)
    for name in (ROW0, ANCHOR):
      c = classes_of(rows, name)
      self.assertEqual(c.classes, (_SIZES,))
      self.assertTrue(c.invariant)

  def test_classes_match_direct_jit_bits(self):
    for name in ("tm_mm", "jax_34080", "transformer_block"):
      case, full, rows = _rows(name, anchors=True)
      fn = jax.jit(case.fn)
      row0, anchor = {}, {}
      for n in _SIZES:
        out = np.asarray(fn(*case.inputs_for(full, n)))
        row0[n] = out[0].view(np.uint8).tobytes()
        placed = np.asarray(fn(*anchor_inputs(case, full, n, 0)))
        anchor[n] = placed[0].view(np.uint8).tobytes()
        # Within n, the anchor's bits at each offset, directly.
        for o in anchor_offsets(n):
          at = np.asarray(fn(*anchor_inputs(case, full, n, o)))[o]
          got = [r for r in rows if r.n == n][0].anchor
          np.testing.assert_array_equal(
            got[anchor_offsets(n).index(o)][0].view(np.uint8),
            at.ravel().view(np.uint8),
          )
      with self.subTest(name):
        row0_classes = classes_of(rows, ROW0).classes
        self.assertEqual(set(row0_classes), _partition(row0))
        self.assertEqual(
          set(classes_of(rows, ANCHOR).classes), _partition(anchor)
        )
        # The reference class is the largest.
        self.assertEqual(len(row0_classes[0]), max(map(len, row0_classes)))


class SweepOutputsTest(absltest.TestCase):
  def test_row_0_is_read_from_the_sweeps_run_not_run_again(self):
    # A sweep worker's CPU config keeps its run's outputs beside its
    # executable (under (config, `engine.KEPT`)); the rows request of that config
    # in the same worker reads row 0 there and runs only the anchor's
    # batches: 3 calls at n = 8 (offsets 0, 4, 7), not 4. Expected bits:
    # jax.jit of the case called directly.
    case = CASES["tm_mm"]
    full = case.full_inputs()
    config = Config("tm_mm", get_target("cpu"), 8, as_precision("float32"))
    memo = {}
    got = compile_and_run_case(
      case, full, config, False, memo.setdefault(KEPT, {})
    )
    self.assertIsNone(got.result.failure)
    calls = []
    compiled = memo[KEPT][config]
    memo[KEPT][config] = lambda *a: calls.append(1) or compiled(*a)
    request = RowsRequest(config, "tm_mm", full)
    rows = request.run(memo)
    self.assertLen(calls, len(anchor_offsets(8)))
    want = np.asarray(jax.jit(case.fn)(*case.inputs_for(full, 8)))[0]
    np.testing.assert_array_equal(
      rows.row0[0].view(np.uint32), want.ravel().view(np.uint32)
    )
    # Without the kept outputs, row 0 is run again: one call more.
    kept = memo[KEPT].pop((config, KEPT))
    calls.clear()
    again = request.run(memo)
    self.assertLen(calls, len(anchor_offsets(8)) + 1)
    np.testing.assert_array_equal(again.row0[0], rows.row0[0])
    # Kept of other inputs (a later sweep on this worker whose record of
    # the config came from the cache): not read, row 0 run on these.
    other = jax.tree_util.tree_map(lambda a: np.asarray(a) * 2, full)
    memo[KEPT][(config, KEPT)] = kept
    calls.clear()
    doubled = RowsRequest(config, "tm_mm", other).run(memo)
    self.assertLen(calls, len(anchor_offsets(8)) + 1)
    want = np.asarray(jax.jit(case.fn)(*case.inputs_for(other, 8)))[0]
    np.testing.assert_array_equal(
      doubled.row0[0].view(np.uint32), want.ravel().view(np.uint32)
    )

  def test_a_cpu_twins_anchor_rows_are_not_run_again(self):
    # tm_mm's CPU configs at bfloat16 and float32 compile to one module
    # but for its dot's operand_precision, which XLA:CPU does not read
    # (`sites.effective.cpu_algorithm`): the float32 config's rows request
    # in the same worker runs nothing (row 0 is its sweep's run, the
    # anchor batches its twin's), unless its row 0's bits differ from the
    # twin's. Expected bits: jax.jit of the case at float32 on the
    # anchor's batches, called directly.
    case = CASES["tm_mm"]
    full = case.full_inputs()
    cpu, memo, calls = get_target("cpu"), {}, []
    twins = [Config("tm_mm", cpu, 8, as_precision(p)) for p in _TWIN_PRECISIONS]
    for config in twins:
      got = compile_and_run_case(
        case, full, config, False, memo.setdefault(KEPT, {})
      )
      self.assertIsNone(got.result.failure)
      memo[KEPT][config] = _Counting(memo[KEPT][config], calls)
    first = RowsRequest(twins[0], "tm_mm", full).run(memo)
    self.assertLen(calls, len(anchor_offsets(8)))
    calls.clear()
    second = RowsRequest(twins[1], "tm_mm", full).run(memo)
    self.assertEmpty(calls)
    _assert_anchor_bits(case, full, 8, second.anchor)
    self.assertIs(second.anchor, first.anchor)
    # A row 0 whose bits are not the twin's: its anchors are run.
    inputs, outs = memo[KEPT][(twins[1], KEPT)]
    moved = (np.nextafter(outs[0], np.float32(np.inf)),) + tuple(outs[1:])
    memo[KEPT][(twins[1], KEPT)] = (inputs, moved)
    calls.clear()
    third = RowsRequest(twins[1], "tm_mm", full).run(memo)
    self.assertLen(calls, len(anchor_offsets(8)))
    for a, b in zip(third.anchor, second.anchor):
      np.testing.assert_array_equal(a[0], b[0])

  def test_a_large_program_s_anchor_offsets_are_one_batch(self):
    # Issue 37: a large program (the multiply-adds budget made small)
    # whose rows it declares independent runs its anchor at the three
    # offsets of n = 8 in one batch. Expected bits: jax.jit of the case on
    # each offset's own batch (the anchor among other rows), called
    # directly.
    case = CASES["tm_mm"]
    self.assertTrue(case.rows_independent)
    full = case.full_inputs()
    cpu, memo, calls = get_target("cpu"), {}, []
    config = Config("tm_mm", cpu, 8, as_precision("float32"))
    got = compile_and_run_case(
      case, full, config, False, memo.setdefault(KEPT, {})
    )
    self.assertIsNone(got.result.failure)
    memo[KEPT][config] = _Counting(memo[KEPT][config], calls)
    with mock.patch.object(numeric_rows, "JUDGED_MULTIPLY_ADDS", 1):
      rows = RowsRequest(config, "tm_mm", full).run(memo)
    self.assertLen(calls, 1)
    _assert_anchor_bits(case, full, 8, rows.anchor)
    # That batch: the anchor (the last full row) at rows 0, 4 and 7, the
    # others the single-offset batches' rows in their order.
    (x, *_), last = anchor_inputs(case, full, 8, (0, 4, 7)), full[0][-1]
    for r in (0, 4, 7):
      np.testing.assert_array_equal(x[r], last)
    (alone, *_) = anchor_inputs(case, full, 8, 0)
    np.testing.assert_array_equal(x[[1, 2, 3, 5, 6]], alone[1:6])

  def test_a_twin_of_another_case_is_not_taken(self):
    # Two cases of one program on the same inputs compile to one module,
    # but batch other arguments, so their anchor batches differ: a worker
    # that ran one's rows runs the other's anchors (a review's finding:
    # the twins' key named no case). It then holds the second case's rows
    # alone, on one inputs. Expected bits: jax.jit of the program on the
    # second case's anchor batches, called directly.
    g = np.random.default_rng(5)
    inputs = tuple(g.standard_normal((4, 8)).astype(np.float32) for _ in "xy")
    a, b = (
      Case(name, "x @ y.T", _outer, lambda: inputs, in_axes=axes)
      for name, axes in (("twin_a", (0, None)), ("twin_b", (0, 0)))
    )
    cpu, memo = get_target("cpu"), {}
    first, second = (
      rows_here(
        case,
        case.full_inputs(),
        Config(case.name, cpu, 4, as_precision(p)),
        twins=memo,
      )
      for case, p in zip((a, b), _TWIN_PRECISIONS)
    )
    np.testing.assert_array_equal(first.row0[0], second.row0[0])
    full = b.full_inputs()
    for offset, got in zip(anchor_offsets(4), second.anchor):
      want = jax.jit(_outer)(*anchor_inputs(b, full, 4, offset))[offset]
      np.testing.assert_array_equal(
        got[0].view(np.uint32), np.asarray(want).ravel().view(np.uint32)
      )
    self.assertFalse(
      all(
        np.array_equal(x[0], y[0]) for x, y in zip(first.anchor, second.anchor)
      )
    )
    (held,) = [v for v in memo.values() if getattr(v, "case", None) is not None]
    self.assertIs(held.case, b)

  def test_kept_runs_of_pickled_inputs_hold_one_copy_of_them(self):
    # A worker whose requests carry the inputs pickled (a Ray pool's)
    # unpickles a copy for every config: the kept runs hold the first
    # copy, not one each. Expected: the leaves' identities.
    case = CASES["tm_mm"]
    full = case.full_inputs()
    blob = pickle.dumps(full)
    keep = {}
    for n in (1, 2, 4):
      config = Config("tm_mm", get_target("cpu"), n, as_precision("float32"))
      got = compile_and_run_case(case, pickle.loads(blob), config, False, keep)
      self.assertIsNone(got.result.failure)
    held = [v[0] for k, v in keep.items() if isinstance(k, tuple)]
    self.assertLen(held, 3)
    self.assertTrue(all(h is held[0] for h in held))
    # Other values are held as they are.
    other = jax.tree_util.tree_map(lambda a: np.asarray(a) * 2, full)
    config = Config("tm_mm", get_target("cpu"), 8, as_precision("float32"))
    compile_and_run_case(case, other, config, False, keep)
    self.assertIs(keep[(config, KEPT)][0], other)


if __name__ == "__main__":
  absltest.main()
