"""The notes on a verdict and a prediction as records
(`numerics/note_records.py`): plain fields that the record cache's file
format (no pickles) stores and reads back whole, and what
`candidates.chosen_algorithms` notes. Their words: tests/report/
site_words_test.py."""

from __future__ import annotations

import dataclasses
import io

import recorded
from absl.testing import absltest

from hloprobe.numerics import Verdict, VerdictKind
from hloprobe.numerics.candidates import chosen_algorithms
from hloprobe.numerics.note_records import (
  AttentionBias,
  BelowRequest,
  SharesAlone,
  Shown,
  SiteNote,
  SiteNoteKind,
  SumOverflow,
  TakenAsF32,
  Tf32Optional,
)
from hloprobe.runtime import dump_record, load_record
from hloprobe.sites import Fate

_FAST = "ANY_F8_ANY_F8_F32_FAST_ACCUM"


class NoteRecordsTest(absltest.TestCase):
  def test_notes_survive_the_record_file(self):
    v = Verdict(VerdictKind.UNEXPLAINED).noted(
      BelowRequest((("TF32_TF32_F32", (1, 2)),), Shown.BELOW),
      Tf32Optional(False, ((Fate.CUBLAS, (0,)),)),
      SiteNote(
        SiteNoteKind.STRENGTH_REDUCED,
        (2,),
        "F32_F32_F32",
        "BF16_BF16_F32",
        Fate.MULTIPLY,
      ),
      SumOverflow("s8", ((1, "s8", "s8", Fate.DOT),)),
      AttentionBias(((0, "float32", "bfloat16"),)),
      TakenAsF32(((3, None),), _FAST),
      SharesAlone(72, 72, 16, 356_515_840, 16 << 20),
      SharesAlone(8, 72, 16, 356_515_840, 16 << 20, 9, 72, 16),
    )
    f = io.BytesIO()
    dump_record(v, f)
    self.assertEqual(load_record(f.getvalue()), v)

  def test_unmodelled_algorithms_are_taken_as_f32_by_site(self):
    # seed_mlp on the a100 at n = 2 (recorded): three Triton gemms
    # (TF32_TF32_F32) and a multiply+reduce (F32_F32_F32), all modelled.
    fates = recorded.fates(recorded.load("seed_a100_n2_float32"))
    self.assertIsNone(chosen_algorithms(fates)[1])
    unknown = dataclasses.replace(fates[0], effective_algorithm=None)
    fast = dataclasses.replace(fates[2], effective_algorithm=_FAST)
    chosen, note = chosen_algorithms((unknown, fates[1], fast, fates[3]))
    self.assertEqual(chosen[0], "F32_F32_F32")
    self.assertEqual(chosen[2], "F32_F32_F32")
    self.assertEqual(note, TakenAsF32(((0, None), (2, _FAST)), _FAST))


if __name__ == "__main__":
  absltest.main()
