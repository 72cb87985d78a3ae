"""What XLA made is executed in the worker that compiled the config
(issue 37).

A `CompileRequest` with `made` makes the config's executions of its
optimized module (`MadeChecker.runs`: hloprobe's numpy executor) after its
compile and run, in the worker, and its reply (`CompiledConfig.made`)
carries them, pickled; `CaseSetup.finish` judges those and runs nothing
itself. These tests show, for a running (cpu) and a compile-only (a100)
target, that the reply carries them through pickle, that finish does not
execute the module again where it has them (its checker's `runs` is never
called) and does where a reply has none, and that the records are the
ones finished the old way (the runs made in this process).

Compiles (marked): seed_mlp at n = 2 on the CPU and a100 targets, in this
process (the request's `run` is what a worker runs), its float64 reference
and emulations by jax on the CPU.
"""

from __future__ import annotations

import dataclasses
import pickle

import pytest
from absl.testing import absltest, parameterized

from hloprobe.compile import CASES, get_target
from hloprobe.engine.compiled import CompileRequest
from hloprobe.engine.measure import CaseSetup
from hloprobe.engine.plan import SweptCase
from hloprobe.execute.records import Execution
from hloprobe.ir import as_precision
from hloprobe.records import Config
from hloprobe.report.results_schema import config_json
from hloprobe.runtime import Stopwatch

_CASE = CASES["seed_mlp"]
_N = 2


class _Counted:
  """A checker whose `runs` calls are counted (`judged` passed on)."""

  def __init__(self, checker):
    self._checker, self.runs_called = checker, 0

  def runs(self, *args, **kwargs):
    self.runs_called += 1
    return self._checker.runs(*args, **kwargs)

  def judged(self, *args, **kwargs):
    return self._checker.judged(*args, **kwargs)


def _record(r) -> dict:
  return config_json(dataclasses.replace(r, timings={}))


@pytest.mark.compiles
class MadeInTheWorkerTest(parameterized.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.full = _CASE.full_inputs()

  def _reply(self, target: str, made: bool):
    """The worker's reply to the config's request, through pickle."""
    precision = as_precision("float32")
    config = Config(_CASE.name, get_target(target), _N, precision)
    request = CompileRequest(config, _CASE.name, self.full, made=made)
    reply = pickle.loads(pickle.dumps(request.run({})))
    self.assertTrue(reply.result.ok, reply.result.failure)
    return reply

  def _finished(self, work):
    """(finish's record of `work`, how often it executed the module)."""
    setup = CaseSetup(
      SweptCase(_CASE, _CASE.name, True), (1, _N), given=(self.full,)
    )
    setup.prepare(Stopwatch())
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

  def test_a_reply_not_asked_for_them_has_none(self):
    reply = self._reply("cpu", made=False)
    self.assertIsNone(reply.made)
    got, executed = self._finished(reply)
    self.assertEqual(executed, 1)
    self.assertTrue(got.made.complete, got.made.not_executed)


if __name__ == "__main__":
  absltest.main()
