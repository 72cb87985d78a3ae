"""`verify`'s evidence records in words: the lines `hloprobe verify` has
always printed, pinned, and a planted difference that shows."""

from __future__ import annotations

from absl.testing import absltest, parameterized

from hloprobe.report import verification
from hloprobe.verify import evidence as ev

_WHO = ev.Subject("a100", "seed_mlp", 2, "float32")
_PREDICTED = ev.Source("predicted")
_AMBIGUOUS = ev.Source("predicted", (0, 1, 2))


class EvidenceLineTest(parameterized.TestCase):
  @parameterized.named_parameters(
    (
      "moved",
      ev.RowMoved(
        _WHO,
        "",
        -0.5281516,
        -0.5281708,
        1,
        1.92e-5,
        1,
        _PREDICTED,
        2.02e-4,
        True,
      ),
      "a100 seed_mlp n=2 float32: row 0 -0.5281516 vs -0.5281708 at n=1, "
      "moved 1.92e-05 (predicted); limit 2.02e-04",
    ),
    (
      "moved_many_values_ambiguous",
      ev.RowMoved(_WHO, "y", 1.0, 2.0, 1, 0.5, 3, _AMBIGUOUS, 1e-4, False),
      "a100 seed_mlp n=2 float32: row 0 y (first values) 1 vs 2 at n=1, "
      "moved 5.00e-01, the largest of its 3 values (predicted with TF32 at "
      "cuBLAS sites [0, 1, 2], which may keep f32: ambiguous); limit 1.00e-04",
    ),
    (
      "errors_noise",
      ev.ErrorsJudged(
        _WHO,
        "",
        1.01e-4,
        1.01e-4,
        1.9e-4,
        ev.Source("observed"),
        ev.NoiseLimits(2.0, 1.01e-4, 1.01e-4),
        (),
        True,
      ),
      "a100 seed_mlp n=2 float32: row-0 |err| 1.01e-04, max |err| 1.01e-04, "
      "max rel 1.90e-04 (observed); limits row-0 |err| 2.02e-04, max |err| "
      "2.02e-04 (2 x noise floor 1.01e-04, 1.01e-04)",
    ),
    (
      "errors_bounds_other_leaf",
      ev.ErrorsJudged(
        _WHO,
        "a",
        1.0,
        2.0,
        3.0,
        _PREDICTED,
        ev.ErrorBounds(0.1, None),
        (ev.LeafErrors("b", 4.0, 5.0),),
        False,
      ),
      "a100 seed_mlp n=2 float32: a row-0 |err| 1.00e+00, max |err| 2.00e+00,"
      " max rel 3.00e+00 (predicted); abs bound 0.1, rel bound None; not "
      "accurate: b max |err| 4.00e+00, max rel 5.00e+00",
    ),
    (
      "no_base",
      ev.NotJudged(_WHO, ev.Reason.NO_BASE, "y", _PREDICTED, 1),
      "a100 seed_mlp n=2 float32: no predicted row 0 of y at n=1 to compare "
      "with",
    ),
    (
      "no_batch_axis",
      ev.NotJudged(_WHO, ev.Reason.NO_BATCH_AXIS, "loss"),
      "a100 seed_mlp n=2 float32: output leaf loss has no batch axis, so no "
      "row 0 that should stay fixed as n changes",
    ),
    (
      "no_configs",
      ev.NotJudged(None, ev.Reason.NO_CONFIGS),
      "no configs of the fix to compare",
    ),
    (
      "no_errors",
      ev.NotJudged(_WHO, ev.Reason.NO_ERRORS),
      "a100 seed_mlp n=2 float32: no errors to judge",
    ),
    (
      "too_few",
      ev.TooFewSizes("cpu", "seed_mlp", "float32", 2),
      "cpu seed_mlp float32: consistent needs at least two batch sizes; "
      "got n=2",
    ),
    (
      "missing_golden",
      ev.GoldenNote("missing", "a100/seed_mlp/n2-bfloat16-x.dots.json"),
      "missing golden a100/seed_mlp/n2-bfloat16-x.dots.json (run `hloprobe "
      "golden update` with the fix's sweep)",
    ),
    ("golden_match", ev.GoldenNote("match", 9), "9 golden files match"),
  )
  def test_line(self, record, line):
    self.assertEqual(verification.evidence_line(record), line)

  def test_planted_difference_shows(self):
    base = ev.RowMoved(_WHO, "", 1.0, 1.0, 1, 0.0, 1, _PREDICTED, 1e-4, True)
    moved = ev.RowMoved(_WHO, "", 1.5, 1.0, 1, 0.5, 1, _PREDICTED, 1e-4, False)
    self.assertNotEqual(
      verification.evidence_line(base), verification.evidence_line(moved)
    )
    self.assertIn("moved 5.00e-01", verification.evidence_line(moved))


class EvidenceCellTest(absltest.TestCase):
  """The table's cell holds the deciding line, cut, not the whole
  evidence listed below it (check38b: ~1,000 characters twice)."""

  def test_a_short_single_line_is_whole(self):
    self.assertEqual(
      verification._cell(["row 0: identical"]), "row 0: identical"
    )
    self.assertEqual(verification._cell([]), "")

  def test_a_long_line_is_cut_at_a_word(self):
    line = "tm_mm: row 0 is not batch-invariant " + "x " * 80
    cell = verification._cell([line])
    self.assertTrue(cell.endswith(" ... (below)"), cell)
    self.assertLessEqual(len(cell), 100 + len(" ... (below)"))
    self.assertTrue(line.startswith(cell.removesuffix(" ... (below)")))

  def test_more_lines_point_below(self):
    self.assertEqual(verification._cell(["a", "b"]), "a ... (below)")


if __name__ == "__main__":
  absltest.main()
