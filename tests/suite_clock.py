"""The suite's clock: the ten slowest test files, and the budget check.

Registered by tests/conftest.py in the pytest process that reports (the
xdist controller, or the one process without xdist; never in an xdist
worker, whose reports the controller receives).

- At the end of a run of two or more files it prints the ten slowest
  files: each file's seconds summed over its tests' setup, call and
  teardown as pytest timed them (a file's setUpClass is in its first
  test's setup), in the worker that ran them.
- With `--suite-budget` (`make test` passes it) it fails the run when the session's wall time
  exceeds 1.25x tests/conftest.py's `SUITE_BUDGET_S`, scaled by how loaded the machine was when
  the session started: the budget is for idle cores, so it is multiplied
  by (load + cpus) / cpus, with `os.getloadavg()`'s one-minute load and
  the cpus this process may run on (1.0 on an idle machine; a load of 2
  on 2 cpus doubles it). The message states the load and the factor.
  The check is of the whole suite only: it is off when tests were
  selected by `-k`, `-m` (other than `make test`'s "not downloads"),
  `--lf`, or paths other than the tests folder, or when the run was
  interrupted; then it says so in one line.
"""

from __future__ import annotations

import collections
import os
import time

import pytest

# Fails above this multiple of the (load-scaled) budget.
SLACK = 1.25
# `make test`'s own marker expression: the whole suite but the downloads.
_WHOLE_SUITE_MARKERS = ("", "not downloads")


def cpus() -> int:
  """The cpus this process may run on."""
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # not on Linux
    return os.cpu_count() or 1


def load_factor(load: float, ncpu: int) -> float:
  """How much longer a run takes on a machine that others load: the cpus
  the others' `load` keeps busy added to the run's own, at least 1."""
  return max(1.0, (load + ncpu) / ncpu)


def slowest_files(seconds: dict[str, float], count: int = 10) -> list[str]:
  """Lines "  123.4 s  tests/x_test.py", the slowest first."""
  top = sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))[:count]
  return [f"{s:8.1f} s  {path}" for path, s in top]


def budget_verdict(
  wall_s: float, budget_s: float, load: float, ncpu: int
) -> tuple[bool, str]:
  """(over, the line that says so) for a whole-suite run."""
  factor = load_factor(load, ncpu)
  limit = SLACK * budget_s * factor
  words = (
    f"suite wall time {wall_s:.0f} s; budget {budget_s:.0f} s on idle "
    f"cores x {SLACK} x load factor {factor:.2f} (one-minute load "
    f"{load:.2f} on {ncpu} cpus at start) = {limit:.0f} s"
  )
  if wall_s > limit:
    return True, f"{words}: OVER BUDGET"
  return False, f"{words}: within"


class SuiteClock:
  """The pytest plugin object; one per reporting process."""

  def __init__(self, config, budget_s: float):
    self._config = config
    self._budget_s = budget_s
    self._start = time.monotonic()
    self._load = os.getloadavg()[0]
    self._seconds: dict[str, float] = collections.defaultdict(float)
    self._line: str | None = None

  @pytest.hookimpl
  def pytest_runtest_logreport(self, report):
    self._seconds[report.nodeid.split("::")[0]] += report.duration

  def _whole_suite(self, session) -> str | None:
    """Why this run is not the whole suite, or None when it is."""
    option = self._config.option
    if option.keyword:
      return f"-k {option.keyword!r}"
    if (option.markexpr or "") not in _WHOLE_SUITE_MARKERS:
      return f"-m {option.markexpr!r}"
    if getattr(option, "lf", False) or getattr(option, "failedfirst", False):
      return "--lf/--ff"
    tests = os.path.join(str(self._config.rootpath), "tests")
    args = [os.path.abspath(a) for a in self._config.args]
    if args != [tests]:
      return "paths " + " ".join(self._config.args)
    if session.shouldstop or session.shouldfail:
      return "the run stopped early"
    return None

  @pytest.hookimpl(tryfirst=True)
  def pytest_sessionfinish(self, session, exitstatus):
    if not self._config.getoption("suite_budget"):
      return
    if exitstatus == pytest.ExitCode.INTERRUPTED:
      self._line = "budget check off: the run was interrupted"
      return
    why_not = self._whole_suite(session)
    if why_not is not None:
      self._line = f"budget check off: not the whole suite ({why_not})"
      return
    over, self._line = budget_verdict(
      time.monotonic() - self._start, self._budget_s, self._load, cpus()
    )
    if over and exitstatus == pytest.ExitCode.OK:
      session.exitstatus = pytest.ExitCode.TESTS_FAILED

  @pytest.hookimpl
  def pytest_terminal_summary(self, terminalreporter):
    write = terminalreporter.write_line
    if len(self._seconds) >= 2:
      terminalreporter.section("ten slowest test files (sum of test times)")
      for line in slowest_files(self._seconds):
        write(line)
    if self._line is not None:
      terminalreporter.section("suite budget")
      write(self._line)
