"""A module file as a case tells the program's story (issue 25).

One plain JAX script, made here, runs a two-dot MLP on the CPU under
`XLA_FLAGS=--xla_dump_to=... --xla_dump_hlo_as_proto
--xla_dump_hlo_snapshots` and writes its StableHLO text, a `jax.export`
artifact and its arguments (.npz). The same program is also a
`file.py:factory` case. The independent source is that program: every
module file of it (the dump's `before_optimizations.txt` and `.hlo.pb`,
the StableHLO text, the export), explained on the program's arguments,
must give the explanation the program gives at its batch size (sites,
fates, passes, algorithms, verdicts; errors within 1e-6 relative) and the
program's own source lines; XLA's own HloSnapshot (the optimized module
with the arguments it ran on and its result) must reproduce its recorded
result on the CPU; malformed files give one line and exit 2.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest
import testutil
from absl.testing import absltest, parameterized

from hloprobe import engine, report
from hloprobe.compile import get_case
from hloprobe.compile.module_files import read_module_file
from hloprobe.numerics import module_made_notes
from hloprobe.report import explain_text
from hloprobe.report.verdict_words import prediction_words

pytestmark = pytest.mark.compiles

_PROGRAM = textwrap.dedent("""
  import sys

  import jax
  import jax.numpy as jnp
  import numpy as np


  def mlp(xs, w1, b1, w2):
    h = jnp.tanh(xs @ w1 + b1)
    return jnp.sum(h @ w2, axis=-1) * 0.5


  def inputs():
    g = np.random.default_rng(3)
    return (
      g.standard_normal((8, 16)).astype(np.float32),
      g.standard_normal((16, 32)).astype(np.float32),
      g.standard_normal((32,)).astype(np.float32),
      g.standard_normal((32, 4)).astype(np.float32),
    )


  def make_case():
    from hloprobe import Case

    return Case(name="mlp", description="the MLP", fn=mlp, make_inputs=inputs)


  if __name__ == "__main__":
    out, args = sys.argv[1], inputs()
    np.savez(f"{out}/inputs.npz", *args)
    jax.block_until_ready(jax.jit(mlp)(*args))
    lowered = jax.jit(mlp).lower(*args)
    with open(f"{out}/mlp.mlir", "w") as f:
      f.write(lowered.as_text(debug_info=True))
    with open(f"{out}/mlp.export", "wb") as f:
      f.write(jax.export.export(jax.jit(mlp))(*args).serialize())
""")
# The program's dot lines (`xs @ w1`, `h @ w2`) in _PROGRAM as written.
_DOT_LINES = (10, 11)
_TARGETS = ("cpu", "a100")
_PRECISIONS = ("bfloat16", "float32")
_POOL = testutil.SweepPool()
# One loader worker for the program's case file (SameStoryTest's story and
# MixedSweepTest's sweep each load it).
_LOADER = contextlib.ExitStack()


def setUpModule():
  global _DIR, _DUMP
  _DIR = tempfile.mkdtemp(prefix="modcase-e2e-")
  _DUMP = os.path.join(_DIR, "dump")
  with open(os.path.join(_DIR, "prog.py"), "w") as f:
    f.write(_PROGRAM)
  env = dict(
    os.environ,
    JAX_PLATFORMS="cpu",
    XLA_FLAGS=f"--xla_dump_to={_DUMP} --xla_dump_hlo_as_text "
    "--xla_dump_hlo_as_proto --xla_dump_hlo_snapshots",
  )
  subprocess.run(
    [sys.executable, os.path.join(_DIR, "prog.py"), _DIR],
    env=env,
    check=True,
    capture_output=True,
    timeout=300,
  )
  _LOADER.enter_context(testutil.shared_case_loader())


def tearDownModule():
  _POOL.close()
  _LOADER.close()


def _dumped(suffix: str) -> str:
  (path,) = glob.glob(os.path.join(_DUMP, f"module_*.jit_mlp.{suffix}"))
  return path


def _story(case: str, inputs: str | None):
  """(explain's records as JSON, less the case's name and notes; each
  config's site locations) of `case` at batch size 8."""
  plan = engine.spec_from_words(
    cases=[case],
    batch_sizes="8",
    precisions=list(_PRECISIONS),
    targets=list(_TARGETS),
    explain_passes=True,
    inputs=inputs,
  )
  results = _POOL.run(plan)
  why = report.explain_results(results, [c.case for c in plan.cases])
  docs = explain_text.explanation_json(why)["explanations"]
  for doc in docs:
    del doc["case"], doc["notes"]
  where = [
    [f.site.location for f in r.compilation.fates] for r in results if r.ok
  ]
  return docs, where, why


def _same(test, got, want, path="") -> None:
  """`got` equals `want`, floats within 1e-6 relative."""
  if isinstance(want, float) and isinstance(got, float):
    np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=path)
  elif isinstance(want, dict):
    test.assertEqual(sorted(got), sorted(want), path)
    for k in want:
      _same(test, got[k], want[k], f"{path}.{k}")
  elif isinstance(want, (list, tuple)):
    test.assertEqual(len(got), len(want), path)
    for i, (g, w) in enumerate(zip(got, want)):
      _same(test, g, w, f"{path}[{i}]")
  else:
    test.assertEqual(got, want, path)


