"""Verdicts, rows and findings in words (`report/verdict_words.py`), and
where such sentences may be made: in report/ only (issue 36, item 2).

The records are made by hand; the expected words are written out here."""

from __future__ import annotations

import ast
import math
import pathlib

from absl.testing import absltest

from hloprobe import records
from hloprobe.compile import get_target
from hloprobe.numerics import Made, Verdict, VerdictKind, WorstRow
from hloprobe.numerics.made import MathChange
from hloprobe.numerics.verdicts import FarCause, FarRows
from hloprobe.report import verdict_words as vw
from hloprobe.verify.candidates import TrialReason
from hloprobe.verify.findings import Finding, Said

_TF32 = (("TF32_TF32_F32", (0, 1, 2)),)


def _worst(**kw) -> WorstRow:
  fields = dict(
    leaf="",
    row=5,
    abs_err=1e-3,
    floor_abs=1e-6,
    multiple=500.0,
    rows=8,
    beyond=2,
    first_beyond=3,
    last_beyond=5,
    beyond_abs=1e-3,
  )
  return WorstRow(**(fields | kw))


class VerdictWordsTest(absltest.TestCase):
  def test_kinds(self):
    self.assertEqual(vw.verdict_words(Verdict(VerdictKind.EXACT)), "exact")
    self.assertEqual(
      vw.verdict_words(Verdict(VerdictKind.WITHIN_NOISE, "bfloat16")),
      "within bf16 output rounding",
    )
    self.assertEqual(
      vw.verdict_words(Verdict(VerdictKind.EXPLAINED, algorithms=_TF32)),
      "explained by TF32_TF32_F32 at sites [0, 1, 2]",
    )
    noted = Verdict(VerdictKind.UNEXPLAINED, notes=("a note", "another"))
    self.assertEqual(vw.verdict_words(noted), "unexplained; a note; another")

  def test_far_rows_lead_with_their_cause(self):
    far = FarRows(32768, 39999, 7232, 40000, None, 1e7, FarCause.MISCOMPILE)
    v = Verdict(VerdictKind.WITHIN_NOISE, far_rows=far)
    self.assertEqual(
      vw.verdict_words(v),
      "rows 32768-39999 of 40000 wrong by up to 1.0e+07: suspected XLA:CPU "
      "miscompile; within f32 noise",
    )
    one = FarRows(5, 5, 1, 8, None, 0.31, FarCause.UNEXPLAINED)
    self.assertEqual(
      vw.verdict_words(Verdict(VerdictKind.EXACT, far_rows=one)),
      "row 5 of 8 wrong by 3.1e-01: unexplained by the sites' algorithms; "
      "exact",
    )
    some = FarRows(40, 90, 2, 100, 4, math.nan, FarCause.MISCOMPILE)
    self.assertEqual(
      vw.far_rows_words(some),
      "2 of 4 judged rows of 100 wrong (rows 40 to 90) by up to NaN",
    )

  def test_rows(self):
    self.assertEqual(
      vw.row_words(_worst(leaf="['w']")),
      "['w'] row 5: 1.0e-03, 500x beyond f32 noise (2 of 8 rows)",
    )
    self.assertEqual(
      vw.row_words(_worst(leaf="['w']"), leaf=False),
      "row 5: 1.0e-03, 500x beyond f32 noise (2 of 8 rows)",
    )
    within = _worst(beyond=0, multiple=0.5, judged=(0, 3))
    self.assertEqual(vw.row_words(within), "every judged row within f32 noise")
    self.assertEqual(
      vw.judged_words(within),
      "2 of 8 rows: row 0, 32 spread evenly and the 16 of largest error by a "
      "first pass, per leaf (--all_rows: every row)",
    )

  def test_made_and_config_words(self):
    change = MathChange(
      "cublas-lt-matmul.1", "__cublas$lt$matmul", "beta 0", 0, None
    )
    changed = Made(None, 91.0, 4.2e-5, changes=(change,))
    self.assertEqual(
      vw.made_words(changed),
      "XLA changed the math: __cublas$lt$matmul cublas-lt-matmul.1 (beta 0) "
      "from site 0",
    )
    partial = Made(None, None, None, not_executed=("x (custom-call.2)",))
    self.assertIsNone(vw.made_words(Made(None, 1e-6, 4.2e-5)))
    config = records.Config("c", get_target("a100"), 2, "bfloat16")
    self.assertIsNone(vw.config_words(records.ConfigResult(config)))
    self.assertEqual(
      vw.config_words(records.ConfigResult(config, made=partial)),
      "prediction incomplete: not executed: x (custom-call.2)",
    )

  def test_findings_and_trials(self):
    def finding(kind, what, **kw):
      return Finding(
        kind, "c", "a100", "baseline", True, ("bf16",), (2, 9), what, **kw
      )

    far = _worst(multiple=5000.0)
    row = finding("row", Said(leaf="['w']", row=5, rows=8, worst=far))
    self.assertEqual(vw.what_words(row), "['w'] row 5 of 8 beyond its floor")
    bad = finding("row", Said(row=5, rows=8, miscompile=True, worst=far))
    self.assertEqual(
      vw.what_words(bad),
      "2 rows of 8 wrong (rows 3 to 5) by up to 1.0e-03: suspected XLA:CPU "
      "miscompile",
    )
    leaf = finding("leaf", Said(Verdict(VerdictKind.UNEXPLAINED), "['s8']"))
    self.assertEqual(vw.what_words(leaf), "['s8']: unexplained")
    passed = TrialReason(True, ("consistent", "accurate"), 3)
    trial = type("T", (), {"reason": passed})
    self.assertEqual(
      vw.trial_words(trial), "consistent and accurate on 3 configs"
    )
    left = finding(
      "row 0",
      Said(Verdict(VerdictKind.EXPLAINED, algorithms=_TF32)),
      error_abs=0.61,
      floor_abs=1e-4,
      floor_dtype="float32",
      ratio=6100.0,
    )
    self.assertEqual(vw.floor_words(left), "f32 noise floor")
    bf16 = finding("row", Said(row=1, rows=2), floor_dtype="bfloat16")
    self.assertEqual(vw.floor_words(bf16), "bfloat16 noise floor")
    self.assertEqual(
      vw.floor_words(finding("changed the math", Said())), "F32 band"
    )
    failed = records.Failure("compile", "XlaRuntimeError: INTERNAL: no")
    self.assertEqual(
      vw.what_words(finding("failed", Said(failure=failed))),
      "compile failed: XlaRuntimeError: INTERNAL: no",
    )
    unjudged = finding("not judged", Said(why="EmulationError: x"))
    self.assertEqual(vw.what_words(unjudged), "not judged: EmulationError: x")
    trial.reason = TrialReason(False, ("accurate",), 3, left)
    self.assertEqual(
      vw.trial_words(trial),
      "accurate failed: a100 n = 2, 9: 6.10e-01, 6100x the f32 noise floor: "
      "explained by TF32_TF32_F32 at sites [0, 1, 2]",
    )


