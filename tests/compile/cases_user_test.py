"""A user's own program as a case: `--case=module:factory` and `file.py:factory`."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

import numpy as np
import pytest
import testutil
from absl.testing import absltest, parameterized
from testutil import run_hloprobe, run_hloprobe_here

from hloprobe import engine
from hloprobe.compile import cases
from hloprobe.errors import CaseError
from hloprobe.report import requirement_lines
from hloprobe.report.verdict_words import leaf_verdicts
from hloprobe.runtime import WorkerPool
from hloprobe.verify import fix as verify_fix
from hloprobe.verify import outcome as verify_outcome

# Compiles with XLA (`make test-fast` skips it).
pytestmark = pytest.mark.compiles

# Two arguments (x cut along axis 0, w shared), a pytree output with a
# scalar loss (no batch axis) and a batched leaf.
_MODULE = textwrap.dedent("""
  import numpy as np
  import jax.numpy as jnp
  import hloprobe

  def _fn(x, w):
    y = x @ w
    return {"loss": jnp.mean(y * y), "y": y}

  def _inputs():
    g = np.random.default_rng(0)
    return (g.standard_normal((4, 256)).astype(np.float32),
            g.standard_normal((256, 64)).astype(np.float32))

  def make():
    return hloprobe.Case("mine", "two arguments, a loss and y", _fn, _inputs,
                         in_axes=(0, None), output_axis=(None, 0))

  def bad_axis():
    return hloprobe.Case("bad", "", _fn, _inputs, in_axes=(2, None))

  def disagree():
    return hloprobe.Case("dis", "", _fn, _inputs, in_axes=(0, 1))

  def seed_again():
    return hloprobe.get_case("seed_mlp")

  def raises():
    raise RuntimeError("boom")

  def other():
    return 42
""")


def setUpModule():
  global _DIR, _FILE
  # The module's own folder (a fixed path would meet a concurrent run's).
  _DIR = tempfile.mkdtemp(prefix="hloprobe-cases-user-")
  unittest.addModuleCleanup(shutil.rmtree, _DIR, ignore_errors=True)
  os.makedirs(os.path.join(_DIR, "userpkg"), exist_ok=True)
  _FILE = os.path.join(_DIR, "userpkg", "mycase.py")
  with open(_FILE, "w") as f:
    f.write(_MODULE)
  with open(os.path.join(_DIR, "userpkg", "__init__.py"), "w") as f:
    f.write("")
  with open(os.path.join(_DIR, "broken.py"), "w") as f:
    f.write("import no_such_package_xyz\n")
  sys.path.insert(0, _DIR)


class LoadTest(parameterized.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    # The bad inputs share one kept loader's worker (one Python and jax
    # import, not seven).
    cls.loader = cls.enterClassContext(testutil.shared_case_loader())

  def test_file_and_module_give_the_same_case(self):
    by_file = cases.get_case(f"{_FILE}:make")
    by_module = cases.get_case("userpkg.mycase:make")
    self.assertEqual((by_file.name, by_module.name), ("mine", "mine"))

  @parameterized.named_parameters(
    (
      "module_not_found",
      "no_such_mod_xyz:make",
      "case module 'no_such_mod_xyz' not found",
    ),
    (
      "import_fails",
      "broken.py:make",
      "case module '.*broken.py' failed to import: ModuleNotFoundError",
    ),
    (
      "attribute_missing",
      "userpkg.mycase:nope",
      "case module 'userpkg.mycase' has no attribute 'nope'",
    ),
    (
      "factory_raises",
      "userpkg.mycase:raises",
      "case factory userpkg.mycase:raises raised RuntimeError: boom",
    ),
    (
      "axis_out_of_range",
      "userpkg.mycase:bad_axis",
      "case 'bad': batch axis 2 out of range for argument 0",
    ),
    (
      "batch_sizes_disagree",
      "userpkg.mycase:disagree",
      r"case 'dis': arguments disagree on the batch size \(argument 0 axis 0:"
      r" 4, argument 1 axis 1: 64\)",
    ),
    (
      "given_twice_by_name",
      "seed_mlp,userpkg.mycase:seed_again",
      "case 'seed_mlp' given twice",
    ),
  )
  # A factory that returns no Case: CommandLineTest's
  # test_bad_case_is_one_line_exit_2 (its message, one line, exit 2).
  def test_bad_input_is_one_case_error(self, names, message):
    if names.startswith("broken"):
      names = os.path.join(_DIR, names)
    spec = engine.SweepSpec(
      tuple(names.split(",")), (1,), ("float32",), ("cpu",)
    )
    with WorkerPool() as pool:
      with self.assertRaisesRegex(CaseError, message) as cm:
        # Names fail as the plan is made; a case's inputs as the sweep
        # makes them (in its loader's worker), before any config compiles.
        engine.run_sweep(engine.plan_sweep(spec), pool=pool)
    self.assertNotIn("\n", str(cm.exception))
    # No config compiled: at most the baseline's lane 0 was started, to
    # import jax while the inputs were made (`_Sweep._early_lanes`).
    self.assertLessEqual(pool.started, 1)
    self.assertEqual(self.loader.started, 1)  # one loader for all of them

  def test_the_same_name_twice_is_swept_once(self):
    # One rule for repeats (README, Reliability): the same word twice is
    # swept once; one case under two names is the error above.
    spec = engine.SweepSpec(
      ("seed_mlp", "seed_mlp"), (1,), ("float32",), ("cpu",)
    )
    self.assertEqual(engine.plan_sweep(spec).case_names, ("seed_mlp",))

  def test_batch_size_beyond_the_input_is_an_error(self):
    case = cases.get_case("userpkg.mycase:make")
    with self.assertRaisesRegex(
      CaseError, "batch size 5 exceeds the .* of case 'mine'"
    ):
      case.inputs_for(case.full_inputs(), 5)


def _numpy_y(n: int) -> np.ndarray:
  """The module's y = x @ w at batch size n, in numpy float64."""
  g = np.random.default_rng(0)
  x = g.standard_normal((4, 256)).astype(np.float32)[:n].astype(np.float64)
  w = g.standard_normal((256, 64)).astype(np.float32).astype(np.float64)
  return x @ w


