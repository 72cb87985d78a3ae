"""The built-in cases on a compile-only A100, against XLA's rule.

The rule (xla/service/gpu/transforms/dot_strength_reduction.h,
`DotStrengthReduction`, pass "dot-strength-reduction": "vector * vector
dots" and "some vector * matrix dots (depending on size)" become
broadcast, multiply and reduce; jaxlib 0.12.0.1): at n = 1 a vmapped
`x @ w` is a vector-matrix dot, so its row is computed by a reduce there
and by a gemm at n > 1: n = 1 is a class of its own. Read independently
of hloprobe from the optimized HLO by regex: no gemm fusion at n = 1, one
at n = 2. The elementwise control has no reduction and no contraction:
one class (XLA's loop emitter computes each element by the same code).
"""

from __future__ import annotations

import re

import pytest
from absl.testing import absltest

from hloprobe import engine
from hloprobe.invariance import invariance_of
from hloprobe.sites import Fate

pytestmark = [pytest.mark.compiles, pytest.mark.release_rules]

_GEMM = re.compile(r"fusion\(.*__triton_(nested_)?gemm_fusion")


class A100RuleTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    spec = engine.SweepSpec(
      ("jax_34080", "elementwise_only"),
      (1, 2),
      ("default",),
      ("a100",),
      explain_passes=True,
      numerics=False,  # the bits only: explain --only=invariance's sweep
    )
    cls.results = engine.run_sweep(spec)
    cls.answers = {a.case: a for a in invariance_of(cls.results)}

  def _hlo(self, case: str, n: int) -> str:
    (r,) = [
      r for r in self.results if r.config.case == case and r.config.n == n
    ]
    return r.compilation.optimized_hlo

  def test_jax_34080_batch_of_one_is_strength_reduced(self):
    self.assertIsNone(_GEMM.search(self._hlo("jax_34080", 1)))
    self.assertIsNotNone(_GEMM.search(self._hlo("jax_34080", 2)))
    a = self.answers["jax_34080"]
    self.assertIs(a.invariant, False)
    self.assertEqual(a.basis, "kernel identity")
    self.assertEqual(sorted(a.rows[0].classes), [(1,), (2,)])
    # Two classes of one size each: n = 1 is the reference, n = 2 the
    # boundary, named by what its site is there.
    (b,) = a.boundaries
    self.assertEqual((b.n, b.against), (2, 1))
    (c,) = b.sites.changes
    self.assertEqual((c.site, c.now.fate), (0, Fate.TRITON_GEMM))

  def test_elementwise_control_is_one_class(self):
    self.assertIsNone(_GEMM.search(self._hlo("elementwise_only", 2)))
    self.assertNotIn(" reduce(", self._hlo("elementwise_only", 2))
    a = self.answers["elementwise_only"]
    self.assertIs(a.invariant, True)
    self.assertEqual(a.rows[0].classes, ((1, 2),))


if __name__ == "__main__":
  absltest.main()
