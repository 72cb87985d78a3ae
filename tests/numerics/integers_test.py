"""Integer dots (issue 24, item 3): exact references, "exact integer"
sites, overflow named with its leaf, site and count.

Expected values come from exact integer arithmetic (numpy int64 products
and sums of the case's int8 inputs, Python ints for the wrap), and the
sites' fates from recorded compiles of jaxlib 0.12.0.1
(tests/intdots_testdata, record.py there); the sweep over n = 1-9 is a live
compile (`compiles`), since running it without a traceback is the point.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from absl.testing import absltest, parameterized

from hloprobe import engine
from hloprobe.compile import get_case, get_target
from hloprobe.ir import parse_hlo_module, parse_stablehlo_dots
from hloprobe.numerics import accuracy, integers
from hloprobe.report.verdict_words import leaf_verdicts, verdict_words
from hloprobe.sites import EXACT_INTEGER, Fate, map_dot_sites, resolve

_DATA = os.path.join(
  os.path.dirname(os.path.dirname(__file__)), "intdots_testdata"
)


def _exact():
  """The int8_dots case's exact results: (x @ w, x @ v) in int64."""
  x, w, v = get_case("int8_dots").make_inputs()
  wide = lambda a: np.asarray(a, np.int64)
  return wide(x) @ wide(w), wide(x) @ wide(v)


def _wrap8(values: np.ndarray) -> np.ndarray:
  """Two's complement wrap to s8, in Python ints."""
  return np.array(
    [((int(a) + 128) % 256) - 128 for a in values.ravel()], np.int8
  ).reshape(values.shape)


class IntegerCountsTest(parameterized.TestCase):
  def test_wrapped_elements_are_the_overflowed_ones(self):
    exact = np.array([[5, 300, -129], [127, -128, 1000]], np.int64)
    got = _wrap8(exact)
    s = accuracy.ErrorStats.of(got, exact, axis=0, leaf="['s8']")
    # |300|, |-129|, |1000| exceed s8's [-128, 127]: 3 of 6.
    self.assertEqual((s.mismatched, s.overflowed, s.elements), (3, 3, 6))
    self.assertEqual(s.overflow_mode, "wraps")
    self.assertIsNone(s.row0_ulp)
    self.assertEqual(
      verdict_words(accuracy.judge(None, s, None, 0.0, (), "int8")),
      "overflow: 3 of 6 elements of ['s8'] exceed s8 [-128, 127] and wrap",
    )

  def test_saturating_output_is_named(self):
    exact = np.array([200, -300, 7], np.int64)
    got = np.clip(exact, -128, 127).astype(np.int8)
    counts = integers.integer_counts(got, exact)
    self.assertEqual(counts["overflow_mode"], "saturates")

  def test_exact_and_unexplained(self):
    exact = np.array([1, 2, 3], np.int64)
    same = accuracy.ErrorStats.of(exact.astype(np.int32), exact, axis=None)
    self.assertEqual(
      verdict_words(integers.integer_judgement(same, "int32")), "exact"
    )
    off = accuracy.ErrorStats.of(np.int32([1, 2, 4]), exact, axis=None)
    self.assertEqual(
      verdict_words(integers.integer_judgement(off, "int32")),
      "unexplained: 1 of 3 elements of the output differ from the exact "
      "integer result",
    )

  def test_integer_dtypes_are_named_as_hlo_does(self):
    self.assertEqual(accuracy.dtype_name("int8"), "s8")
    self.assertEqual(accuracy.dtype_name("uint32"), "u32")


def _read(folder: str, name: str) -> str:
  with open(os.path.join(_DATA, folder, name), encoding="utf-8") as f:
    return f.read()


def _recorded_fates(folder: str, target: str):
  read = lambda name: _read(folder, name)
  sites = parse_stablehlo_dots(read("stablehlo.txt"))
  module = parse_hlo_module(read("optimized_hlo.txt"))
  return resolve(map_dot_sites(sites, module), module, [], get_target(target))


class IntegerSiteTest(parameterized.TestCase):
  @parameterized.named_parameters(
    # XLA's fates, read from the recorded optimized HLO (jaxlib 0.12.0.1):
    # a100 n = 1 strength-reduces both (s8 x s8 -> s32 converts to s32
    # before its multiply, s8 -> s8 multiplies in s8); n = 4 puts the s32
    # one in a Triton gemm (mma ...s32.s8.s8.s32) and leaves the s8 one a
    # loop-fusion dot; the CPU keeps both dots.
    ("a100_n1", "int8_dots_a100_n1", "a100", [Fate.MULTIPLY_REDUCE] * 2),
    ("a100_n4", "int8_dots_a100_n4", "a100", [Fate.TRITON_GEMM, Fate.DOT]),
    ("cpu_n4", "int8_dots_cpu_n4", "cpu", [Fate.DOT, Fate.DOT]),
  )
  def test_every_fate_is_exact_integer(self, folder, target, fates):
    found = _recorded_fates(folder, target)
    self.assertEqual([f.fate for f in found], fates)
    self.assertEqual(
      [f.effective_algorithm for f in found], [EXACT_INTEGER] * 2
    )
    self.assertIn("s8 x s8 -> s32", found[0].algorithm_evidence)
    self.assertIn("s8 x s8 -> s8", found[1].algorithm_evidence)


@pytest.mark.compiles
class Int8DotsSweepTest(absltest.TestCase):
  def test_sweeps_one_to_nine_and_names_the_overflow(self):
    sizes = tuple(range(1, 10))
    spec = engine.SweepSpec(
      ("int8_dots",), sizes, ("float32",), ("cpu", "a100")
    )
    results = engine.run_sweep(spec)
    self.assertLen(results, 18)
    wide, narrow = _exact()
    for r in results:
      n = r.config.n
      self.assertTrue(r.ok, r.failure)
      verdicts = dict(leaf_verdicts(r.prediction))
      self.assertEqual(verdicts["['s32']"], "exact")
      over = int(np.count_nonzero(np.abs(narrow[:n]) > 127))
      fate = r.compilation.fates[1].fate.value
      self.assertEqual(
        verdicts["['s8']"],
        f"overflow: {over} of {narrow[:n].size} elements of ['s8'] exceed "
        f"s8 [-128, 127] and wrap; the exact sum overflows s8 at site 1 "
        f"(s8 x s8 -> s8 {fate})",
      )
      # What XLA made runs too: the executor computes integer dots exactly
      # ("exact integer" is no preset to hand it).
      self.assertIsNotNone(r.made, r.config.label())
      self.assertEqual(r.made.not_executed, (), r.config.label())
      self.assertFalse(r.made.changed, r.config.label())
      if r.execution is not None:  # the CPU ran it: its bits are the wrap
        stats = {s.leaf: s for s in r.execution.leaf_stats}
        np.testing.assert_array_equal(
          stats["['s8']"].row0_values, _wrap8(narrow[0])
        )
        self.assertEqual(stats["['s32']"].row0, float(wide[0, 0]))
        self.assertIsNone(r.execution.ulp_vs_n1)  # no ULPs for integers


if __name__ == "__main__":
  absltest.main()
