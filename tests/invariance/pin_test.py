"""The pins listed untried (plain `explain`, `pin.untried_pins`): each
carries the one command that tries and verifies its group's candidates
(issue 38: plain explain printed four untried candidates as "Do:", all
of which fail for dense_ln_softmax on the a100). The plan is made, not
swept; the groups are hand-made with the causes explain reads there."""

from __future__ import annotations

import shlex

from absl.testing import absltest

from hloprobe import api
from hloprobe.cli._main import command_flags
from hloprobe.invariance import Invariance
from hloprobe.invariance.answer import Boundary
from hloprobe.invariance.pin import NOT_TRIED, untried_pins
from hloprobe.invariance.rows import ROW0, RowClasses

_SIZES = (1, 2, 8, 64)


def _group(target: str, precision: str, causes, invariant=False):
  return Invariance(
    "dense_ln_softmax",
    target,
    precision,
    "baseline",
    "kernel identity",
    (RowClasses(ROW0, ((2, 8), (1,), (64,))),),
    (Boundary(1, 2, causes[:1]), Boundary(64, 2, causes[1:])),
    invariant=invariant,
    sizes=_SIZES,
  )


class UntriedPinsTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.plan = api.plan_case(
      "dense_ln_softmax",
      targets="cpu,a100",
      batch_sizes=list(_SIZES),
      precisions="bfloat16,float32",
    )

  def test_one_search_command_per_case_and_target(self):
    causes = (
      "sites 0-1 multiply+reduce after dot strength reduction",
      "site 1 Triton gemm split-K 4",
    )
    groups = [
      _group("a100", "bfloat16", causes),
      _group("a100", "float32", causes),
      _group("cpu", "float32", ("sites 0-1 run in __ynn_fusion",)),
      _group("cpu", "bfloat16", (), invariant=True),
    ]
    pins = untried_pins(self.plan, groups)
    self.assertTrue(pins)
    self.assertTrue(all(p.not_tried and p.reason == NOT_TRIED for p in pins))
    searches = {(p.target, p.search) for p in pins}
    self.assertEqual(
      searches,
      {
        (
          "a100",
          "hloprobe explain --case=dense_ln_softmax --targets=a100 "
          "--batch_sizes=1,2,8,64 --precisions=bfloat16,float32 "
          "--only=invariance --invariance=pin",
        ),
        (
          "cpu",
          "hloprobe explain --case=dense_ln_softmax --targets=cpu "
          "--batch_sizes=1,2,8,64 --precisions=float32 --only=invariance "
          "--invariance=pin",
        ),
      },
    )

  def test_its_flags_are_explains(self):
    causes = ("multiply+reduce", "split-K 4")
    (pin, *_) = untried_pins(self.plan, [_group("a100", "float32", causes)])
    words = shlex.split(pin.search)
    self.assertEqual(words[:2], ["hloprobe", "explain"])
    owners = command_flags()
    for word in words[2:]:
      name = word.removeprefix("--").partition("=")[0]
      self.assertIn(owners.get(name, ("explain",)), [("explain",)], word)


if __name__ == "__main__":
  absltest.main()
