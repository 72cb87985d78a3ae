"""`verify` on module cases (found trying to break issue 25 as a user).

A module runs at its one size, so "consistent" (row 0 across batch sizes)
has nothing to compare: `verify --case=<module>` failed every time with
"consistent needs at least two batch sizes; got n=8", and its default
--require includes consistent.

And `verify --require=invariant` on a user case (`path.py:factory`), the
command `explain` prints for its pins: it failed with "a user case's
program runs in hloprobe's worker processes only" (issue 38), because the
anchors' inputs were made in the main process. Expected values: the
case's program is exact in float32 (integer inputs in [-4, 4], 16
products of at most 16 summed, plus 1: every partial sum an integer below
2**24), so its rows have numpy's integer bits at every batch size,
whatever order XLA sums in: one class on the CPU.

And `verify --require=invariant` without --fix: the baseline judged as it
is (issue 38: a user passed a no-op `--fix=float32` to get it). Expected
values, none from hloprobe's output:
  * elementwise_only has no operation that mixes elements, so each row is
    numpy's float32 row at any batch size (tests/invariance/runs_test.py
    checks those bits): one class on cpu and on a100, PASS, exit 0;
  * tm_mm on cpu: the case's function jitted directly here, row 0
    compared as uint32 views (the classes are this CPU's: FAIL exactly
    when there are two or more);
  * tm_mm on a100: at n = 1 the lhs f32[1, 512] loses its degenerate row
    and is a vector (only contracting dimensions). XLA's GPU algebraic
    simplifier (xla/service/gpu/transforms/algebraic_simplifier.cc
    `ShouldStrengthReduceDotToReduce`) never strength-reduces a dot with
    no vector operand (n = 2, 8: gemm fusions) and does reduce a
    vector-matrix dot whose operands hold under 10^7 elements
    (`IsMatrixMultiplicationTooSmallForRewriting`: 512 + 512 x 256) to
    multiply+reduce. Another kernel computes row 0 at n = 1: FAIL, with
    n = 1 named.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex

import jax
import numpy as np
import pytest
import testutil
from absl.testing import absltest
from testutil import run_hloprobe_here

from hloprobe.commands import verify
from hloprobe.compile import CASES
from hloprobe.errors import InvalidArgumentError

_MODULE = os.path.join(
  os.path.dirname(os.path.dirname(__file__)),
  "testdata",
  "modfile",
  "jit_f.before_optimizations.txt",
)
_drop = verify._without_consistent_for_modules
_WORKERS = contextlib.ExitStack()


def setUpModule():
  # The module's in-process commands share warm workers (one per XLA_FLAGS
  # set; what a sweep computes does not depend on its workers being warm).
  _WORKERS.enter_context(testutil.shared_workers())


def tearDownModule():  # pytest calls it (not unittest's module cleanups)
  _WORKERS.close()


class ConsistentOnModulesTest(absltest.TestCase):
  def test_dropped_for_module_cases_only(self):
    got = _drop(("consistent", "accurate"), (_MODULE,))
    self.assertEqual(got, ("accurate",))

  def test_kept_for_program_cases(self):
    got = _drop(("consistent", "accurate"), ("seed_mlp",))
    self.assertEqual(got, ("consistent", "accurate"))

  def test_refused_mixed_or_alone(self):
    with self.assertRaisesRegex(InvalidArgumentError, "verify the module"):
      _drop(("consistent", "accurate"), (_MODULE, "seed_mlp"))
    with self.assertRaisesRegex(InvalidArgumentError, "--require=accurate"):
      _drop(("consistent",), (_MODULE,))


_USER_CASE = testutil.EXACT_MM_CASE


@pytest.mark.compiles
class InvariantOnUserCaseTest(absltest.TestCase):
  def test_explains_printed_command_judges_every_group(self):
    path = os.path.join(self.create_tempdir().full_path, "exact_case.py")
    with open(path, "w") as f:
      f.write(_USER_CASE)
    # The pin `explain --case=PATH:make_case --targets=a100 ...` lists,
    # as it prints it (the CPU beside it).
    proc = run_hloprobe_here(
      "verify",
      f"--case={path}:make_case",
      "--targets=cpu,a100",
      "--batch_sizes=1,2,8",
      "--precisions=float32",
      "--fix=no_dot_strength_reduction",
      "--require=invariant",
      "--nocache",
      timeout_s=300,
    )
    self.assertNotIn("worker processes only", proc.stderr)
    self.assertIn(proc.returncode, (0, 1), proc.stderr)
    evidence = proc.stdout.split("\ninvariant:\n")[1].split("\n\n")[0]
    groups = evidence.splitlines()
    self.assertLen(groups, 2, evidence)
    # The CPU: run in the workers, one class by construction.
    cpu = next(g for g in groups if " on cpu " in g)
    self.assertIn(
      "row 0 is batch-invariant on cpu under float32 "
      "(no_dot_strength_reduction) (bits compared): identical for n = 1-8",
      cpu,
    )
    self.assertIn("the anchor row", cpu)
    # The a100: judged by its kernels, not left unknown for want of the
    # case's inputs (the kernel model's are made in the case's worker).
    a100 = next(g for g in groups if " on a100 " in g)
    self.assertIn("(by kernel identity)", a100)
    self.assertNotIn("not computed", a100)


def _invariant_evidence(stdout: str) -> list[str]:
  """The "invariant:" section of `verify`'s text: a line per group."""
  return stdout.split("\ninvariant:\n")[1].split("\n\n")[0].splitlines()


