"""Verdicts as records (`numerics.verdicts`): kinds judged from numbers,
words made from the fields, and no verdict or fate words parsed by prefix
outside report/."""

from __future__ import annotations

import pathlib
import re

from absl.testing import absltest

from hloprobe.numerics import (
  Made,
  Verdict,
  VerdictKind,
  accuracy,
  integers,
)
from hloprobe.numerics.accuracy import ErrorStats, NoiseFloor
from hloprobe.numerics.made import MathChange, NotExecuted, config_judgement
from hloprobe.report.verdict_words import verdict_words
from hloprobe.sites import Fate

_NOISE = NoiseFloor(row0_abs=1e-4, max_abs=2e-4, row0_spread_abs=1e-5)
_TF32 = ("TF32_TF32_F32", "TF32_TF32_F32", "F32_F32_F32")


def _stats(err: float) -> ErrorStats:
  return ErrorStats(1.0 + err, 1.0, err, err, err)


class KindTest(absltest.TestCase):
  def test_each_float_kind_and_its_fields(self):
    judge = lambda err, algs=_TF32, dtype="float32": accuracy.judge(
      None, _stats(err), _NOISE, 0.05, algs, dtype
    )
    self.assertEqual(judge(0.0).kind, VerdictKind.EXACT)
    # 1.5e-4 <= NOISE_FACTOR (2) x the floor 1e-4: noise.
    self.assertEqual(judge(1.5e-4).kind, VerdictKind.WITHIN_NOISE)
    explained = judge(0.5)
    self.assertEqual(explained.kind, VerdictKind.EXPLAINED)
    self.assertEqual(explained.algorithms, (("TF32_TF32_F32", (0, 1)),))
    self.assertFalse(explained.accurate)
    unexplained = judge(0.5, ("F32_F32_F32",) * 3)
    self.assertEqual(unexplained.kind, VerdictKind.UNEXPLAINED)
    self.assertEqual(
      verdict_words(judge(1.5e-4, dtype="bfloat16")),
      ("within bf16 output rounding"),
    )

  def test_integer_overflow_counts(self):
    # 3 of 8 int8 elements whose exact value (e.g. 200) exceeds 127.
    s = ErrorStats(
      0.0,
      0.0,
      0.0,
      56.0,
      1.0,
      leaf="['y']",
      elements=8,
      mismatched=3,
      overflowed=3,
      overflow_mode="wraps",
    )
    v = integers.integer_judgement(s, "int8")
    self.assertEqual(
      (v.kind, v.mismatched, v.overflowed), (VerdictKind.OVERFLOW, 3, 3)
    )
    self.assertEqual(
      verdict_words(v),
      "overflow: 3 of 8 elements of ['y'] exceed s8 [-128, 127] and wrap",
    )
    off = integers.integer_judgement(
      ErrorStats(0, 0, 0, 1, 1, elements=8, mismatched=4, overflowed=3),
      "int8",
    )
    self.assertEqual(off.kind, VerdictKind.UNEXPLAINED)

  def test_notes_follow_the_words(self):
    v = Verdict(VerdictKind.EXPLAINED, algorithms=(("BF16_BF16_F32", (2,)),))
    v = v.noted(None, "site 0 ambiguous, emulated as F32", "")
    self.assertEqual(
      verdict_words(v),
      "explained by BF16_BF16_F32 at sites [2]; site 0 ambiguous, emulated "
      "as F32",
    )
    self.assertEqual(v.kind, VerdictKind.EXPLAINED)


