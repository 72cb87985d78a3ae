"""`--executor=ray`: the seed sweep on a local Ray cluster (127.0.0.1,
started once for this file) gives the local run's results.json, a killed
Ray worker fails its one config, and Ray missing is one line.

The independent source is the local executor's own run of the same sweep
(`--executor=local`, the default), as issue 29 asks: the executor must
not change a result. Ray is in the extras `make test` installs
(pyproject.toml's `ray`); without it this file fails on its import,
naming the extra, and never skips.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
import warnings
from unittest import mock

import pytest
import testutil
from absl.testing import absltest

from hloprobe import engine
from hloprobe.runtime import RayPool, WorkerError, serve

# results.json without "created" and timings (`make bench` compares so too).
from hloprobe.tools.bench_shards import comparable as _comparable

try:
  import ray
except ImportError as e:  # a failure naming the extra, never a skip
  raise ImportError(
    "tests/runtime/ray_pool_test.py needs Ray, hloprobe's extra `ray`: "
    ".venv/bin/pip install -e '.[ray]' (`make test` installs it)"
  ) from e

# The seed sweep, small: cpu and a100, n = 1 (where the experiment
# changes the fates), one precision, plus an experiment (two flag sets:
# two actors).
_SWEEP = (
  "--case=seed_mlp",
  "--batch_sizes=1",
  "--precisions=float32",
  "--targets=cpu,a100",
  "--experiment=nodsr:--xla_disable_hlo_passes=dot-strength-reduction",
  "--jobs=2",
  "--nocache",
)


def _root(cls, name: str) -> str:
  """A new empty folder of `cls`'s own, removed after its tests."""
  root = tempfile.mkdtemp(prefix=f"hloprobe-{name}-")
  cls.addClassCleanup(shutil.rmtree, root, ignore_errors=True)
  return root


class RayMissingTest(absltest.TestCase):
  def test_missing_ray_is_one_line_naming_the_extra(self):
    with mock.patch.dict(sys.modules, {"ray": None}):  # `import ray` fails
      proc = testutil.run_hloprobe_here("sweep", "--executor=ray")
    self.assertEqual(proc.returncode, 2)
    self.assertEqual(
      proc.stderr.strip(),
      "hloprobe: error: --executor=ray needs Ray: `make full` installs it "
      "(hloprobe's extra `ray`: pip install -e '.[ray]', or .venv/bin/pip "
      "install 'ray>=2.60')",
    )

  def test_ray_address_needs_ray_executor(self):
    proc = testutil.run_hloprobe_here("sweep", "--ray_address=head:6379")
    self.assertEqual(proc.returncode, 2)
    self.assertIn("--ray_address=head:6379 needs --executor=ray", proc.stderr)

  def test_versions_and_bisect_refuse_executor_and_shard_saying_why(self):
    for command, flag in (
      ("versions", "--executor=ray"),
      ("bisect", "--executor=ray"),
      ("versions", "--shard=0/2"),
    ):
      proc = testutil.run_hloprobe_here(command, flag)
      self.assertEqual(proc.returncode, 2, proc.stderr)
      (line,) = proc.stderr.strip().splitlines()
      self.assertRegex(
        line,
        rf"^hloprobe: error: {flag.split('=')[0]} is for `hloprobe sweep.*`, "
        rf"not `hloprobe {command}` \(each release's sweep runs whole in "
        r"its own venv's Python, .*\); drop it$",
      )


# A local Ray cluster and two sweeps under the command line (about 70 s of
# test time): the `slow` tier, which `make test-slow` and CI run.
@pytest.mark.compiles
@pytest.mark.slow
class RayExecutorTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    with warnings.catch_warnings():
      # Ray's processes start by fork and exec at once, as RayPool says.
      warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
      ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
      )
    cls.addClassCleanup(ray.shutdown)
    cls.root = _root(cls, "ray_executor")
    cls.runs = {
      executor: testutil.run_hloprobe_here(
        "sweep",
        *_SWEEP,
        f"--executor={executor}",
        f"--output_dir={cls.root}/{executor}",
        timeout_s=900,
      )
      for executor in ("local", "ray")
    }

  def test_runs_succeed(self):
    for executor, proc in self.runs.items():
      self.assertEqual(proc.returncode, 0, (executor, proc.stderr))

  def test_an_actor_s_worker_over_the_memory_bound_is_stopped(self):
    # As a local worker (process_memory_test): importing jax in the
    # actor's worker is far over 64 MiB resident.
    with RayPool(max_worker_mb=64) as pool:
      with self.assertRaises(WorkerError) as caught:
        pool.call(serve.CheckXlaFlagsRequest())
    line = str(caught.exception)
    self.assertNotIn("\n", line)
    self.assertRegex(
      line,
      r"^worker went over --max_worker_mb=64 \(resident \d+ MiB, stage ",
    )

  def test_ray_results_json_equals_the_local_run(self):
    local, on_ray = (
      _comparable(os.path.join(self.root, e, "results.json"))
      for e in ("local", "ray")
    )
    self.assertLen(local["configs"], 4)
    self.assertEqual(on_ray, local)
    self.assertMultiLineEqual(
      self.runs["ray"].stdout, self.runs["local"].stdout
    )

  def test_killed_ray_worker_fails_one_config_only(self):
    plan = engine.spec_from_words(
      cases=["seed_mlp"],
      batch_sizes="1-2",
      precisions=["float32"],
      targets=["cpu"],
      jobs=1,
    )
    plan = engine.plan_sweep(plan, executor="ray")
    killed = []

    def kill_first(progress):
      # Before config 0 is collected: its actor's Ray worker is killed
      # while config 0 is its task (queued or running).
      if not killed:
        (pid,) = pool.lane_pids().values()
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    with engine.worker_pool(plan) as pool:  # on this file's cluster
      results = engine.run_sweep(plan, kill_first, pool=pool)
      self.assertEqual(pool.started, 2)  # the lane's actor, then a new one
    self.assertEqual([r.ok for r in results], [False, True])
    message = results[0].failure.error
    self.assertRegex(message, r"^Ray worker died \(XLA_FLAGS=''\): ")
    self.assertNotIn("\n", message)

  def test_interrupt_kills_the_actors_and_their_tasks(self):
    plan = engine.plan_sweep(
      engine.spec_from_words(
        cases=["seed_mlp"],
        batch_sizes="1-3",
        precisions=["float32"],
        targets=["cpu"],
        jobs=1,
      ),
      executor="ray",
    )
    pids = []

    def interrupt(progress):
      if progress.done == 1:  # config 1 is the actor's task by now
        pids.extend(pool.lane_pids().values())
        raise KeyboardInterrupt

    with self.assertRaises(KeyboardInterrupt):
      with engine.worker_pool(plan) as pool:
        engine.run_sweep(plan, interrupt, pool=pool)
    self.assertLen(pids, 1)
    for _ in range(100):  # ray.kill is asynchronous: up to 10 s
      if not _alive(pids[0]):
        break
      time.sleep(0.1)
    self.assertFalse(_alive(pids[0]), "the lane's actor outlived the interrupt")


def _alive(pid: int) -> bool:
  """Whether process `pid` runs (a zombie counts as ended)."""
  try:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
      return f.read().rsplit(")", 1)[1].split()[0] != "Z"
  except FileNotFoundError:
    return False


if __name__ == "__main__":
  absltest.main()