# Phrases of the verdict, row and finding words (`report/verdict_words.py`)
# and of the batch-invariance causes (`report/invariance_causes.py`):
# in string literals (docstrings aside) outside report/ and the printing
# edge (cli, commands, tools, pictures) they appear only where listed.
_PHRASES = (
  "explained by",
  "beyond its floor",
  "wrong by",
  "wrong (rows",
  "every row",
  "judged rows",
  "x beyond",
  " output rounding",
  "f32 noise",
  "changed the math",
  "not localised",
  "prediction incomplete",
  "exceed ",
  "differ from the exact",
  # The batch-invariance causes (`report/invariance_causes.py`): a class
  # boundary's, why the kernel model does not class a size.
  "changed fate",
  "contraction sites at n",
  "a library kernel chosen",
  "its order is not modelled",
  "not modelled bit for bit",
  "fuse into one multiply-add",
  "model's bits not computed",
)
_EDGE = ("report", "cli", "commands", "tools", "pictures")
# Where these phrases may still appear outside report/, and why.
_ALLOWED = {
  # A finding's kind (`Finding.kind`), not its words.
  ("verify/findings.py", "changed the math"),
}


def _literals(tree: ast.AST):
  """Every string constant of `tree` but docstrings."""
  docs = {
    id(node.body[0].value)
    for node in ast.walk(tree)
    if isinstance(
      node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    )
    and node.body
    and isinstance(node.body[0], ast.Expr)
    and isinstance(node.body[0].value, ast.Constant)
  }
  for node in ast.walk(tree):
    if (
      isinstance(node, ast.Constant)
      and isinstance(node.value, str)
      and id(node) not in docs
    ):
      yield node


def _phrases_outside(root: pathlib.Path) -> set[tuple[str, str]]:
  found = set()
  for path in sorted(root.rglob("*.py")):
    rel = path.relative_to(root)
    if rel.parts[0] in _EDGE:
      continue
    for node in _literals(ast.parse(path.read_text())):
      for phrase in _PHRASES:
        if phrase in node.value:
          found.add((rel.as_posix(), phrase))
  return found


class SentencesOnlyInReportTest(absltest.TestCase):
  def test_verdict_sentences_are_made_in_report_only(self):
    root = pathlib.Path(vw.__file__).resolve().parents[1]
    found = _phrases_outside(root)
    self.assertEqual(found - _ALLOWED, set(), "make the words in report/")
    self.assertEqual(_ALLOWED - found, set(), "drop what no longer holds")

  def test_the_scan_sees_f_strings_not_docstrings(self):
    tree = ast.parse(
      'def f(w):\n  """explained by X"""\n  return f"row {w} beyond its floor"\n'
    )
    self.assertEqual(
      [n.value for n in _literals(tree)], ["row ", " beyond its floor"]
    )


if __name__ == "__main__":
  absltest.main()
