"""Issue 27 items 4, 5, 7: a user case's program never runs in hloprobe's
own process. One sweep of the seed beside cases that loop forever, abort,
call os._exit(0) and print, and beside int32, bool and complex64 outputs:
each misbehaving case is one failed config with one line, the others keep
their results, stdout stays valid JSON and results.json is written."""

from __future__ import annotations

import functools
import json
import os
import tempfile

import numpy as np
import pytest
from absl.testing import absltest
from testutil import run_hloprobe

_CASES = os.path.join(
  os.path.dirname(os.path.dirname(__file__)), "guard_testdata", "cases.py"
)
_NAMES = (
  "loops",
  "aborts",
  "exits0",
  "prints",
  "int32_out",
  "bool_out",
  "complex_out",
)
_TIMEOUT_S = 12  # --case_timeout: the worker's start and jax import fit


@functools.cache
def _sweep():
  """(process, parsed stdout, output folder) of the one shared sweep."""
  out = tempfile.mkdtemp(prefix="guard-sweep-")
  cases = ",".join(["seed_mlp", *(f"{_CASES}:{n}" for n in _NAMES)])
  proc = run_hloprobe(
    "sweep",
    f"--case={cases}",
    "--targets=cpu",
    "--batch_sizes=1",
    "--precisions=float32",
    "--format=json",
    f"--case_timeout={_TIMEOUT_S}",
    f"--output_dir={out}",
    "--jobs=1",
  )
  return proc, json.loads(proc.stdout), out


def _by_case(doc) -> dict:
  return {c["case"]: c for c in doc["configs"]}


@pytest.mark.compiles
class GuardSweepTest(absltest.TestCase):
  def test_stdout_is_hloprobes_json_and_results_are_written(self):
    proc, doc, out = _sweep()
    self.assertEqual(proc.returncode, 1, proc.stderr)  # configs failed
    self.assertNotIn("hello from the case", proc.stdout)
    self.assertNotIn("Traceback", proc.stderr)
    self.assertLen(doc["configs"], 1 + len(_NAMES))
    with open(os.path.join(out, "results.json")) as f:
      self.assertLen(json.load(f)["configs"], 1 + len(_NAMES))

  def test_the_seed_keeps_its_results(self):
    seed = _by_case(_sweep()[1])["seed_mlp"]
    self.assertEqual(seed["status"], "ok")
    self.assertIsNotNone(seed["numerics"])

  def test_each_misbehaving_case_fails_alone_with_one_line(self):
    found = _by_case(_sweep()[1])
    expected = {
      # It hangs as it is traced, its inputs made.
      "g_loops": f"(tracing its function) ran past --case_timeout={_TIMEOUT_S} s",
      "g_aborts": "SIGABRT",
      "g_exits0": "exited with status 0",
    }
    for name, words in expected.items():
      with self.subTest(name):
        c = found[name]
        self.assertEqual(c["status"], "failed")
        self.assertIn(words, c["error"])
        self.assertIn(name, c["error"])
        self.assertNotIn("\n", c["error"])

  def test_a_case_that_prints_keeps_its_result(self):
    c = _by_case(_sweep()[1])["g_prints"]
    self.assertEqual(c["status"], "ok", c["error"])
    # x * 2 on small integers is exact in f32.
    self.assertEqual(c["numerics"]["max_abs_err"], 0.0)

  def test_int_bool_and_complex_outputs_compare_exactly(self):
    found = _by_case(_sweep()[1])
    # Expected: x + 1 (int32), x > 2 (bool), x * (1 + 2j) (complex64) of
    # small integers: every element exact, numpy float64 agrees.
    x = np.arange(8, dtype=np.float64).reshape(4, 2)
    for name, dtype, row0 in (
      ("g_int32", "int32", (x + 1)[0, 0]),
      ("g_bool", "bool", float((x > 2)[0, 0])),
      ("g_complex", "complex64", (x * (1 + 2j))[0, 0].real),
    ):
      with self.subTest(name):
        c = found[name]
        self.assertEqual(c["status"], "ok", c["error"])
        self.assertEqual(c["numerics"]["output_dtype"], dtype)
        self.assertEqual(c["numerics"]["max_abs_err"], 0.0)
        self.assertEqual(c["numerics"]["row0_ref_f64"], row0)


if __name__ == "__main__":
  absltest.main()
