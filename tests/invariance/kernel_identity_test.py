"""Classes by kernel identity through the `KernelReader` protocol (the
interface `hloprobe.kernels` fills), from hand-made kernels and from
recorded compiles (tests/testdata/kernels): no compile.

Expected classes and verdicts follow from the signatures given here: equal
complete signatures are one class (invariant), a differing signature a
boundary naming that kernel, an incomplete one "unknown". For the recorded
compiles, from the fixtures' text read by hand (`BatchReductionTest`).
"""

from __future__ import annotations

import os
import types

import recorded
import testutil
from absl.testing import absltest, parameterized

from hloprobe.compile import get_target
from hloprobe.errors import HloParseError
from hloprobe.invariance import Invariance, invariance_of
from hloprobe.invariance.kernel_identity import (
  KernelUnread,
  RowKernel,
  Unread,
  batched_leaves,
  result_leaves,
)
from hloprobe.ir import as_precision
from hloprobe.kernels.records import RowCountRule, RowCountWhy
from hloprobe.records import Compilation, Config, ConfigResult
from hloprobe.report.invariance_causes import boundary_causes
from hloprobe.report.invariance_words import answer_lines, kernel_lines
from hloprobe.sites import Fate

_SIZES = (1, 2, 8, 64)


def _results():
  a100 = get_target("a100")
  return [
    ConfigResult(Config("m", a100, n, as_precision("float32"))) for n in _SIZES
  ]


def _reader(signatures, why=None):
  def read(r):
    n = r.config.n
    return (
      RowKernel("ln", "reduction", (), signatures[n]),
      RowKernel("ew", "elementwise", (), "same", why),
    )

  return read


class KernelIdentityTest(absltest.TestCase):
  def test_equal_complete_signatures_are_invariant(self):
    (a,) = invariance_of(_results(), reader=_reader(dict.fromkeys(_SIZES, "t")))
    self.assertIs(a.invariant, True)
    self.assertEqual(a.basis, "kernel identity")
    self.assertEqual(a.rows[0].classes, (_SIZES,))

  def test_a_differing_kernel_is_a_boundary(self):
    sig = {1: "t", 2: "t", 8: "t", 64: "u"}
    (a,) = invariance_of(_results(), reader=_reader(sig))
    self.assertIs(a.invariant, False)
    self.assertEqual(a.rows[0].classes, ((1, 2, 8), (64,)))
    (b,) = a.boundaries
    self.assertEqual((b.n, b.against), (64, 8))  # the nearest member
    # The kernel of n = 64 whose signature differs; no site's fate.
    self.assertEqual([(k.name, k.signature) for k in b.kernels], [("ln", "u")])
    self.assertFalse(b.sites)
    self.assertIsNone(b.unexplained)

  def test_incomplete_signatures_prove_nothing(self):
    why = RowCountWhy(RowCountRule.XLA_DOT)
    unread = KernelUnread(Unread.RECORD, why=why)
    reader = _reader(dict.fromkeys(_SIZES, "t"), why=unread)
    (a,) = invariance_of(_results(), reader=reader)
    self.assertIsNone(a.invariant)
    self.assertEqual(a.basis, "unknown")
    self.assertEqual(a.why.gap, Invariance.GAP.KERNEL)
    self.assertEqual((a.why.kernel.name, a.why.kernel.unread), ("ew", unread))

  def test_one_batch_size_asks_nothing(self):
    self.assertEqual(
      invariance_of(_results()[:1], reader=_reader({1: "t"})), ()
    )


_DATA = os.path.join(os.path.dirname(__file__), "..", "testdata", "kernels")
_RELEASES = ("0.12.0.1", "0.10.2")


def _recorded(release: str, stem: str, sizes):
  """ConfigResults of recorded a100 compiles and their kernel reader."""
  return recorded.kernel_fixtures(release, stem, sizes)


class ResultLeavesTest(parameterized.TestCase):
  @parameterized.product(release=_RELEASES, n=(1, 2, 8))
  def test_header_and_root_agree(self, release, n):
    # The header prints `->(f32[], f32[n,64]{1,0})`: the loss, then y.
    base = os.path.join(_DATA, release, f"batch_mean_a100_n{n}.hlo.txt")
    with open(base, encoding="utf-8") as f:
      text = f.read()
    self.assertEqual(result_leaves(text), ((), (n, 64)))
    # Without the header, the ENTRY root is parsed.
    headless = text.replace("entry_computation_layout=", "layout_was=", 1)
    self.assertEqual(result_leaves(headless), ((), (n, 64)))

  def test_not_a_module(self):
    with self.assertRaises(HloParseError):
      result_leaves("not hlo")