class ConfigJudgementTest(absltest.TestCase):
  def test_math_changed_leads_and_incomplete_is_noted(self):
    within = Verdict(VerdictKind.WITHIN_NOISE)
    change = MathChange("cublas-lt-matmul.1", "__cublas$lt$matmul", "", 0, None)
    # |widened module - float64| 91 beyond its F32 band 4.2e-5.
    changed = Made(None, 91.0, 4.2e-5, changes=(change,))
    got = config_judgement(within, changed)
    self.assertEqual(got.kind, VerdictKind.MATH_CHANGED)
    self.assertEqual(got.notes, (change,))
    partial = Made(None, None, None, not_executed=("custom-call.2",))
    self.assertEqual(
      config_judgement(within, partial).kind, VerdictKind.WITHIN_NOISE
    )
    self.assertEqual(
      config_judgement(within, partial).notes,
      (NotExecuted(("custom-call.2",)),),
    )
    alone = config_judgement(None, partial)
    self.assertEqual(alone.kind, VerdictKind.INCOMPLETE)
    self.assertIs(config_judgement(within, Made(None, 1e-6, 4.2e-5)), within)


# Words a verdict or fate starts with (`report.verdict_words`,
# `numerics.made`, `sites.Fate`'s values): matching them by prefix outside
# report/ reads a record's words back instead of its fields.
_WORDS = (
  "exact",
  "within",
  "explained",
  "unexplained",
  "overflow",
  "XLA changed",
  "prediction incomplete",
  "not executed",
  "does what",
  *(f.value for f in Fate),
)
_PREFIX = re.compile(
  r"\.(?:startswith|endswith)\(\s*\(?\s*[\"'](?:"
  + "|".join(re.escape(w) for w in _WORDS)
  + r")"
)
# A verdict compared with its words: `verdict == "unexplained"`.
_COMPARED = re.compile(
  r"verdicts?\w*\s*[!=]=\s*[\"']|[\"']\s*[!=]=\s*\w*verdict"
  # words looked for inside one: `"split-K" in w for w in fates`,
  # `alg not in verdict`.
  r"|\bin\s+(?:\w+\.)*\w*verdict\b(?!\.)"
  r"|[\"']\s+(?:not\s+)?in\s+w\s+for\s+w\s+in\s+\w*fates"
)
# A fate's own words compared or looked for (`fate != "Triton gemm"`,
# `"multiply+reduce" in v`): the values no HLO opcode shares (a lower-case
# word such as "dot" or "multiply" is also an opcode, compared legitimately).
_FATE_WORDS = "|".join(
  re.escape(f.value)
  for f in Fate
  if not (f.value.isalpha() and f.value.islower())
)
_FATE_LITERAL = re.compile(
  rf"[!=]=\s*[\"'](?:{_FATE_WORDS})[\"']"
  rf"|[\"'](?:{_FATE_WORDS})[\"']\s*(?:[!=]=|(?:not\s+)?in\b)"
)


class NoPrefixParsingTest(absltest.TestCase):
  def test_no_verdict_or_fate_words_parsed_outside_report(self):
    root = pathlib.Path(__file__).resolve().parents[2] / "hloprobe"
    found = []
    for path in sorted(root.rglob("*.py")):
      if "report" in path.relative_to(root).parts[:1]:
        continue
      for i, line in enumerate(path.read_text().splitlines(), 1):
        if any(p.search(line) for p in (_PREFIX, _COMPARED, _FATE_LITERAL)):
          found.append(f"{path.relative_to(root.parent)}:{i}: {line.strip()}")
    self.assertEqual(found, [], "read the record's fields instead")

  def test_the_patterns_catch_what_they_forbid(self):
    for line in (
      'if v.startswith("within "):',
      "any(w.startswith('Triton gemm') for w in fates)",
      'verdict.startswith(("overflow", "unexplained"))',
      'if verdict == "unexplained":',
      'p.verdict != "exact"',
      'any("split-K" in w for w in fates)',
      "if alg not in verdict and alg not in elsewhere",
      'if fate != "Triton gemm":',
      'any("multiply+reduce" in v for f, v in rec.arithmetic)',
      "if 'cuDNN fused attention' == kind:",
    ):
      self.assertTrue(
        any(p.search(line) for p in (_PREFIX, _COMPARED, _FATE_LITERAL)), line
      )
    for line in ('if inst.opcode == "dot":', 'op.opcode != "multiply"'):
      self.assertFalse(_FATE_LITERAL.search(line), line)


if __name__ == "__main__":
  absltest.main()
