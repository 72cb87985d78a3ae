"""What XLA made is executed beside the prediction (issue 37).

`CaseSetup.finish` runs a config's executions of its optimized module
(`MadeChecker.runs`: hloprobe's numpy executor) in a thread while the
prediction runs, and judges them after both (`MadeChecker.judged`). These
tests show that the two meet (each waits for the other to have started,
events, not timing), that the record is the one a config finished the
sequential way (`MadeChecker.check` after the prediction) gets, and that a
failure of either part loses nothing of the other's.

Where the worker that compiled the config made those executions (issue
37: a `CompileRequest` with `made`, its reply's `CompiledConfig.made`),
finish judges them and executes nothing itself (`MadeInTheWorkerTest`):
for a running (cpu) and a compile-only (a100) target the reply carries
them through pickle, finish never calls its checker's `runs`, and the
record is the one finished the old way (the runs made in this process);
a reply without them keeps that way; a worker asked again with other
inputs (a later sweep's) runs on those.

Compiles (marked): seed_mlp at n = 2 on the CPU target (and a100 for the
worker's runs), in this process (a request's `run` is what a worker
runs), its float64 reference and emulations by jax on the CPU.
"""

from __future__ import annotations

import dataclasses
import pickle
import threading
from unittest import mock

import jax
import numpy as np
import pytest
from absl.testing import absltest, parameterized

from hloprobe.compile import CASES, get_target
from hloprobe.engine.compiled import CompileRequest, compile_and_run_case
from hloprobe.engine.measure import CaseSetup
from hloprobe.engine.plan import SweptCase
from hloprobe.execute.records import Execution
from hloprobe.ir import as_precision
from hloprobe.numerics import rows
from hloprobe.records import Config
from hloprobe.report.results_schema import config_json
from hloprobe.runtime import Stopwatch

_CASE = CASES["seed_mlp"]
_N = 2
# How long each side waits for the other to start (seconds): only a bound
# that ends a failing run; the sides meet at once when they overlap.
_WAIT_S = 120.0


class _Meeting:
  """A checker and a predictor wrapped so that each, before its work,
  says it started and waits for the other to have started (at most
  `_WAIT_S`). Run one after the other, the first waits in vain; run at
  once, both meet.

  Attributes:
    met: (side, whether the other had started, whether it ran on the main
      thread), one per side that ran.
  """

  def __init__(self, checker, predictor, executor_error=None):
    self._checker, self._predictor = checker, predictor
    self._executor_error = executor_error
    self._started = {
      "executor": threading.Event(),
      "predictor": threading.Event(),
    }
    self.met: list[tuple[str, bool, bool]] = []

  def _meet(self, side: str, other: str) -> None:
    self._started[side].set()
    met = self._started[other].wait(_WAIT_S)
    main = threading.current_thread() is threading.main_thread()
    self.met.append((side, met, main))

  def runs(self, n, optimized_hlo, fates=(), judged=None):
    run = self._checker.runs(n, optimized_hlo, fates, judged)

    def meeting():
      self._meet("executor", "predictor")
      if self._executor_error is not None:
        raise self._executor_error
      return run()

    return meeting

  def judged(self, *args, **kwargs):
    return self._checker.judged(*args, **kwargs)

  def judged_later(self, n):
    return self._checker.judged_later(n)

  def predict(self, *args, **kwargs):
    self._meet("predictor", "executor")
    return self._predictor.predict(*args, **kwargs)


def _record(r) -> dict:
  return config_json(dataclasses.replace(r, timings={}))


def _case_setup(full) -> CaseSetup:
  """The case's setup, its references and predictor made."""
  setup = CaseSetup(SweptCase(_CASE, _CASE.name, True), (1, _N), given=(full,))
  setup.prepare(Stopwatch())
  return setup


