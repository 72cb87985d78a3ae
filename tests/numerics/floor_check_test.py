"""The noise floor checked against the numpy executor (`floor_check`).

Inputs are built here, with no XLA: the float64 reference and the
executor's F32 run of the seed's recorded unoptimized module
(tests/execute/testdata/seed_mlp_n8.unoptimized.hlo), and "measured"
floors from numpy float32 evaluations of the seed MLP written here (two
summation orders, as the emulation's orders are), or from such an
evaluation with rows corrupted the way jaxlib 0.10.2's XLA:CPU corrupted
7232 of 40000 rows of a vmapped program (a planted XLA:CPU-style bug).
Expected numbers come from numpy float64 and the rule's formula written
out here (Higham's gamma_K), never from hloprobe's emulation.
"""

from __future__ import annotations

import os

import numpy as np
from absl.testing import absltest

from hloprobe.execute import execute_module
from hloprobe.ir import parse_hlo_module
from hloprobe.numerics import accuracy, executed, floor_check, floor_sum
from hloprobe.numerics.verdicts import Verdict, VerdictKind
from hloprobe.report.verdict_words import floor_check_words, verdict_words

_HERE = os.path.dirname(__file__)
_MODULE = os.path.join(
  _HERE, os.pardir, "execute", "testdata", "seed_mlp_n8.unoptimized.hlo"
)
_INPUTS = os.path.join(_HERE, os.pardir, "testdata", "seed_mlp_inputs.npz")
_N = 8
_K = 2 + 48 + 48 + 48  # the seed's four sites' contraction sizes
_WHERE = "case seed_mlp, n = 8 (F32 emulation)"
# The seed module's parameters: xs, then the params pytree's leaves.
_NAMES = ("w0", "w1", "w2", "w3", "b0", "b1", "b2", "b3")
_NAMES += ("g0", "g1", "g2", "m0", "m1", "m2")


def _text() -> str:
  with open(_MODULE, encoding="utf-8") as f:
    return f.read()


def _inputs():
  with np.load(_INPUTS) as d:
    return d["xy"][:_N], {k: d[k] for k in d.files if k != "xy"}


def _seed(x, p, dtype, dot):
  """The seed MLP (`builtin_cases._seed_forward` under vmap) in numpy at
  `dtype`, its dots made by `dot(a, b)`."""
  p = {k: v.astype(dtype) for k, v in p.items()}
  h = x.astype(dtype)
  for i in range(3):
    z = dot(h, p[f"w{i}"].T) + p[f"b{i}"]
    e = np.exp(-(p[f"g{i}"] ** 2) * np.square(z - p[f"m{i}"]))
    h = e * np.sin(z * dtype(16.0))
  return (dot(h, p["w3"].T) + p["b3"]).mean(axis=1, dtype=dtype)


def _sequential(a, b):
  """a @ b in a's dtype, summed term by term from k = 0 (another order)."""
  out = np.zeros((a.shape[0], b.shape[1]), a.dtype)
  for k in range(a.shape[1]):
    out = out + a[:, k : k + 1] * b[k : k + 1, :]
  return out


class _Seed:
  """The seed at n = 8: float64 value, executor runs, numpy f32 orders."""

  def __init__(self):
    x, p = _inputs()
    module = parse_hlo_module(_text())
    args = (x, *(p[k] for k in _NAMES))
    self.program = executed.Program(module, args, ((_N,),))
    self.f64 = _seed(x, p, np.float64, np.matmul)
    self.orders = {
      "matmul": _seed(x, p, np.float32, np.matmul),
      "sequential": _seed(x, p, np.float32, _sequential),
    }


class ExecutorRunsTest(absltest.TestCase):
  def test_widened_run_is_numpy_float64_and_f32_run_is_f32(self):
    seed = _Seed()
    (wide,) = seed.program.run(widen=True).outputs
    np.testing.assert_allclose(wide, seed.f64, rtol=1e-12, atol=0)
    (f32,) = seed.program.run(widen=False).outputs
    self.assertEqual(f32.dtype, np.float32)
    # f32 level: the seed strays ~1e-4 from float64 in f32 (tests/execute)
    self.assertLess(np.max(np.abs(f32 - seed.f64)), 1e-3)

  def test_a_custom_call_is_named_not_run(self):
    seed = _Seed()
    text = _text()
    # A `sin` made a custom call the executor has no model of.
    first_sin = next(line for line in text.splitlines() if " sine(" in line)
    called = first_sin.replace(" sine(", " custom-call(") + (
      ', custom_call_target="my_sine"'
    )
    planted = text.replace(first_sin, called)
    module = parse_hlo_module(planted)
    run = executed.Program(module, seed.program.arguments, ((_N,),)).run(True)
    self.assertIsNone(run.outputs)
    self.assertEqual(run.why_not, "my_sine")


