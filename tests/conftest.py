"""pytest setup shared by the absltest-based tests.

The `compiles` marker is checked, not trusted: a test that starts XLA
(a backend compile in this process, which running any jax computation
does) or starts a Python process (`python -m hloprobe`, a sweep's worker)
fails unless it is marked `compiles`, so `make test-fast`
(`-m "not compiles"`) stays free of them. Compiles are seen through jax's
public monitoring events (`/jax/core/compile/backend_compile_duration`,
jax/_src/dispatch.py, jax 0.10.2 and 0.12.0.1), processes through
Python's audit events (`subprocess.Popen`, `os.system`, `os.posix_spawn`,
`os.fork`; a Popen counts when it starts a Python, as `python -m hloprobe`,
a worker or a `-c` script does). jax caches what it compiled, so a test that recompiles
nothing new (one compiled by an earlier marked test) is not caught in a
full run; `make test-fast` runs no marked test, so it sees them all.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

import pytest
from absl import flags

# Compile-only GPU targets need the CUDA plugin registered although no CUDA
# runtime is present; its version check would unregister it. Must be set
# before any test starts a JAX backend (see hloprobe.cli._start_jax).
os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")

# The command line caches records under $XDG_CACHE_HOME/hloprobe by default;
# a test run (and the processes it starts) gets an empty one of its own.
# One for the whole run: the pytest process that starts first makes it, and
# `make test`'s xdist workers (started after this file is imported, with
# its environment) use the same one, so a config one worker swept is a hit
# for the others. The record cache is safe to share between processes
# (hloprobe/runtime/cache.py: entries written whole, a vanished or torn
# entry a miss); a test that needs a miss passes --nocache or a
# --cache_dir of its own. Only the process that made it removes it.
_SHARED_CACHE_ENV = "HLOPROBE_TEST_CACHE_HOME"
_CACHE_HOME = os.environ.get(_SHARED_CACHE_ENV, "")
if not os.path.isdir(_CACHE_HOME):
  _CACHE_HOME = tempfile.mkdtemp(prefix="hloprobe-test-cache-")
  os.environ[_SHARED_CACHE_ENV] = _CACHE_HOME
  atexit.register(shutil.rmtree, _CACHE_HOME, ignore_errors=True)
os.environ["XDG_CACHE_HOME"] = _CACHE_HOME

# After the environment above: importing jax starts no backend.
import jax.monitoring  # noqa: E402

_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_SPAWN_EVENTS = frozenset(
  ("subprocess.Popen", "os.system", "os.posix_spawn", "os.fork")
)


class _XlaUse:
  """What the running test phase started; one per pytest process."""

  def __init__(self):
    self.watching = False
    self.seen: list[str] = []

  def on_compile(self, event: str, duration_s: float, **kwargs) -> None:
    del duration_s
    if self.watching and event == _COMPILE_EVENT:
      self.seen.append(f"an XLA compile of {kwargs.get('fun_name', '?')}")

  def on_audit(self, event: str, args: tuple) -> None:
    if not (self.watching and event in _SPAWN_EVENTS):
      return
    if event in ("subprocess.Popen", "os.posix_spawn"):
      # Popen: (executable, args, cwd, env); posix_spawn: (path, argv, env).
      executable, argv = args[0], args[1]
      if isinstance(argv, (str, bytes, os.PathLike)):
        argv = [argv]
      program = os.fsdecode(executable or argv[0])
      # A shell script or ptxas --version starts no Python, jax nor XLA.
      if not os.path.basename(program).startswith("python"):
        return
      # module_guard's reader: one per test process, kept between reads
      # (compile/module_guard.py), started by whichever test reads a
      # module file first; not the test's own cost.
      if _GUARD_CHILD in argv:
        return
      args = argv
    self.seen.append(f"a process ({event}: {str(args)[:160]})")


from hloprobe.compile import module_guard  # noqa: E402

_GUARD_CHILD = module_guard._CHILD
_USE = _XlaUse()
jax.monitoring.register_event_duration_secs_listener(_USE.on_compile)
sys.addaudithook(_USE.on_audit)


# The whole suite's budget, in wall seconds on 2 idle cores (issue 36: 8
# minutes). `make test` passes --suite-budget: tests/suite_clock.py then
# fails the run above 1.25x it, scaled by the machine's load at the start.
SUITE_BUDGET_S = 480


def pytest_addoption(parser):
  parser.addoption(
    "--suite-budget",
    action="store_true",
    help="fail a whole-suite run whose wall time exceeds 1.25x "
    "tests/conftest.py's SUITE_BUDGET_S, scaled by the load at the start "
    "(tests/suite_clock.py)",
  )


def pytest_configure(config):
  """Marks absl flags parsed, so absltest helpers (create_tempdir) work;
  starts the suite's clock where reports arrive (not in xdist workers)."""
  if not flags.FLAGS.is_parsed():
    flags.FLAGS.mark_as_parsed()
  if not hasattr(config, "workerinput"):
    import suite_clock  # tests/ is on pyproject.toml's pythonpath

    config.pluginmanager.register(
      suite_clock.SuiteClock(config, SUITE_BUDGET_S), "suite_clock"
    )