@pytest.mark.compiles
class MadeBesideTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.full = _CASE.full_inputs()
    config = Config(_CASE.name, get_target("cpu"), _N, as_precision("float32"))
    cls.work = compile_and_run_case(_CASE, cls.full, config, False)
    assert cls.work.result.ok, cls.work.result.failure

  def _setup(self) -> CaseSetup:
    return _case_setup(self.full)

  def _meeting(self, setup: CaseSetup, **kwargs) -> _Meeting:
    """Wraps `setup`'s checker and predictor in a `_Meeting` (its steps
    are private: the test reaches in)."""
    made = setup._made
    meeting = _Meeting(made.checker, made.predictor, **kwargs)
    setup._made = dataclasses.replace(made, checker=meeting, predictor=meeting)
    return meeting

  def _sequential(self, work=None):
    """The record finished the sequential way: the prediction, then
    `MadeChecker.check` (the path before the thread)."""
    setup = self._setup()
    work = work or self.work
    alone = dataclasses.replace(setup._made, checker=None)
    setup._made = alone
    r = setup.finish(work, Stopwatch())
    checker = self._setup()._made.checker
    c, p = r.compilation, r.prediction
    args = (c.fates, c.passes, p.bands, p.leaf, p.noises)
    made = checker.check(_N, c.optimized_hlo, *args)
    return dataclasses.replace(r, made=made)

  def test_the_executor_runs_beside_the_prediction(self):
    setup = self._setup()
    meeting = self._meeting(setup)
    r = setup.finish(self.work, Stopwatch())
    self.assertCountEqual(
      meeting.met, [("executor", True, False), ("predictor", True, True)]
    )
    self.assertIsNotNone(r.prediction)
    self.assertTrue(r.made.complete, r.made.not_executed)
    self.assertEqual(_record(r), _record(self._sequential()))

  def test_an_executor_failure_is_named_as_before(self):
    # A parameter the module declares bf16 where the case passes f32: the
    # dimensions match (`MadeChecker.runs` readies it), the numpy executor
    # raises in the thread, and the verdict names it as `check` does.
    text = self.work.result.compilation.optimized_hlo
    entry = "%xs.1 = f32[2,2]{1,0} parameter(0)"  # jaxlib 0.12.0.1's
    self.assertIn(entry, text)
    bad = text.replace(entry, entry.replace("f32", "bf16"))
    r = self.work.result
    compilation = dataclasses.replace(r.compilation, optimized_hlo=bad)
    work = dataclasses.replace(
      self.work, result=dataclasses.replace(r, compilation=compilation)
    )
    setup = self._setup()
    meeting = self._meeting(setup)
    got = setup.finish(work, Stopwatch())
    self.assertCountEqual(
      meeting.met, [("executor", True, False), ("predictor", True, True)]
    )
    (why,) = got.made.not_executed
    self.assertTrue(why.startswith("module (ExecutionError: "), why)
    self.assertIsNotNone(got.prediction)  # the other part's result kept
    self.assertEqual(_record(got), _record(self._sequential(work)))

  def test_an_error_out_of_the_thread_is_raised_here(self):
    # Beyond the module's sake (not an Exception the executor names): it
    # reaches the caller, as it did from `check`, after the prediction.
    setup = self._setup()
    meeting = self._meeting(setup, executor_error=KeyboardInterrupt())
    with self.assertRaises(KeyboardInterrupt):
      setup.finish(self.work, Stopwatch())
    self.assertCountEqual(
      meeting.met, [("executor", True, False), ("predictor", True, True)]
    )


class _Counted:
  """A checker whose `runs` calls are counted (`judged` passed on)."""

  def __init__(self, checker):
    self._checker, self.runs_called, self.rows = checker, 0, []

  def runs(self, n, optimized_hlo, fates=(), judged=None):
    self.runs_called += 1
    self.rows.append(judged)
    return self._checker.runs(n, optimized_hlo, fates, judged)

  def judged(self, *args, **kwargs):
    return self._checker.judged(*args, **kwargs)

  def judged_later(self, n):
    return self._checker.judged_later(n)

  def judged_rows(self, noises):
    return self._checker.judged_rows(noises)