class BatchReductionTest(parameterized.TestCase):
  """The README's `my_case` on a100 (tests/testdata/kernels/
  record_batch_mean.py: `y = x @ w`, loss `jnp.mean(y * y)`), float32.

  Read off the fixtures by hand: the loss's `input_reduce_fusion` reduces
  f32[64] at n = 1, f32[128] at n = 2 and f32[512] at n = 8 (y * y
  bitcast flat: every row of y summed into one value), and reaches only
  the ROOT tuple's operand 0, the loss f32[] (the same shape at every n);
  y, f32[n,64], is operand 1. So it computes no row of y and must not be
  a cause (before, n = 2 and n = 8 each "differed" by it: three classes).
  What does compute y differs only at n = 1: XLA's dot strength
  reduction (xla/hlo/transforms/simplifiers/algebraic_simplifier.cc,
  a dot whose batch side is 1) makes it a multiply then a column
  reduction over K (`input_reduce_fusion.1`, reduce dims={0} of
  [256,64]); n = 2 and 8 run the same Triton gemm
  (`gemm_fusion_dot_general.1`, block_k 64 in both).
  """

  @parameterized.parameters(*_RELEASES)
  def test_batch_mean_is_not_a_cause(self, release):
    results, read = _recorded(release, "batch_mean_a100_n", (1, 2, 8))
    self.assertEqual(batched_leaves(results), frozenset({1}))
    (a,) = invariance_of(results, reader=read)
    self.assertIs(a.invariant, False)
    self.assertEqual(a.rows[0].classes, ((2, 8), (1,)))
    (b,) = a.boundaries
    self.assertEqual(b.n, 1)
    words = " ".join(boundary_causes(b)[0])
    # The real per-row difference is named: the column reduction of the
    # strength-reduced dot.
    self.assertIn("input_reduce_fusion.1", words)
    self.assertIn("column", words)
    # The batch mean is not.
    self.assertNotIn("reduce_sum", words)
    self.assertNotRegex(words, r"input_reduce_fusion(?!\.1)")
    for n in (1, 2, 8):
      self.assertNotIn("input_reduce_fusion", [k.name for k in a.kernels[n]])
      self.assertIn("input_reduce_fusion", [k.name for k in a.left_out[n]])
    (line,) = [x for x in kernel_lines([a]) if "not judged" in x]
    self.assertIn("reduce_sum at record_batch_mean.py:44", line)
    self.assertIn("input_reduce_fusion at n = 1-8", line)

  @parameterized.parameters(*_RELEASES)
  def test_every_leaf_batched_leaves_nothing_out(self, release):
    # Issue 38's model (record_fixtures.py): one output, f32[n,1000];
    # n = 64's split-K 2 gemm (tests/kernels/kernel_reader_test.py) is
    # still a cause.
    results, read = _recorded(release, "ln_model_a100_n", (8, 64))
    self.assertEqual(batched_leaves(results), frozenset({0}))
    (a,) = invariance_of(results, reader=read)
    self.assertEqual(a.left_out, {})
    self.assertEqual(a.rows[0].classes, ((8,), (64,)))
    said, _ = boundary_causes(a.boundaries[0])
    self.assertIn("split_k 1 -> 2", " ".join(said))

  @parameterized.parameters(*_RELEASES)
  def test_strength_reduced_reduce_is_the_sites(self, release):
    # At n = 1 site 0 (`y = x @ w`, record_batch_mean.py:43) is
    # multiply+reduce: its carrier is the multiply fusion
    # (`loop_multiply_fusion`); the reduce fusion after it
    # (`input_reduce_fusion.1`, metadata op_name ".../dot_general" at that
    # line) is the same site's, so its fate names it once. The loss's
    # reduce (line 44) is no site's.
    (r,), read = _recorded(release, "batch_mean_a100_n", (1,))
    hlo = r.compilation.optimized_hlo
    line = next(
      loc
      for k in read(r)
      for loc in k.record.source
      if loc.endswith("record_batch_mean.py:43")
    )
    site = types.SimpleNamespace(index=0, location=line, op="dot_general")
    fate = types.SimpleNamespace(
      site=site, fate=Fate.MULTIPLY_REDUCE, carriers=("loop_multiply_fusion",)
    )
    r = ConfigResult(
      r.config, Compilation(stablehlo="", optimized_hlo=hlo, fates=(fate,))
    )
    got = {k.name: k.sites for k in read(r)}
    self.assertEqual(
      got,
      {
        "loop_multiply_fusion": (0,),
        "input_reduce_fusion.1": (0,),
        "input_reduce_fusion": (),
        "loop_multiply_fusion.1": (),
      },
    )


# A batch-swept program whose one output is a mean over the batch: its
# result `f32[]` at every n (hand-written, as XLA prints a module).
_MEAN_ONLY = testutil.SUM_OVER_ROWS_HLO


class NoRowTest(absltest.TestCase):
  def _results(self):
    a100 = get_target("a100")
    return [
      ConfigResult(
        Config("m", a100, n, as_precision("float32")),
        Compilation(stablehlo="", optimized_hlo=_MEAN_ONLY.format(n=n)),
      )
      for n in _SIZES
    ]

  def test_a_batch_reduced_output_is_not_a_row(self):
    # The reduce's signature changes with n (it sums n * 8 values), but
    # no output holds a row: no kernel is blamed.
    sig = {1: "t", 2: "t", 8: "t", 64: "u"}
    (a,) = invariance_of(self._results(), reader=_reader(sig))
    self.assertIsNone(a.invariant)
    self.assertEqual(a.basis, "unknown")
    self.assertEqual(a.boundaries, ())
    self.assertEqual(a.why.gap, Invariance.GAP.UNBATCHED)
    self.assertEqual(a.why.shapes, ((),))  # f32[] at every n
    line = " ".join(answer_lines([a]))
    self.assertIn("not a per-row output", line)
    self.assertIn("same shape, [], at every n", line)

  def test_a_sized_case_is_judged_by_its_kernels(self):
    # A sized case's n is not a batch (jax_19444's Gram matrix keeps its
    # shape over K): its kernels are judged as before.
    sig = {1: "t", 2: "t", 8: "t", 64: "u"}
    (a,) = invariance_of(self._results(), reader=_reader(sig), sized={"m"})
    self.assertIs(a.invariant, False)
    self.assertEqual(a.rows[0].classes, ((1, 2, 8), (64,)))


if __name__ == "__main__":
  absltest.main()