def _row0_classes(name: str, sizes) -> int:
  """How many distinct row-0 bit patterns `name`'s function gives at
  `sizes`, jitted directly here (no hloprobe code runs it)."""
  case = CASES[name]
  full = case.full_inputs()
  fn = jax.jit(case.fn)
  rows = {
    np.asarray(fn(*case.inputs_for(full, n)))[0].view(np.uint32).tobytes()
    for n in sizes
  }
  return len(rows)


def readme_runs() -> list[tuple[list[str], str, int]]:
  """The README's Batch invariance section's `hloprobe verify` runs: each
  command's words (after `hloprobe`), the verdict line it prints and the
  exit status it says, as (words, line, status)."""
  with open(os.path.join(testutil.ROOT, "README.md"), encoding="utf-8") as f:
    text = f.read()
  section = text.split("\n## Batch invariance\n")[1].split("\n# ")[0]
  lines = section.splitlines()
  runs = []
  for command, said in zip(lines, lines[1:]):
    if command.startswith(".venv/bin/hloprobe verify "):
      verdict = re.fullmatch(r"(verify .*: (?:PASS|FAIL)) +\(exit (\d)\)", said)
      assert verdict, said  # the README prints each run's verdict line
      runs.append((shlex.split(command)[1:], verdict[1], int(verdict[2])))
  return runs


def _readme_run(case: str, fixed: bool) -> tuple[list[str], str, int]:
  """The README's verify run of `case`, with or without --fix."""
  (run,) = [
    r
    for r in readme_runs()
    if f"--case={case}" in r[0]
    and any(w.startswith("--fix=") for w in r[0]) == fixed
  ]
  return run


@pytest.mark.compiles
@pytest.mark.cpu_numerics
@pytest.mark.release_rules  # dot strength reduction at n = 1 (0.10.2 too)
class BaselineInvariantTest(absltest.TestCase):
  """`verify --require=invariant` without --fix: the program as it is,
  run as the README's Batch invariance section writes it."""

  def test_elementwise_control_passes_exit_0(self):
    words, line, status = _readme_run("elementwise_only", fixed=False)
    self.assertEqual(
      (line, status), ("verify (no --fix: the baseline as it is): PASS", 0)
    )
    proc = run_hloprobe_here(*words, "--format=json", timeout_s=300)
    self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
    doc = json.loads(proc.stdout)
    self.assertEqual(
      (doc["passed"], doc["fix"], doc["fix_kind"]), (True, None, "baseline")
    )
    (invariant,) = doc["requirements"]
    self.assertEqual(
      (invariant["name"], invariant["passed"]), ("invariant", True)
    )
    groups = invariant["evidence"]
    self.assertLen(groups, 2, groups)
    for target in ("cpu", "a100"):
      (group,) = [g for g in groups if f" on {target} " in g]
      self.assertRegex(group, f"row 0 [^;]*is batch-invariant on {target} ")
    # Nothing was compared: no fix, so no fate or error changes.
    self.assertEqual((doc["fate_changes"], doc["row0_errors"]), ([], []))

  def test_tm_mm_fails_naming_the_boundary(self):
    words, line, status = _readme_run("tm_mm", fixed=False)
    self.assertIn("--targets=cpu,a100", words)
    self.assertIn("--batch_sizes=1,2,8", words)
    cpu_classes = _row0_classes("tm_mm", (1, 2, 8))
    proc = run_hloprobe_here(*words, timeout_s=300)
    self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
    self.assertEqual(
      (proc.returncode, proc.stdout.splitlines()[0]), (status, line)
    )
    self.assertRegex(proc.stdout, r"\ninvariant +FAIL ")
    groups = _invariant_evidence(proc.stdout)
    (cpu,) = [g for g in groups if " on cpu " in g]
    (a100,) = [g for g in groups if " on a100 " in g]
    self.assertEqual(
      bool(re.search("row 0 [^;]*is not batch-invariant on cpu ", cpu)),
      cpu_classes > 1,
      cpu,
    )
    # n = 1 strength-reduced (multiply+reduce), n = 2 and 8 a gemm.
    self.assertRegex(a100, "row 0 [^;]*is not batch-invariant on a100 ")
    self.assertIn("multiply+reduce at n = 1", a100)
    # No fix: nothing about a fix's changes.
    self.assertNotIn("the fix changes", proc.stdout)

  def test_readmes_pin_passes_as_it_says(self):
    # The pin explain printed for tm_mm on a100 (the README's run with
    # --fix): its verdict and exit status as the README shows them.
    words, line, status = _readme_run("tm_mm", fixed=True)
    proc = run_hloprobe_here(*words, timeout_s=300)
    self.assertEqual(
      (proc.returncode, proc.stdout.splitlines()[0]),
      (status, line),
      proc.stdout + proc.stderr,
    )


if __name__ == "__main__":
  absltest.main()
