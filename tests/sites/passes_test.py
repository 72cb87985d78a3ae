"""Pass attribution from real XLA pass dumps, on the CPU and on a100."""

from __future__ import annotations

import pytest
from absl.testing import absltest, parameterized

from hloprobe import sweep
from hloprobe.compile import cases, targets
from hloprobe.errors import HloprobeError
from hloprobe.sites import passes

pytestmark = pytest.mark.compiles


def _attribution(target: str, n: int, precision: str = "float32"):
  case = cases.get_case("seed_mlp")
  r = sweep.run_config(
    case,
    case.make_inputs(),
    None,
    targets.get_target(target),
    precision,
    n,
    explain_passes=True,
  )
  self_check = r.compilation.passes_error
  assert r.ok and self_check is None, (r.failure, self_check)
  return r.compilation.passes


class CpuPassesTest(absltest.TestCase):
  def test_batch_1_last_site_strength_reduced_by_algsimp(self):
    found = _attribution("cpu", 1)
    # On the CPU, AlgebraicSimplifier (algsimp) does dot strength reduction.
    self.assertEqual(set(found), {3})
    self.assertEqual(
      (found[3].pass_name, found[3].pipeline, found[3].fate),
      ("algsimp", "simplification", "multiply+reduce"),
    )

  def test_batch_2_dots_go_to_the_dot_library(self):
    found = _attribution("cpu", 2)
    self.assertEqual(set(found), {0, 1, 2})
    self.assertEqual(
      {a.pass_name for a in found.values()}, {"dot-library-rewriter"}
    )
    self.assertEqual({a.fate for a in found.values()}, {"dot in __ynn_fusion"})

  def test_no_dumps(self):
    with self.assertRaisesRegex(HloprobeError, "no pass dumps"):
      passes.attribute_passes([("unrelated.txt", "")], [])


class A100PassesTest(parameterized.TestCase):
  def test_batch_1_all_sites_dot_strength_reduction(self):
    found = _attribution("a100", 1, "bfloat16")
    self.assertEqual(set(found), {0, 1, 2, 3})
    self.assertEqual(
      {(a.pass_name, a.pipeline) for a in found.values()},
      {("dot-strength-reduction", "simplification")},
    )
    self.assertEqual({a.fate for a in found.values()}, {"multiply+reduce"})

  def test_batch_2_triton_gemm_rewriter(self):
    found = _attribution("a100", 2, "bfloat16")
    self.assertEqual(
      {i: found[i].fate for i in found},
      {
        0: "Triton gemm",
        1: "Triton gemm",
        2: "Triton gemm",
        3: "multiply+reduce",
      },
    )
    self.assertEqual(
      {found[i].pass_name for i in (0, 1, 2)}, {"triton-gemm-rewriter"}
    )
    self.assertEqual(found[3].pass_name, "dot-strength-reduction")


if __name__ == "__main__":
  absltest.main()
