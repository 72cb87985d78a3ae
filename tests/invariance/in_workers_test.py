"""A user case's rows in the workers: its inputs made in the worker that
loaded it (`full_inputs_of`), row 0 and the anchor rows run there like a
built-in case's (`sweep_rows`, `invariance_of_sweep`), on the CPU.

Expected values, none from hloprobe's output: the case's program is
exact in float32 (integer inputs in [-4, 4], 16 products of at most 16
summed, plus 1: every partial sum an integer below 2**24), so each row's
bits are numpy's int64 result converted to float32, whatever the
summation order XLA picks at each batch size; hence one class of
identical bits for row 0 and for the anchor row at every offset.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import pickle
import threading
import types

import jax
import numpy as np
import pytest
import testutil
from absl.testing import absltest

from hloprobe import engine
from hloprobe.commands import explain
from hloprobe.engine.engine import _reuse_key, _Sweep
from hloprobe.engine.shared import SharedInputs, resolved
from hloprobe.errors import ExecutionError
from hloprobe.invariance import in_workers
from hloprobe.invariance.answer import Invariance, config_key
from hloprobe.invariance.in_workers import (
  _lanes,
  full_inputs_of,
  invariance_of_sweep,
)
from hloprobe.invariance.pin import batch_invariance
from hloprobe.invariance.rows import ANCHOR, ROW0, anchor_offsets
from hloprobe.report import invariance_words as words
from hloprobe.runtime import WorkerError

pytestmark = pytest.mark.compiles

_SIZES = (1, 2, 3, 8)

_CASE = testutil.EXACT_MM_CASE


class UserCaseAnchorsTest(absltest.TestCase):
  def _exact_plan(self):
    """The exact case written to a file, swept for the bits only (explain
    --only=invariance's sweep): the rows are the workers', never the
    records'."""
    path = os.path.join(self.create_tempdir().full_path, "exact_case.py")
    with open(path, "w") as f:
      f.write(_CASE)
    return engine.plan_sweep(
      engine.SweepSpec(
        (f"{path}:make_case",), _SIZES, ("float32",), ("cpu",), numerics=False
      )
    )

  def test_rows_run_in_workers_are_numpys_integers(self):
    plan = self._exact_plan()
    with engine.worker_pool(plan) as pool:
      results = engine.run_sweep(plan, pool=pool)
      self.assertTrue(all(r.ok for r in results), results)
      (swept,) = plan.cases
      self.assertTrue(swept.guarded)
      x, w = full_inputs_of(swept, pool, 300.0)
      rows, failed = in_workers.sweep_rows(
        plan, pool, lambda i: full_inputs_of(plan.cases[i], pool, 300.0)
      )
      found = invariance_of_sweep(plan, results, pool)
    self.assertEqual(failed, {})
    self.assertTrue(np.array_equal(x, np.round(x)))
    exact = x.astype(np.int64) @ w.astype(np.int64) + 1
    want0 = exact[0].astype(np.float32).view(np.uint32)
    want_anchor = exact[-1].astype(np.float32).view(np.uint32)
    self.assertEqual(sorted(r.n for r in rows.values()), list(_SIZES))
    for r in rows.values():
      np.testing.assert_array_equal(r.row0[0].view(np.uint32), want0)
      self.assertLen(r.anchor, len(anchor_offsets(r.n)))
      for a in r.anchor:
        np.testing.assert_array_equal(a[0].view(np.uint32), want_anchor)
    (a,) = found
    self.assertIsNone(a.why)
    self.assertIs(a.invariant, True)
    for name in (ROW0, ANCHOR):
      self.assertEqual(a.row(name).classes, (_SIZES,))
    lines = words.answer_lines(found)
    self.assertEqual(
      lines,
      [
        "row 0 is batch-invariant on cpu under float32 (bits compared): "
        "identical for n = 1-8",
        "the anchor row (at the first, middle, last offsets) is "
        "batch-invariant on cpu under float32 (bits compared): identical "
        "for n = 1-8",
      ],
    )

  def test_an_early_answers_rows_are_not_run_again(self):
    # explain's answer begun during the sweep failed (strict) after some
    # configs' rows ran: the answer made after the sweep is given them
    # (`EarlyAnswerIncomplete.rows`) and asks only the others' (issue 37,
    # a review's finding 5: every config's rows ran twice). Expected: the
    # requests sent, and the answer of a sweep given nothing.
    plan = self._exact_plan()
    with engine.worker_pool(plan) as pool:
      results = engine.run_sweep(plan, pool=pool)
      inputs = in_workers.case_inputs(plan, pool)
      rows, failed = in_workers.sweep_rows(plan, pool, inputs)
      self.assertEqual(failed, {})
      early = dict(list(rows.items())[:2])
      used = []  # the early answer's inputs serve the rest (a review's
      # finding: made again, a case drawing afresh gave other rows)
      given = in_workers.EarlyAnswerIncomplete(
        "rows of x failed", early, None, lambda i: used.append(i) or inputs(i)
      )
      counting = _CountingPool(pool)
      found = invariance_of_sweep(plan, results, counting, given=given)
      alone = invariance_of_sweep(plan, results, pool)
    asked = [n for kind, n in counting.asked if kind == "RowsRequest"]
    self.assertEqual(asked, [r.n for k, r in rows.items() if k not in early])
    self.assertEqual(used, [0])
    self.assertEqual(words.answer_lines(found), words.answer_lines(alone))
    back = pickle.loads(pickle.dumps(given))  # a worker's error crosses
    self.assertEqual((str(back), list(back.rows)), (str(given), list(early)))

  def test_a_strict_answer_stops_where_a_worker_died_reading_kernels(self):
    # The early answer is strict on kernels too (a review's finding 4: it
    # fell back to the fates quietly, where the answer after the sweep
    # reads them), where a worker died or ran past its time (another try
    # may read them): an a100 config's read so failing raises, carrying
    # the rows run and the kernels read, and the answer given them asks
    # only that config's kernels again. A read failing otherwise would
    # fail again: that config is read from its fates, as without strict.
    # Expected: the requests sent.
    plan = engine.plan_sweep(
      engine.SweepSpec(
        ("seed_mlp",), (1, 2), ("float32",), ("cpu", "a100"), numerics=False
      )
    )
    with engine.worker_pool(plan) as pool:
      results = engine.run_sweep(plan, pool=pool)
      died = _CountingPool(pool, fail=("KernelsRequest", 2), died=True)
      with self.assertRaisesRegex(
        in_workers.EarlyAnswerIncomplete, "kernels of .* not read"
      ) as raised:
        invariance_of_sweep(plan, results, died, strict=True)
      counting = _CountingPool(pool)
      invariance_of_sweep(plan, results, counting, given=raised.exception)
      failing = _CountingPool(pool, fail=("KernelsRequest", 2))
      found = invariance_of_sweep(plan, results, failing, strict=True)
    given = raised.exception
    self.assertEqual(sorted(r.n for r in given.rows.values()), [1, 2])
    self.assertLen(given.kernels, 1)  # n = 1's; n = 2's failed
    self.assertEqual(counting.asked, [("KernelsRequest", 2)])
    self.assertLen(found, 2)  # cpu and a100, float32: answered

  def test_large_inputs_cross_as_shared_files(self):
    # x of 8 x 65536 f32 (2 MiB, above shared.SHARE_FROM_BYTES): the
    # loader writes it to the pool's folder once and returns a record
    # (issue 37: decode's 0.47 GB went pickled in each of 14 requests).
    # Exact in f32: 65536 products of at most 16, every partial sum an
    # integer below 2**24.
    path = os.path.join(self.create_tempdir().full_path, "large_case.py")
    with open(path, "w") as f:
      f.write(
        _CASE.replace("(8, 16)", "(8, 65536)").replace("(16, 4)", "(65536, 4)")
      )
    plan = engine.plan_sweep(
      engine.SweepSpec(
        (f"{path}:make_case",), _SIZES, ("float32",), ("cpu",), numerics=False
      )
    )
    g = np.random.default_rng(7)  # the case's own draw, made here again
    x = g.integers(-4, 5, (8, 65536)).astype(np.float32)
    w = g.integers(-4, 5, (65536, 4)).astype(np.float32)
    with engine.worker_pool(plan) as pool:
      results = engine.run_sweep(plan, pool=pool)
      self.assertTrue(all(r.ok for r in results), results)
      (swept,) = plan.cases
      found = full_inputs_of(swept, pool, 300.0)
      self.assertIsInstance(found, SharedInputs)
      got_x, got_w = resolved(found)
      rows, failed = in_workers.sweep_rows(
        plan, pool, in_workers.case_inputs(plan, pool)
      )
    self.assertEqual(failed, {})
    np.testing.assert_array_equal(got_x, x)
    np.testing.assert_array_equal(got_w, w)
    want0 = (x.astype(np.int64) @ w.astype(np.int64) + 1)[0]
    self.assertEqual(sorted(r.n for r in rows.values()), list(_SIZES))
    for r in rows.values():
      np.testing.assert_array_equal(
        r.row0[0].view(np.uint32), want0.astype(np.float32).view(np.uint32)
      )

  def test_inputs_failing_in_the_loader_say_so_once(self):
    # make_inputs fails from its second call in a process on: the sweep's
    # call (the loader's first) passes, the anchors' (its second) fails;
    # a fresh worker (its first call) would pass, so the failure also
    # shows that the anchors' inputs came from the loader.
    path = os.path.join(self.create_tempdir().full_path, "once_case.py")
    with open(path, "w") as f:
      f.write(_CASE.replace("def _inputs():", _ONCE))
    plan = engine.plan_sweep(
      engine.SweepSpec((f"{path}:make_case",), _SIZES, ("float32",), ("cpu",))
    )
    with engine.worker_pool(plan) as pool:
      results = engine.run_sweep(plan, pool=pool)
      self.assertTrue(all(r.ok for r in results), results)
      found = invariance_of_sweep(plan, results, pool)
      # explain's answer begun during the sweep asks to hear of it: it
      # then makes the answer again after the sweep.
      with self.assertRaisesRegex(ExecutionError, "drawn once only"):
        invariance_of_sweep(plan, results, pool, strict=True)
    (a,) = found
    self.assertEqual(a.why.gap, Invariance.GAP.ROWS_FAILED)
    self.assertEqual(
      a.why.message,
      "CaseError: case 'exact_mm': make_inputs() failed: "
      "RuntimeError: drawn once only",
    )
    (line, note) = words.answer_lines(found)
    self.assertEqual(
      note,
      "  (row 0 only on cpu under float32: the anchor row was not run: "
      "CaseError: case 'exact_mm': make_inputs() failed: RuntimeError: "
      "drawn once only)",
    )


class _CountingPool:
  """A worker pool that notes each request's kind and size (n); `fail`
  (kind, n): such a request raises instead of being sent, a `WorkerError`
  with `died` (a worker that died), else a RuntimeError."""

  def __init__(self, pool, fail: tuple | None = None, died: bool = False):
    self._pool, self.asked, self._fail, self._died = pool, [], fail, died
    self.compiled_on = {}  # a `CompileRequest`'s config -> its lane

  def call(self, request, *args, **kwargs):
    config = getattr(request, "config", None)
    asked = (type(request).__name__, getattr(config, "n", None))
    self.asked.append(asked)
    if asked[0] == "CompileRequest":
      self.compiled_on[config] = kwargs.get("lane")
    if asked == self._fail and self._died:
      raise WorkerError(f"{asked}: the worker died here", "kernels")
    if asked == self._fail:
      raise RuntimeError(f"{asked} failed here")
    return self._pool.call(request, *args, **kwargs)

  def __getattr__(self, name):
    return getattr(self._pool, name)


_ONCE = """_CALLS = []

def _inputs():
  _CALLS.append(1)
  if len(_CALLS) > 1:
    raise RuntimeError("drawn once only")
  return _drawn()

def _drawn():"""


class LanesTest(absltest.TestCase):
  """The lane each config's rows and kernels are asked on: the one the
  sweep compiled it on (hloprobe/engine/engine.py `_Sweep._lanes`: each
  flag set's configs dealt to max(1, jobs // flag sets) lanes, those of
  one case, target and n together, the costliest group first to the
  least loaded lane: `PlannedConfig.lanes_of`), where its worker keeps
  the compile."""

  def test_configs_are_dealt_by_their_cost_over_two_lanes(self):
    # Costs (a GPU config 4, a CPU one 1, each plus n / 8): a100 n = 8, 4,
    # 2, 1 (5, 4.5, 4.25, 4.125) go to lanes 0, 1, 1, 0 (loads 9.125 and
    # 8.75), then cpu n = 8, 4, 2, 1 (2, 1.5, 1.25, 1.125) to 1, 0, 0, 1.
    plan = engine.plan_sweep(
      engine.SweepSpec(
        ("seed_mlp",), (1, 2, 4, 8), ("float32",), ("cpu", "a100"), jobs=2
      )
    )
    lanes = _lanes(plan)
    keys = [config_key(c.config) for c in plan.configs()]
    self.assertLen(keys, 8)
    self.assertEqual([lanes[k][1] for k in keys], [1, 0, 0, 1, 0, 1, 1, 0])

  def test_the_precisions_of_a_size_share_a_lane(self):
    # Issue 37: their modules are executed as one in that lane's worker
    # (`CompileRequest.made`). Costs per size, both precisions: n = 8
    # 4, n = 2 2.5, n = 1 2.25: n = 8 alone on lane 0.
    plan = engine.plan_sweep(
      engine.SweepSpec(
        ("seed_mlp",), (1, 2, 8), ("bfloat16", "float32"), ("cpu",), jobs=2
      )
    )
    lanes = _lanes(plan)
    got = [(c.config.n, lanes[config_key(c.config)]) for c in plan.configs()]
    self.assertEqual(
      got, [(n, ("", {1: 1, 2: 1, 8: 0}[n])) for _ in "ab" for n in (1, 2, 8)]
    )

  def test_a_sweep_given_some_records_compiles_the_rest_where_dealt(self):
    # A sweep given an earlier one's records of n = 1 and 8 (explain's fix
    # tries; the record cache alike) compiles n = 2 and 4 on the lanes the
    # answer asks their rows and kernels on (`_lanes`, every config
    # dealt): dealt alone, a100 n = 4 went to lane 0, not its lane 1, and
    # was compiled again there. Expected: `_lanes`' deal (the test above).
    spec = engine.SweepSpec(
      ("seed_mlp",), (1, 2, 4, 8), ("float32",), ("cpu", "a100"), jobs=2
    )
    plan = engine.plan_sweep(spec)
    earlier = engine.plan_sweep(dataclasses.replace(spec, batch_sizes=(1, 8)))
    with engine.worker_pool(plan) as pool:
      records = engine.run_sweep(earlier, pool=pool)
      counting = _CountingPool(pool)
      got = engine.run_sweep(plan, pool=counting, given=[(earlier, records)])
    self.assertTrue(all(r.ok for r in got), got)
    lanes = _lanes(plan)
    asked = {
      (c.target.name, c.n): lane for c, lane in counting.compiled_on.items()
    }
    self.assertEqual(sorted(n for _, n in asked), [2, 2, 4, 4])
    for c in plan.configs():
      if c.config.n in (2, 4):
        key = (c.config.target.name, c.config.n)
        self.assertEqual(asked[key], lanes[config_key(c.config)][1], key)

  def test_the_lanes_started_early_are_those_that_get_work(self):
    # cpu n = 1, 2, 4, 8 on 4 lanes (costs 1 + n / 8: n = 8, 4, 2, 1 to
    # lanes 0, 1, 2, 3), n = 4's records known (an earlier sweep's): its
    # lane 1 gets no work, so lanes 0 (target loading's), 2 and 3 start
    # before the inputs are made, not 0, 1 and 2 (a review's finding).
    # Expected: the deal worked by hand, and `_lanes`' own.
    plan = engine.plan_sweep(
      engine.SweepSpec(
        ("seed_mlp",), (1, 2, 4, 8), ("float32",), ("cpu",), jobs=4
      )
    )
    sweep = object.__new__(_Sweep)  # the fields the deal reads, no workers
    sweep.spec, sweep.configs, sweep.store = plan, plan.configs(), None
    known = [c.config.n == 4 for c in sweep.configs]
    sweep.known = {
      _reuse_key(c): object() for c, k in zip(sweep.configs, known) if k
    }
    sweep.hits = [object() if k else None for k in known]
    sweep.setups = [types.SimpleNamespace(broken=None)]
    early = sweep._early_lanes()
    self.assertEqual(early[0], ("", 0))
    self.assertEqual(set(early), {("", 0), ("", 2), ("", 3)})
    working = {(flags, lane) for flags, lane, _ in sweep._lanes()}
    self.assertEqual(set(early), working | {("", 0)})

  def test_rows_are_asked_on_the_lanes_at_once(self):
    # Each lane's first request waits until the other lane's is in
    # flight too: one after another, the barrier breaks and both fail.
    plan = engine.plan_sweep(
      engine.SweepSpec(
        ("seed_mlp",),
        (1, 2, 4, 8),
        ("float32",),
        ("cpu",),
        jobs=2,
        numerics=False,
      )
    )
    both = threading.Barrier(2, timeout=120)

    class BothLanes:
      def __init__(self, pool):
        self.pool, self.lanes = pool, set()

      def call(self, request, flags, lane):
        if lane not in self.lanes:
          self.lanes.add(lane)
          both.wait()
        return self.pool.call(request, flags, lane=lane)

    with engine.worker_pool(plan) as pool:
      results = engine.run_sweep(plan, pool=pool)
      self.assertTrue(all(r.ok for r in results), results)
      rows, failed = in_workers.sweep_rows(
        plan, BothLanes(pool), in_workers.case_inputs(plan, pool)
      )
    self.assertEqual(failed, {})
    self.assertEqual(list(rows), [config_key(c.config) for c in plan.configs()])
    self.assertEqual([r.n for r in rows.values()], [1, 2, 4, 8])

  def test_one_job_is_one_lane(self):
    plan = engine.plan_sweep(
      engine.SweepSpec(("seed_mlp",), (1, 2, 8), ("float32",), ("a100",))
    )
    self.assertEqual(set(_lanes(plan).values()), {("", 0)})


class AheadTest(absltest.TestCase):
  """The answer started when the sweep's lanes are done (explain's
  `_InvarianceAhead`, issue 37): `run_sweep`'s `lanes_done` is called
  once, before the sweep returns, with the inputs the lanes sent, and an
  answer begun there on a future of the records is the one made after."""

  def test_answer_begun_when_the_lanes_are_done_is_the_same(self):
    plan = engine.plan_sweep(
      engine.SweepSpec(
        ("seed_mlp",),
        (1, 2, 8),
        ("float32",),
        ("cpu",),
        jobs=2,
        numerics=False,
      )
    )
    records = concurrent.futures.Future()
    early = concurrent.futures.Future()
    calls, returned = [], threading.Event()

    def lanes_done(inputs):
      calls.append((returned.is_set(), inputs(0)))
      threading.Thread(
        target=lambda: early.set_result(
          batch_invariance(plan, records, pool, None, inputs)
        )
      ).start()

    with engine.worker_pool(plan) as pool:
      results = engine.run_sweep(plan, pool=pool, lanes_done=lanes_done)
      returned.set()
      records.set_result(results)
      found, pins = early.result(timeout=600)
      after, after_pins = batch_invariance(plan, results, pool)
    self.assertLen(calls, 1)
    self.assertFalse(calls[0][0])  # before run_sweep returned
    sent = jax.tree_util.tree_leaves(resolved(calls[0][1]))
    made = jax.tree_util.tree_leaves(plan.cases[0].case.full_inputs())
    self.assertEqual(len(sent), len(made))
    for a, b in zip(sent, made):
      np.testing.assert_array_equal(a, b)
    self.assertLen(found, 1)  # seed_mlp, cpu, float32: one group
    self.assertEqual(
      words.invariance_json(found, pins),
      words.invariance_json(after, after_pins),
    )

  def test_an_early_answer_that_failed_gives_its_rows_to_the_one_after(self):
    # explain's early answer raised (strict) with some configs' rows run:
    # `_InvarianceAhead.answer` gives None and keeps the error, and the
    # answer made after the sweep (`_with_invariance`) asks only the other
    # configs' rows. Expected: the requests sent.
    plan = engine.plan_sweep(
      engine.SweepSpec(
        ("seed_mlp",), (1, 2, 8), ("float32",), ("cpu",), numerics=False
      )
    )
    with engine.worker_pool(plan) as pool:
      results = engine.run_sweep(plan, pool=pool)
      rows, _ = in_workers.sweep_rows(
        plan, pool, in_workers.case_inputs(plan, pool)
      )
      first = next(iter(rows))
      ahead = explain._InvarianceAhead(plan, pool)
      ahead.started = True  # as `start` marks it; its answer raised:
      ahead._answer.set_exception(
        in_workers.EarlyAnswerIncomplete(
          "rows of x failed", {first: rows[first]}
        )
      )
      counting = _CountingPool(pool)
      got = explain._with_invariance(
        plan, results, counting, _Answer(), "answer", None, None, ahead
      )
    self.assertIsInstance(ahead.error, in_workers.EarlyAnswerIncomplete)
    self.assertLen(got.invariance, 1)
    asked = [n for kind, n in counting.asked if kind == "RowsRequest"]
    self.assertEqual(asked, [r.n for k, r in rows.items() if k != first])


@dataclasses.dataclass(frozen=True)
class _Answer:
  """The fields of explain's answer `_with_invariance` fills."""

  invariance: tuple = ()
  pins: tuple = ()


if __name__ == "__main__":
  absltest.main()