@pytest.mark.cpu_numerics
class LossAndBatchedLeafTest(absltest.TestCase):
  """A scalar loss beside a batched y: rows and `verify` are about y."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    spec = engine.SweepSpec((f"{_FILE}:make",), (1, 2), ("float32",), ("cpu",))
    fix, require = verify_fix.parse_fix("float32"), ("consistent", "accurate")
    plan = engine.plan_sweep(verify_fix.fix_sweep(spec, fix, require))
    with WorkerPool() as pool:
      cls.results = engine.run_sweep(plan, pool=pool)
    # Worker processes started: the plan's (the case loaded), the sweep's.
    cls.started = (plan.cases[0].loader.started, pool.started)
    cls.verification = verify_outcome.verify(
      cls.results, spec, fix, require, versions={}
    )

  def test_the_worker_that_loaded_the_case_makes_its_references(self):
    # One process loads the case and makes its inputs, references and
    # predictions; the sweep's pool starts only the one compile worker.
    self.assertEqual(self.started, (1, 1))

  def test_headline_is_the_batched_leaf_at_every_n(self):
    for r in self.results:
      self.assertTrue(r.ok, r.failure)
      self.assertEqual(r.execution.stats.leaf, "['y']", r.config.label())
      self.assertEqual(r.prediction.leaf, "['y']", r.config.label())
      # y[0, 0] from numpy float64 (f32 error of a K = 256 sum is ~1e-5).
      want = _numpy_y(r.config.n)[0, 0]
      self.assertAlmostEqual(r.execution.stats.row0, want, delta=1e-3)

  def test_consistent_passes_though_the_loss_moves_with_n(self):
    # The loss (a mean over the batch) legitimately changes with n.
    loss1, loss2 = (np.mean(_numpy_y(n) ** 2) for n in (1, 2))
    self.assertGreater(abs(loss1 - loss2), 1.0)
    consistent, _ = self.verification.requirements
    self.assertTrue(consistent.passed, consistent.evidence)
    (line,) = requirement_lines(consistent)  # the evidence in words
    match = re.match(
      r"cpu mine n=2 float32: row 0 \['y'\] \(first values\) (\S+) vs "
      r"(\S+) at n=1, moved \S+, the largest of its 64 values ",
      line,
    )
    self.assertIsNotNone(match, line)  # y has 64 values per row
    # Both sides are y[0, 0] (numpy float64), not the loss.
    for got in match.groups():
      self.assertAlmostEqual(float(got), _numpy_y(1)[0, 0], delta=1e-3)

  def test_accurate_judges_y_and_the_loss(self):
    _, accurate = self.verification.requirements
    self.assertTrue(accurate.passed, accurate.evidence)
    # y by its numbers, the loss by verdict
    for line in requirement_lines(accurate):
      self.assertRegex(line, r"^cpu mine n=[12] float32: \['y'\] row-0 ")
      self.assertIn("limits row-0 |err| ", line)
    for r in self.results:
      verdicts = dict(leaf_verdicts(r.prediction))
      self.assertEqual(verdicts["['loss']"], "within f32 noise")


def _sweep_json(test, *args: str) -> dict:
  """`hloprobe sweep ARGS` in this process, asserted to exit 0: its JSON
  (test_explain_verify_and_experiment_by_module_name runs one whole)."""
  proc = run_hloprobe_here("sweep", *args, timeout_s=600)
  test.assertEqual(proc.returncode, 0, proc.stderr)
  return json.loads(proc.stdout)


@pytest.mark.cpu_numerics
class CommandLineTest(absltest.TestCase):
  """sweep, explain, verify and an experiment on the user's file, as a user."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    # The in-process commands share warm workers (started with this
    # module's folder on sys.path, setUpModule), and one case loader.
    cls.enterClassContext(testutil.shared_workers())
    cls.enterClassContext(testutil.shared_case_loader())

  def test_sweep_on_cpu_and_a100(self):
    configs = _sweep_json(
      self,
      f"--case={_FILE}:make",
      "--targets=cpu,a100",
      "--format=json",
      "--batch_sizes=2",  # the one size asserted
      "--precisions=default",
    )["configs"]
    cpu2 = next(c for c in configs if c["target"] == "cpu" and c["n"] == 2)
    leaves = {x["leaf"]: x for x in cpu2["numerics"]["leaves"]}
    self.assertEqual(set(leaves), {"['loss']", "['y']"})
    # Independent reference: numpy float64 at n = 2 (not a slice of n = 2's
    # rows of a bigger batch: the loss is a mean over the batch).
    g = np.random.default_rng(0)
    x = g.standard_normal((4, 256)).astype(np.float32)[:2].astype(np.float64)
    w = g.standard_normal((256, 64)).astype(np.float32).astype(np.float64)
    y = x @ w
    self.assertAlmostEqual(
      leaves["['loss']"]["row0_ref_f64"], np.mean(y * y), delta=1e-9
    )
    self.assertAlmostEqual(leaves["['y']"]["row0_ref_f64"], y[0, 0], 12)
    a100 = {c["n"]: c for c in configs if c["target"] == "a100"}
    self.assertEqual(a100[2]["fate_summary"], "Triton gemm x1")
    verdicts = dict(a100[2]["prediction"]["leaf_verdicts"])
    self.assertEqual(
      verdicts["['y']"], "explained by TF32_TF32_F32 at sites [0]"
    )

  def test_case_file_imports_a_module_beside_it(self):
    # As `python path/to/case.py` could: the file's folder is importable
    # (in the worker that compiles it too). The folder is on no path.
    folder = self.create_tempdir().full_path
    with open(os.path.join(folder, "beside_helper.py"), "w") as f:
      f.write("SCALE = 3.0\n")
    case_file = os.path.join(folder, "case_beside.py")
    with open(case_file, "w") as f:
      f.write(
        textwrap.dedent("""
          import numpy as np
          import hloprobe
          import beside_helper

          def make():
            return hloprobe.Case(
              "beside", "", lambda x: x * beside_helper.SCALE,
              lambda: (np.arange(4, dtype=np.float32).reshape(4, 1) + 1,))
        """)
      )
    (config,) = _sweep_json(
      self,
      f"--case={case_file}:make",
      "--targets=cpu",
      "--format=json",
      "--batch_sizes=1",
      "--precisions=float32",
    )["configs"]
    self.assertEqual(config["status"], "ok", config["error"])
    self.assertEqual(config["numerics"]["row0"], 3.0)  # 1 * SCALE, exact

  def test_explain_verify_and_experiment_by_module_name(self):
    env = {"PYTHONPATH": _DIR}
    common = (
      "--case=userpkg.mycase:make",
      "--targets=cpu",
      "--batch_sizes=1",  # where dot-strength-reduction acts
      "--precisions=default",
    )
    # End to end: a fresh process finds the module on its PYTHONPATH, and
    # so do the workers it starts (the fix's among them).
    verify = run_hloprobe(
      "verify", *common, "--fix=float32", "--require=accurate", env=env
    )
    self.assertEqual(verify.returncode, 0, verify.stderr + verify.stdout)
    self.assertIn("PASS", verify.stdout)
    # In this process (the module is on sys.path, setUpModule), its workers
    # finding it on the PYTHONPATH they inherit.
    path = os.pathsep.join(filter(None, [_DIR, os.environ.get("PYTHONPATH")]))
    self.enter_context(mock.patch.dict(os.environ, {"PYTHONPATH": path}))
    explain = run_hloprobe_here("explain", *common, timeout_s=600)
    self.assertEqual(explain.returncode, 0, explain.stderr)
    self.assertIn("mine on cpu", explain.stdout)
    sweep_run = run_hloprobe_here(
      "sweep",
      *common,
      "--experiment=no_dsr:--xla_disable_hlo_passes=dot-strength-reduction",
      "--format=json",
      timeout_s=600,
    )
    self.assertEqual(sweep_run.returncode, 0, sweep_run.stderr)
    rows = json.loads(sweep_run.stdout)["configs"]
    self.assertEqual(
      sorted({(r["experiment"], r["status"]) for r in rows}),
      [("baseline", "ok"), ("no_dsr", "ok")],
    )

  def test_cases_lists_each_built_in_with_its_report(self):
    proc = run_hloprobe_here("cases")
    self.assertEqual(proc.returncode, 0, proc.stderr)
    lines = proc.stdout.splitlines()
    self.assertLen(lines, len(cases.CASES))
    # Name and report, in columns as wide as the longest name.
    self.assertIn(
      ["mlx_3953", "https://github.com/ml-explore/mlx/issues/3953"],
      [line.split() for line in lines],
    )

  def test_bad_case_is_one_line_exit_2(self):
    proc = run_hloprobe_here("sweep", f"--case={_FILE}:other")
    self.assertEqual(proc.returncode, 2)
    self.assertEqual(
      [l for l in proc.stderr.splitlines() if "error" in l],
      [
        f"hloprobe: error: case factory {_FILE}:other returned int, not a "
        "hloprobe.Case"
      ],
    )


if __name__ == "__main__":
  absltest.main()
