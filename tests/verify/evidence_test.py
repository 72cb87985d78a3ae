"""`verify.evidence`: each record says what it is (`evidence_kind`), once,
and every kind of `Evidence` has its words in report (which reads the
records by field, not by class)."""

from __future__ import annotations

import dataclasses

from absl.testing import absltest

from hloprobe.report import verification
from hloprobe.verify import evidence as ev


def _records() -> list[type]:
  return [
    c
    for c in vars(ev).values()
    if dataclasses.is_dataclass(c) and isinstance(c, type)
  ]


class EvidenceKindTest(absltest.TestCase):
  def test_each_kind_names_one_record(self):
    kinds = [c.evidence_kind for c in _records() if hasattr(c, "evidence_kind")]
    self.assertCountEqual(kinds, list(ev.EvidenceKind))

  def test_every_evidence_record_has_its_words(self):
    members = [c for c in _records() if issubclass(c, ev.Evidence)]
    self.assertLen(members, 7)
    self.assertEqual(
      {m.evidence_kind for m in members}, set(verification._WORDS)
    )

  def test_the_enums_are_reached_through_evidence(self):
    self.assertIs(ev.Evidence.Kind, ev.EvidenceKind)
    self.assertIs(ev.Evidence.Reason, ev.Reason)
    self.assertIsInstance(ev.NotJudged(None, ev.Reason.NO_CONFIGS), ev.Evidence)

  def test_a_kind_is_not_a_field(self):
    # GoldenNote has a field `kind` of its own; the class attribute must
    # not shadow it or become an argument.
    note = ev.GoldenNote("missing", "x.hlo")
    self.assertEqual(note.kind, "missing")
    self.assertIs(note.evidence_kind, ev.EvidenceKind.GOLDEN_NOTE)
    self.assertNotIn(
      "evidence_kind", [f.name for f in dataclasses.fields(ev.GoldenNote)]
    )
    self.assertIn("missing golden x.hlo", verification.evidence_line(note))


if __name__ == "__main__":
  absltest.main()