# The files that take longest, longest first. `make test` (pytest-xdist,
# --dist loadfile --no-loadscope-reorder) hands whole files to its workers
# in collection order, each worker taking the next file as it runs out:
# these first, the many short files after them, so that the workers end
# together (longest processing time first). A file missing here only runs
# later, near the end of collection order; a slow new file belongs in the
# list. The seconds: the first ten are the ten slowest files `make test`
# printed at 34ceff7 (2026-12-05, one-minute load 0.17 on 2 cores, three
# workers; a file's setUpClass included, and the seconds it waits on worker
# processes and timeouts). In parentheses, those of an earlier whole run
# (`pytest -n 2 --dist loadfile` at a load of 3 to 12 from other sessions,
# so about twice an idle machine's), kept in that run's order. Nine files
# were missing ("new": run alone at a load of 13 to 18, about four times an
# idle machine's, or in `make test` at 16) and are put among those of
# about their length.
LONGEST_FIRST = (
  "tests/verify/fix_test.py",  # 126 (make test at load 2.6-8, 2026-12-06 04:31)
  "tests/report/explain_user_model_test.py",  # 112
  "tests/compile/module_case_story_test.py",  # 90
  "tests/compile/builtin_cases_test.py",  # 79
  "tests/pictures/html_report_test.py",  # 60
  "tests/versions/venvs_test.py",  # 57
  "tests/engine/guarded_test.py",  # 55
  "tests/commands/versions_test.py",  # 54
  "tests/engine/guarded_cli_test.py",  # 51
  "tests/numerics/predict_test.py",  # 44
  "tests/compile/cases_user_test.py",  # 50
  "tests/runtime/pool_test.py",  # 49
  "tests/golden/update_test.py",  # 35
  "tests/invariance/answer_test.py",  # 47 (last session)
  "tests/invariance/pin_test.py",  # new: ~20 alone
  "tests/cli/main_test.py",  # (105)
  "tests/pictures/outputs_test.py",  # (86)
  "tests/runtime/serve_test.py",  # (72)
  "tests/compile/placement_users_test.py",  # (71)
  "tests/runtime/cache_sweep_test.py",  # (70)
  "tests/runtime/host_test.py",  # (69)
  "tests/runtime/ray_pool_test.py",  # (69)
  "tests/report/explain_answer_test.py",  # (66)
  "tests/compile/module_guard_test.py",  # new: 94 alone, load 16
  "tests/invariance/in_workers_test.py",  # new: 45 alone, load 14
  "tests/tools/fuzz_modules_test.py",  # new: 31, load 16
  "tests/compile/cases_readme_test.py",  # (59)
  "tests/numerics/made_test.py",  # (58)
  "tests/report/explain_test.py",  # (54)
  "tests/report/files_test.py",  # (53)
  "tests/numerics/emulate_orders_test.py",  # (49)
  "tests/pytest_plugin_test.py",  # (49)
  "tests/pictures/explorer_server_test.py",  # (48)
  "tests/golden/folder_secure_test.py",  # (48)
  "tests/numerics/predict_conv_test.py",  # (44)
  "tests/compile/lowering_gpu_test.py",  # (44)
  "tests/sites/rejection_test.py",  # (40)
  "tests/cli/main_reliability_test.py",  # (39)
  "tests/commands/explain_test.py",  # new: 76 alone, load 13-18
  "tests/compile/autotune_replay_test.py",  # (37)
  "tests/numerics/emulation_cache_test.py",  # (34)
  "tests/numerics/integers_test.py",  # (33)
  "tests/golden/folder_default_test.py",  # new: 67 alone, load 13-18
  "tests/numerics/site_notes_test.py",  # (32)
  "tests/report/results_schema_test.py",  # new: 62 alone, load 13-18
  "tests/versions/run_test.py",  # (30)
  "tests/runtime/process_test.py",  # (29)
  "tests/engine/guarded_reuse_test.py",  # new: 57 alone, load 13-18
  "tests/numerics/rows_planted_test.py",  # (27)
  "tests/api/calls_notebook_test.py",  # (26)
  "tests/sites/identify_test.py",  # (26)
  "tests/commands/merge_test.py",  # (25)
  "tests/ir/canonical_test.py",  # (25)
  "tests/numerics/emulate_attention_test.py",  # (24)
  "tests/numerics/verdicts_headline_test.py",  # (24)
  "tests/sites/passes_test.py",  # (22)
  "tests/runtime/cache_test.py",  # (22)
  "tests/engine/engine_reuse_test.py",  # new: 45 alone, load 13-18
  "tests/cli/main_gpu_targets_test.py",  # (21)
  "tests/numerics/emulate_test.py",  # (21)
  "tests/invariance/kernel_identity_gpu_test.py",  # (21)
  "tests/numerics/reference_ref64_test.py",  # (20)
  "tests/numerics/reference_test.py",  # (20)
  "tests/engine/engine_test.py",  # (20)
  "tests/api/running_test.py",  # new: 41 alone, load 13-18
  "tests/engine/engine_sharded_test.py",  # (19)
  "tests/numerics/emulate_dot_test.py",  # (19)
  "tests/numerics/verdicts_fp8_test.py",  # (19)
  "tests/numerics/emulate_many_test.py",  # (16)
  "tests/invariance/runs_test.py",  # (15)
  "tests/golden/update_scope_test.py",  # (15)
  "tests/compile/experiments_test.py",  # (15)
  "tests/api/calls_same_results_test.py",  # (14)
  "tests/layering_test.py",  # (14)
  "tests/cli/flags_test.py",  # (12)
  "tests/numerics/kept_test.py",  # (12)
)


def pytest_collection_modifyitems(session, config, items):
  """Puts LONGEST_FIRST's files first, in its order; the rest keep theirs."""
  del session, config
  rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
  items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def _watched(item):
  """Runs one phase of `item`; fails it if it started XLA unmarked."""
  if item.get_closest_marker("compiles") is not None:
    return (yield)
  _USE.watching, _USE.seen = True, []
  try:
    result = yield
  finally:
    _USE.watching = False
  if _USE.seen:
    pytest.fail(
      f"{item.nodeid} is not marked `compiles` but started "
      f"{_USE.seen[0]} ({len(_USE.seen)} in all): mark it "
      "@pytest.mark.compiles, or test the stage on a recorded fixture",
      pytrace=False,
    )
  return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
  return (yield from _watched(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
  return (yield from _watched(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
  del nextitem
  return (yield from _watched(item))
