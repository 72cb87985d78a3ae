"""A sweep's words are resolved once: `plan_sweep`, and nothing after it.

The walk test follows one config from the command line's words to its
printed row, in this process (the compile runs in a worker, as always),
counting every call of the resolvers: the case, the target and the
precision are each looked up once.
"""

from __future__ import annotations

import contextlib
import functools
import io
import sys

import numpy as np
import pytest
from absl.testing import absltest, flagsaver

from hloprobe import engine
from hloprobe.cli import _flags as cli_flags
from hloprobe.cli import _main as cli
from hloprobe.compile import cases, experiments, targets
from hloprobe.engine import shared
from hloprobe.errors import CaseError
from hloprobe.ir import precisions

# The functions that turn a name into a record.
_RESOLVERS = (cases.get_case, targets.get_target, precisions.as_precision)


@contextlib.contextmanager
def _counted(*functions):
  """Wraps `functions` wherever a hloprobe module holds them (any alias
  `from m import f` made), and yields {function name: [first args]}."""
  calls = {f.__name__: [] for f in functions}

  def wrap(f):
    @functools.wraps(f)
    def counting(*args, **kwargs):
      calls[f.__name__].append(args[0] if args else None)
      return f(*args, **kwargs)

    return counting

  wrappers = {id(f): wrap(f) for f in functions}
  patched = []
  for module in list(sys.modules.values()):
    if not getattr(module, "__name__", "").startswith("hloprobe"):
      continue
    for name, value in list(vars(module).items()):
      if id(value) in wrappers:
        patched.append((module, name, value))
        setattr(module, name, wrappers[id(value)])
  try:
    yield calls
  finally:
    for module, name, value in patched:
      setattr(module, name, value)


class PlanTest(absltest.TestCase):
  def test_each_name_is_looked_up_once(self):
    spec = engine.SweepSpec(
      ("seed_mlp", "seed_mlp"), (1, 2), ("float32",) * 2, ("cpu", "a100")
    )
    with _counted(*_RESOLVERS) as calls:
      plan = engine.plan_sweep(spec)
    self.assertEqual(
      calls,
      {
        "get_case": ["seed_mlp"],
        "get_target": ["cpu", "a100"],
        "as_precision": ["float32", "float32"],  # each word, kept once
      },
    )
    self.assertEqual(plan.precisions, (precisions.Precision.float32,))
    self.assertIs(plan.cases[0].case, cases.seed_mlp)
    with _counted(*_RESOLVERS) as calls:  # a plan is records already
      self.assertEqual(engine.plan_sweep(plan), plan)
    self.assertEqual(calls, {f.__name__: [] for f in _RESOLVERS})

  def test_each_config_carries_its_records(self):
    e = experiments.Experiment.parse("no_algsimp")
    plan = engine.plan_sweep(
      engine.SweepSpec(
        ("seed_mlp",), (1,), ("bfloat16",), ("cpu",), experiments=(e,)
      )
    )
    base, fixed = plan.configs()
    self.assertEqual(
      fixed.config.label(), "cpu seed_mlp n=1 bfloat16 (no_algsimp)"
    )
    self.assertIs(fixed.experiment, e)
    self.assertIs(base.case, fixed.case)
    self.assertIs(base.config.precision, precisions.Precision.bfloat16)

  def test_a_spec_checks_nothing_until_planned(self):
    spec = engine.SweepSpec(("no_such_case",), (1,), ("float32",), ("cpu",))
    with self.assertRaisesRegex(CaseError, "unknown case 'no_such_case'"):
      engine.plan_sweep(spec)

  def test_cases_are_read_only(self):
    with self.assertRaises(TypeError):
      cases.CASES["mine"] = cases.seed_mlp  # pass the record in a spec


def _by_size(**lanes) -> dict:
  """{(target, n): lane} from each target's lanes at n = 1, 2, 8."""
  return {
    (target, n): lane
    for target, at in lanes.items()
    for n, lane in zip((1, 2, 8), at)
  }