class FloorCheckTest(absltest.TestCase):
  def _check(self, outputs: dict, seed: _Seed, f32=None):
    measured = floor_sum.noise_floor(outputs, seed.f64, 0)
    (run,) = seed.program.run(widen=False).outputs if f32 is None else f32
    return floor_check.check_floor(
      measured, run, seed.f64, 0, "float32", _K, _WHERE
    )

  def test_numpy_f32_orders_are_trusted(self):
    seed = _Seed()
    check = self._check(seed.orders, seed)
    self.assertEqual(check.status, "trusted")
    self.assertIs(check.floor, check.measured)
    within = Verdict(VerdictKind.WITHIN_NOISE)
    self.assertEqual(floor_check.noted(within, check), within)

  def test_independent_floor_is_the_rule_written_out(self):
    seed = _Seed()
    check = self._check(seed.orders, seed)
    (f32,) = execute_module(
      parse_hlo_module(_text()),
      seed.program.arguments,
    ).outputs
    err = np.abs(f32.astype(np.float64) - seed.f64)
    u = 2.0**-24
    band = _K * u / (1 - _K * u) * np.max(np.abs(seed.f64))
    step = 2.0 ** (np.floor(np.log2(np.max(np.abs(seed.f64)))) - 23)
    self.assertAlmostEqual(check.executor_row0_abs, err[0], delta=0)
    self.assertAlmostEqual(check.band_abs, band, delta=band * 1e-12)
    self.assertEqual(check.independent.row0_abs, max(err[0], band, step))
    self.assertEqual(check.independent.max_abs, max(err.max(), band, step))

  def test_corrupted_rows_make_the_floor_untrusted(self):
    # XLA:CPU-style bug: 3 of 8 rows of every order come out wrong (row 0
    # among them), by the 1e7 the public report's floor showed.
    seed = _Seed()
    bad = {o: x.copy() for o, x in seed.orders.items()}
    for x in bad.values():
      x[[0, 3, 5]] += np.float32(1e7)
    check = self._check(bad, seed)
    self.assertEqual(check.status, "untrusted")
    self.assertFalse(check.trusted)
    self.assertGreater(check.measured.row0_abs, 1e6)
    self.assertLess(check.floor.row0_abs, 1e-3)
    # What the verdict said with the corrupted floor, and says now: an
    # error of 0.5 at row 0 (far above f32's ~1e-4) was "f32 noise".
    wrong = seed.f64.astype(np.float32) + np.float32(0.5)
    stats = accuracy.ErrorStats.of(wrong, seed.f64, 0)
    judge = lambda noise: accuracy.judge(
      stats, stats, noise, 0.0, ("F32_F32_F32",) * 4
    )
    self.assertEqual(judge(check.measured).kind, VerdictKind.WITHIN_NOISE)
    noted = floor_check.noted(judge(check.floor), check)
    self.assertEqual(noted.kind, VerdictKind.UNEXPLAINED)
    verdict = verdict_words(noted)
    self.assertTrue(verdict.startswith("unexplained; "), verdict)
    self.assertIn(
      "noise floor from XLA:CPU disagrees with the numpy executor: "
      "suspected XLA:CPU miscompile at case seed_mlp, n = 8 (F32 emulation)",
      verdict,
    )

  def test_rows_other_than_row_0_corrupted_are_caught(self):
    seed = _Seed()
    bad = {o: x.copy() for o, x in seed.orders.items()}
    bad["matmul"][6] = np.float32(3e4)
    check = self._check(bad, seed)
    self.assertLess(check.measured.row0_abs, 1e-3)  # row 0 is fine
    self.assertEqual(check.status, "untrusted")

  def test_within_the_factor_is_trusted(self):
    # The rule's limit, stated: 100x the independent floor passes.
    seed = _Seed()
    check = self._check(seed.orders, seed)
    near = {
      o: (x + np.float32(100 * check.independent.max_abs))
      for o, x in seed.orders.items()
    }
    self.assertEqual(self._check(near, seed).status, "trusted")

  def test_not_checked_is_named(self):
    seed = _Seed()
    measured = floor_sum.noise_floor(seed.orders, seed.f64, 0)
    none = floor_check.check_floor(
      measured, None, seed.f64, 0, "float32", _K, _WHERE, "my_sine"
    )
    self.assertEqual(
      none.status, "not checked: not executed by the numpy executor: my_sine"
    )
    self.assertIs(none.floor, measured)
    self.assertIsNone(floor_check_words(none))
    ints = floor_check.check_floor(
      measured, seed.f64, seed.f64, 0, "int32", _K, _WHERE
    )
    self.assertEqual(ints.status, "not checked: integer leaf")
    nan = seed.f64.copy()
    nan[1] = np.nan
    self.assertStartsWith(
      floor_check.check_floor(
        measured, nan, seed.f64, 0, "float32", _K, _WHERE
      ).status,
      "not checked: ",
    )


if __name__ == "__main__":
  absltest.main()
