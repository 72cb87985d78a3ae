"""report/explain_text.py: the explanation rendered as text, on
explanations made by hand (no XLA; moved from report/explain_test.py's
RenderTest): predicted groups print their range, a failed prediction says
why, and wrapping keeps a batch range whole."""

from __future__ import annotations

import testutil
from absl.testing import absltest

from hloprobe.report import explain_records, explain_text

# A multiply+reduce fate at sites 0-3, as the seed's n = 1 has it.
_MR = (
  (0, 1, 2, 3),
  "multiply+reduce",
  "dot-strength-reduction, simplification",
)


def _explanation(**fields):
  """A compile-only float32 explanation of seed_mlp on target "x"."""
  return testutil.explanation(
    **{
      "case": "seed_mlp",
      "target": "x",
      "precisions": {"float32": "float32 (HIGHEST)"},
      **fields,
    }
  )


class RenderTest(absltest.TestCase):
  def test_predicted_group_prints_its_range(self):
    within = "within f32 noise"
    e = _explanation(
      predicted=(
        # Hand-made values: n = 1-3 differ, n = 4-5 print alike.
        explain_records.PredictedRowZero(
          "float32",
          (1, 2, 3),
          3.86e-5,
          3.9e-5,
          within,
          None,
          None,
          1.56e-5,
          1.6e-5,
        ),
        explain_records.PredictedRowZero(
          "float32",
          (4, 5),
          2.08e-5,
          2.1e-5,
          within,
          None,
          None,
          2.08e-5,
          2.1e-5,
        ),
      )
    )
    text = explain_text.render_explanation([e], width=10_000)
    self.assertIn(
      "n = 1-3: |err| vs f64 1.56e-05 to 3.86e-05 (f32 noise floor 1.6e-05 "
      "to 3.9e-05), within f32 noise; n = 4-5: |err| vs f64 2.08e-05 (f32 "
      "noise floor 2.1e-05), within f32 noise",
      text,
    )

  def test_a_failed_prediction_is_said(self):
    why = "not predicted: no float64 reference: KeyError: 'num_consts'"
    e = _explanation(
      predicted=(
        explain_records.PredictedRowZero(
          "float32", (1, 2), None, None, why, None, None
        ),
      )
    )
    text = explain_text.render_explanation([e], width=10_000)
    self.assertIn(f"n = 1-2: {why}", text)

  def test_wrap_keeps_batch_ranges_whole(self):
    e = _explanation(
      spans={
        "float32": (
          explain_records.FateSpan((1,), (_MR,)),
          explain_records.FateSpan(tuple(range(2, 10)), (_MR,)),
        )
      },
    )
    text = explain_text.render_explanation([e], width=60)
    self.assertTrue(
      all(len(l) <= 60 or " " not in l.strip() for l in text.splitlines())
    )
    self.assertNotRegex(text, r"n =\n|n\n")
    self.assertIn("n = 2-9:", text)
    self.assertIn("no fate to settle (no config compiled, or no site)", text)


if __name__ == "__main__":
  absltest.main()
