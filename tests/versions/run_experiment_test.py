"""Issue 23: `versions` and `bisect` take --experiment like `sweep`.

Flag plumbing in process (`testutil.run_hloprobe_here`: absl flagsaver,
nothing compiled): the experiment reaches the worker's request and back
into its `SweepSpec`, and the cross-version table compares each
experiment's configs apart from the baseline's. The expected flags are
the built-in experiment's definition (compile/experiments.py).
"""

from __future__ import annotations

from absl.testing import absltest
from testutil import run_hloprobe_here

from hloprobe.cli import _main as cli
from hloprobe.commands import common
from hloprobe.versions.compare import compare, render_versions
from hloprobe.versions.run import VersionRun, spec_from_request, spec_request

_NO_TRITON = ["--xla_gpu_enable_triton_gemm=false"]


class FlagsTest(absltest.TestCase):
  def test_versions_and_bisect_read_the_experiment_flags(self):
    table = cli.command_flags()
    for flag in ("experiment", "experiments_file"):
      self.assertIn("versions", table[flag])
      self.assertIn("bisect", table[flag])

  def test_versions_parses_the_experiment(self):
    proc = run_hloprobe_here(
      "versions", "--jaxlib=0.10.2", "--experiment=not_an_experiment"
    )
    self.assertEqual(proc.returncode, 2, proc.stderr)
    self.assertIn("unknown experiment 'not_an_experiment'", proc.stderr)

  def test_bisect_parses_the_experiment(self):
    proc = run_hloprobe_here("bisect", "--experiment=not_an_experiment")
    self.assertEqual(proc.returncode, 2, proc.stderr)
    self.assertIn("unknown experiment 'not_an_experiment'", proc.stderr)

  def test_request_carries_the_experiment_to_the_worker(self):
    words = common.SweepWords(
      case=("scaled_dense",),
      batch_sizes="8",
      precisions=("float32",),
      targets=("a100",),
    )
    spec = common.sweep_spec(words, ["no_triton_gemm"])
    request = spec_request(spec)
    self.assertEqual(
      request["experiments"],
      [{"name": "no_triton_gemm", "xla_flags": _NO_TRITON}],
    )
    back = spec_from_request(request)
    self.assertEqual([e.name for e in back.experiments], ["no_triton_gemm"])
    self.assertEqual(list(back.experiments[0].xla_flags), _NO_TRITON)
    self.assertEqual(back.cases, ("scaled_dense",))


def _config(experiment: str, verdict: str, made_err: float = 1e-6) -> dict:
  return {
    "experiment": experiment,
    "case": "scaled_dense",
    "target": "a100",
    "n": 8,
    "precision": "float32",
    "status": "ok",
    "fate_summary": "cuBLASLt x1",
    "dot_sites": [{"effective_algorithm": "F32_F32_F32"}],
    "prediction": {"row0_abs_err": 1e-6, "verdict": "within f32 noise"},
    "made": {"row0_abs_err": made_err},
    "verdict": verdict,
  }


def _run(jaxlib: str, changed: str, made_err: float = 1e-6) -> VersionRun:
  reply = {
    "jax": jaxlib,
    "capabilities": {},
    "results": {
      "configs": [
        _config("baseline", "within f32 noise"),
        _config("no_triton_gemm", changed, made_err),
      ]
    },
  }
  return VersionRun(jaxlib, reply=reply, python_version="3.x")


class CompareTest(absltest.TestCase):
  def test_experiment_configs_are_compared_apart(self):
    runs = [
      _run("0.10.2", "XLA changed the math: __cublas$lt$matmul ...", 9.25),
      _run("0.12.0.1", "within f32 noise"),
    ]
    entries = compare(runs)
    self.assertEqual(
      [(e["experiment"], e["changed"]) for e in entries],
      [("baseline", []), ("no_triton_gemm", ["verdict"])],
    )
    text = render_versions(runs)
    self.assertIn("a100 scaled_dense n=8 float32 (no_triton_gemm)", text)
    self.assertIn("XLA changed the math", text)
    # What XLA made has its own row-0 error row, beside the program's.
    made = [ln for ln in text.splitlines() if "row-0 |err| made" in ln]
    self.assertLen(made, 2)
    self.assertIn("9.25e+00", made[1])
    self.assertNotIn("(pred)", made[1])


if __name__ == "__main__":
  absltest.main()