@pytest.mark.compiles
class MadeInTheWorkerTest(parameterized.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.full = _CASE.full_inputs()

  def _reply(self, target: str, made: bool, memo=None, full=None):
    """The worker's reply to the config's request, through pickle (a
    fresh worker's, or one's whose memo is `memo`)."""
    precision = as_precision("float32")
    config = Config(_CASE.name, get_target(target), _N, precision)
    full = self.full if full is None else full
    request = CompileRequest(config, _CASE.name, full, made=made)
    reply = request.run({} if memo is None else memo)
    reply = pickle.loads(pickle.dumps(reply))
    self.assertTrue(reply.result.ok, reply.result.failure)
    return reply

  def _finished(self, work):
    """(finish's record of `work`, how often it executed the module)."""
    setup = _case_setup(self.full)
    counted = _Counted(setup._made.checker)  # private: the test reaches in
    setup._made = dataclasses.replace(setup._made, checker=counted)
    return setup.finish(work, Stopwatch()), counted.runs_called

  @parameterized.parameters("cpu", "a100")
  def test_the_reply_carries_the_runs_and_finish_uses_them(self, target):
    reply = self._reply(target, made=True)
    wide, made = reply.made  # the widened run and the made run
    self.assertIsInstance(wide, Execution)
    self.assertIsInstance(made, Execution)
    self.assertTrue(wide.complete and made.complete)
    got, executed = self._finished(reply)
    self.assertEqual(executed, 0)
    self.assertTrue(got.made.complete, got.made.not_executed)
    # The old way: the same compile's reply without them, run here.
    old, executed = self._finished(dataclasses.replace(reply, made=None))
    self.assertEqual(executed, 1)
    self.assertEqual(_record(got), _record(old))

  def test_a_worker_runs_each_requests_inputs(self):
    # A later sweep on the same worker sends other inputs: its runs are
    # made on those, as a fresh worker's, not on the first sweep's.
    memo = {}
    first = self._reply("cpu", True, memo).made[1].outputs
    other = jax.tree_util.tree_map(lambda x: np.asarray(x) * 2, self.full)
    again = self._reply("cpu", True, memo, other).made[1].outputs
    fresh = self._reply("cpu", True, None, other).made[1].outputs
    self.assertFalse(np.array_equal(again[0], first[0]))
    for got, want in zip(again, fresh, strict=True):
      np.testing.assert_array_equal(got, want)

  def test_a_reply_not_asked_for_them_has_none(self):
    reply = self._reply("cpu", made=False)
    self.assertIsNone(reply.made)
    got, executed = self._finished(reply)
    self.assertEqual(executed, 1)
    self.assertTrue(got.made.complete, got.made.not_executed)


@pytest.mark.compiles
class JudgedLaterTest(absltest.TestCase):
  """A large program's larger size (here the seed at n = 8 with the
  budget of `rows.rows_whole` cut to 2 rows' multiply-adds: 3 rows
  judged): its worker makes no runs, and finish runs them on the
  prediction's judged rows alone, judging them there."""

  def test_made_on_the_predictions_rows(self):
    full = _CASE.full_inputs()
    row = 2 * 48 + 48 * 48 * 2 + 48  # the seed's multiply-adds a row
    config = Config(_CASE.name, get_target("a100"), 8, as_precision("bfloat16"))
    with mock.patch.object(rows, "JUDGED_MULTIPLY_ADDS", 2 * row):
      reply = CompileRequest(config, _CASE.name, full, made=True).run({})
      self.assertTrue(reply.result.ok, reply.result.failure)
      self.assertIsNone(reply.made)
      setup = CaseSetup(
        SweptCase(_CASE, _CASE.name, True), (1, 8), given=(full,)
      )
      setup.prepare(Stopwatch())
      counted = _Counted(setup._made.checker)  # private: the test reaches in
      setup._made = dataclasses.replace(setup._made, checker=counted)
      r = setup.finish(reply, Stopwatch())
    (noise,) = r.prediction.noises
    self.assertIsNotNone(noise.rows)
    self.assertLess(len(noise.rows), 8)
    self.assertEqual(counted.rows, [noise.rows])  # once, on those rows
    self.assertEqual(r.made.judged, noise.rows)
    self.assertTrue(r.made.complete, r.made.not_executed)
    (worst,) = r.made.rows
    self.assertEqual(worst.judged, noise.rows)
    self.assertTrue(np.isfinite(r.made.stats.max_abs))
    self.assertEqual(config_json(r)["made"]["judged_rows"], list(noise.rows))


if __name__ == "__main__":
  absltest.main()