class LanesOfTest(absltest.TestCase):
  """`PlannedConfig.lanes_of`: a case, target and n's configs together,
  the groups by their estimated cost (a GPU config 4, a CPU config 1,
  each plus n over the largest n), the costliest first to the least
  loaded lane (the lower on a tie)."""

  @staticmethod
  def _dealt(sizes, targets, lanes):
    plan = engine.plan_sweep(
      engine.SweepSpec(("seed_mlp",), sizes, ("bfloat16", "float32"), targets)
    )
    configs = plan.configs()
    dealt = engine.PlannedConfig.lanes_of(configs, lanes)
    return {
      (c.config.target.name, c.config.n): lane
      for c, lane in zip(configs, dealt)
    }

  def test_gpt2_shaped_sweep_gives_each_lane_gpu_compiles(self):
    # Group costs (both precisions): a100 n = 8, 2, 1: 10, 8.5, 8.25; cpu
    # n = 8, 2, 1: 4, 2.5, 2.25. a100 8 -> 0, 2 -> 1, 1 -> 1 (loads 10,
    # 16.75); cpu 8, 2, 1 -> 0 (18.75). Dealt in turn before, one lane
    # had four a100 compiles and two CPU configs, the other two and four:
    # it idled for the last 7 s of a 28-s sweep.
    self.assertEqual(
      self._dealt((1, 2, 8), ("cpu", "a100"), 2),
      _by_size(cpu=(0, 0, 0), a100=(1, 1, 0)),
    )

  def test_three_lanes_and_one(self):
    # Three lanes: a100 8, 2, 1 -> 0, 1, 2 (10, 8.5, 8.25); cpu 8 -> 2
    # (12.25), 2 -> 1 (11), 1 -> 0 (12.25).
    self.assertEqual(
      self._dealt((1, 2, 8), ("cpu", "a100"), 3),
      _by_size(cpu=(0, 1, 2), a100=(2, 1, 0)),
    )
    self.assertEqual(
      set(self._dealt((1, 2, 8), ("cpu", "a100"), 1).values()), {0}
    )


@pytest.mark.compiles
class WalkTest(absltest.TestCase):
  def test_command_line_to_printed_row_resolves_each_once(self):
    out = io.StringIO()
    with (
      flagsaver.as_parsed(
        (cli_flags.CASE, "seed_mlp"),
        (cli_flags.TARGETS, "cpu"),
        (cli_flags.BATCH_SIZES, "1"),
        (cli_flags.PRECISIONS, "float32"),
        (cli_flags.CACHE_DIR, self.create_tempdir().full_path),
      ),
      _counted(*_RESOLVERS) as calls,
      contextlib.redirect_stdout(out),
    ):
      status = cli.main(["hloprobe", "sweep"])
    self.assertEqual(status, 0, out.getvalue())
    self.assertEqual(
      calls,
      {
        "get_case": ["seed_mlp"],
        "get_target": ["cpu"],
        "as_precision": ["float32"],
      },
    )
    (row,) = [
      line for line in out.getvalue().splitlines() if "seed_mlp" in line
    ]
    for word in ("cpu", "float32"):
      self.assertIn(word, row)


class SharedInputsTest(absltest.TestCase):
  """`SweptCase.shared_inputs`: a large leaf crosses as a file record
  whose mapped bytes are the arrays' own; a small one, a record shared
  already, or no folder, as given."""

  def test_large_leaf_is_a_file_of_the_same_bytes(self):
    folder = self.create_tempdir().full_path
    big = np.arange(1 << 19, dtype=np.float32) * np.float32(0.1)  # 2 MiB
    small = np.arange(4, dtype=np.int32)
    full = (big, {"w": small})
    found = engine.SweptCase.shared_inputs(full, folder)
    self.assertIsInstance(found, shared.SharedInputs)
    self.assertIs(engine.SweptCase.shared_inputs(found, folder), found)
    got_big, got = engine.SweptCase.resolved_inputs(found)
    np.testing.assert_array_equal(got_big.view(np.uint32), big.view(np.uint32))
    np.testing.assert_array_equal(got["w"], small)
    self.assertIs(engine.SweptCase.shared_inputs(full, None), full)
    self.assertIs(engine.SweptCase.shared_inputs((small,), folder)[0], small)


if __name__ == "__main__":
  absltest.main()