class SameStoryTest(parameterized.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    program = os.path.join(_DIR, "prog.py") + ":make_case"
    cls.want, cls.where, _ = _story(program, None)

  def test_the_program_has_its_two_sites_at_its_lines(self):
    lines = [f"{os.path.join(_DIR, 'prog.py')}:{n}" for n in _DOT_LINES]
    self.assertEqual(len(self.where), len(_TARGETS) * len(_PRECISIONS))
    for found in self.where:
      self.assertEqual(found, lines)

  @parameterized.named_parameters(
    ("hlo_text", "before_optimizations.txt"),
    ("hlo_proto", "before_optimizations.hlo.pb"),
    ("stablehlo_text", "mlp.mlir"),
    ("jax_export", "mlp.export"),
  )
  def test_module_file_tells_the_programs_story(self, name):
    path = os.path.join(_DIR, name) if name.startswith("mlp") else _dumped(name)
    inputs = os.path.join(_DIR, "inputs.npz")
    got, where, why = _story(path, inputs)
    _same(self, got, self.want)
    self.assertEqual(where, self.where)
    notes = why[0].notes
    self.assertIn(
      "precision set on 2 contractions of the module (as "
      "jax_default_matmul_precision would set them)",
      notes,
    )
    self.assertIn(f"inputs from {inputs}", notes)


class MixedSweepTest(absltest.TestCase):
  def test_module_beside_the_program_and_an_experiment(self):
    module = _dumped("before_optimizations.txt")
    program = os.path.join(_DIR, "prog.py") + ":make_case"
    plan = engine.spec_from_words(
      cases=[module, program],
      batch_sizes="1,8",
      precisions=["float32"],
      targets=["cpu"],
      experiment_words=[
        "nodsr:--xla_disable_hlo_passes=dot-strength-reduction"
      ],
      inputs=os.path.join(_DIR, "inputs.npz"),
    )
    results = _POOL.run(plan)
    self.assertEqual(
      [(r.config.experiment, r.config.case, r.config.n) for r in results],
      [
        (e, c, n)
        for e in ("baseline", "nodsr")
        for c, ns in (("jit_mlp", (8,)), ("mlp", (1, 8)))
        for n in ns
      ],
    )
    self.assertTrue(all(r.ok for r in results), [r.failure for r in results])
    by = {(r.config.experiment, r.config.case, r.config.n): r for r in results}
    for e in ("baseline", "nodsr"):
      got, want = by[e, "jit_mlp", 8], by[e, "mlp", 8]
      self.assertEqual(
        prediction_words(got.prediction), prediction_words(want.prediction)
      )
      self.assertEqual(got.prediction.stats, want.prediction.stats)


class SnapshotTest(absltest.TestCase):
  def test_xla_snapshot_reproduces_its_result_on_the_cpu(self):
    import jax

    path = _dumped("snapshot.*.pb")
    recorded = read_module_file(path)
    self.assertIsNotNone(recorded.result)
    case = get_case(path)
    self.assertIn("inputs: the HloSnapshot's arguments", case.notes)
    args = case.make_inputs()
    for got, want in zip(args, recorded.arguments):
      np.testing.assert_array_equal(got, want)
    cpu = jax.local_devices(backend="cpu")[0]
    out = jax.jit(case.fn)(*jax.device_put(args, cpu))
    (want,) = recorded.result
    # XLA:CPU computed it once; the same program again, within f32 sums.
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-6)

  def test_the_snapshot_executed_as_it_stands(self):
    path = _dumped("snapshot.*.pb")
    made, recorded = module_made_notes(path, get_case(path))
    self.assertIn("executed as it stands by the numpy executor", made)
    # Both are f32 runs of the program: apart by f32 rounding only (the
    # outputs are sums of 4 values of magnitude ~10).
    diff = float(recorded.rsplit(" ", 1)[1])
    self.assertLess(diff, 1e-4)
    err = float(re.search(r"max \|err\| vs .* ([0-9.e+-]+), row 0", made)[1])
    self.assertLess(err, 1e-4)
    self.assertEqual(
      module_made_notes(
        _dumped("before_optimizations.txt"),
        get_case(_dumped("before_optimizations.txt")),
      ),
      (),
    )


