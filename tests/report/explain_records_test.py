"""break26: where no config of a compile-only target compiled (or none has
a contraction site), `explain` says so instead of "fates chosen by n/a".

Found with `hloprobe.explain` on a function whose every compile failed
(a wrong einsum): the last block read "a100: fates chosen by n/a; a real
a100 may autotune to another gemm config or emitter".
"""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.report import explain_text
from hloprobe.report.explain_records import TargetExplanation


def _explanation(selection):
  return TargetExplanation(
    case="f",
    target="a100",
    experiment="baseline",
    compile_only=True,
    precisions={"float32": "float32 (HIGHEST)"},
    spans={"float32": ()},
    algorithms=(),
    changes=(),
    row0=(),
    predicted=(),
    alternatives=(),
    selection=selection,
    reported=None,
    notes=("n = 1, float32: compile failed: ValueError: bad einsum",),
  )


class UnsettledTest(absltest.TestCase):
  def test_nothing_compiled_says_so(self):
    text = explain_text.render_explanation([_explanation(None)])
    self.assertIn(
      "a100: no fate to settle (no config compiled, or no site)", text
    )
    self.assertNotIn("n/a", text.split("cannot settle")[1])

  def test_a_compiled_target_names_who_chose(self):
    text = explain_text.render_explanation([_explanation("XLA heuristic")])
    self.assertIn("a100: fates chosen by XLA heuristic; a real a100 may", text)


if __name__ == "__main__":
  absltest.main()