class MalformedTest(parameterized.TestCase):
  def _file(self, name: str, data: bytes) -> str:
    path = os.path.join(self.create_tempdir().full_path, name)
    with open(path, "wb") as f:
      f.write(data)
    return path

  def _refused(self, path: str, *words: str) -> str:
    proc = testutil.run_hloprobe_here("sweep", f"--case={path}")
    self.assertEqual(proc.returncode, 2, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    self.assertLen(lines, 1, proc.stderr)
    self.assertIn(path, lines[0])
    for word in words:
      self.assertIn(word, lines[0])
    return lines[0]

  def test_truncated_proto(self):
    with open(_dumped("before_optimizations.hlo.pb"), "rb") as f:
      data = f.read()
    self._refused(self._file("cut.hlo.pb", data[: len(data) // 2]))

  def test_hlo_text_syntax_error(self):
    with open(_dumped("before_optimizations.txt")) as f:
      text = f.read().replace("tanh(", "tanh((", 1)
    self._refused(self._file("bad.txt", text.encode()))

  def test_unknown_custom_call(self):
    text = textwrap.dedent("""
      HloModule m, entry_computation_layout={(f32[2,2]{1,0})->f32[2,2]{1,0}}

      ENTRY main {
        p = f32[2,2]{1,0} parameter(0)
        ROOT c = f32[2,2]{1,0} custom-call(p), custom_call_target="foo"
      }
    """)
    self._refused(self._file("foo.txt", text.encode()), "foo")

  def test_over_the_size_limit(self):
    path = self._file("huge.txt", b"HloModule m\n")
    os.truncate(path, 257 * 1024 * 1024)  # sparse: nothing is written
    self._refused(path)

  def test_not_a_module(self):
    self._refused(self._file("notes.txt", b"\x00\x01 not a module"))

  def test_batch_sizes_with_a_module(self):
    path = _dumped("before_optimizations.txt")
    proc = testutil.run_hloprobe_here(
      "sweep", f"--case={path}", "--batch_sizes=1,2"
    )
    self.assertEqual(proc.returncode, 2)
    self.assertIn("--batch_sizes does not apply to module file", proc.stderr)


if __name__ == "__main__":
  absltest.main()
