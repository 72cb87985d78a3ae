"""Failures, rejected compiles and merged sites in words
(`report/site_words.py`): the one place these sentences are made.

The records are made by hand; the expected words are written out here from
their fields."""

from __future__ import annotations

import dataclasses

import recorded
from absl.testing import absltest

from hloprobe import records
from hloprobe.numerics import Verdict, VerdictKind
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
from hloprobe.report import site_words as sw
from hloprobe.report.verdict_words import verdict_words
from hloprobe.sites import CompileFinding, Fate, PassAttribution
from hloprobe.sites.fp8_rewrite import Fp8Gate, Fp8Rewrite
from hloprobe.sites.site_fate import Collective, PrecisionConflict

_RULE = "dot strength reduction (algebraic_simplifier.cc)"


class FailureWordsTest(absltest.TestCase):
  def test_findings_name_their_sites_algorithm_and_rule(self):
    many = CompileFinding((0, 1, 2), "F16_F16_F32", _RULE, "algorithm")
    self.assertEqual(
      sw.finding_words(many),
      "sites [0, 1, 2] (F16_F16_F32) rejected by dot strength reduction "
      "(algebraic_simplifier.cc)",
    )
    one = CompileFinding((3,), None, "the loop emitter", "message")
    self.assertEqual(
      sw.finding_words(one), "site 3 rejected by the loop emitter"
    )
    none = CompileFinding((), None, "unknown", "none")
    self.assertEqual(
      sw.finding_words(none), "no dot site named rejected by unknown"
    )

  def test_a_failure_is_its_error_after_the_finding(self):
    plain = records.Failure("run", "XlaRuntimeError: INTERNAL: no")
    self.assertEqual(sw.failure_words(plain), "XlaRuntimeError: INTERNAL: no")
    found = CompileFinding((3,), "TF32_TF32_F32", "the loop emitter", "message")
    rejected = records.Failure("compile", "JaxRuntimeError: boom", found)
    self.assertEqual(
      sw.failure_words(rejected),
      "site 3 (TF32_TF32_F32) rejected by the loop emitter: "
      "JaxRuntimeError: boom",
    )


_FAST = "ANY_F8_ANY_F8_F32_FAST_ACCUM"
_TF32_AT = (("TF32_TF32_F32", (1, 2)),)


class SiteRecordWordsTest(absltest.TestCase):
  def test_a_collective_names_its_reduction_unless_an_add(self):
    self.assertEqual(
      sw.collective_words(Collective("all-reduce", "add", 8, "all-reduce.3")),
      "all-reduce over 8 devices (all-reduce.3)",
    )
    self.assertEqual(
      sw.collective_words(
        Collective("reduce-scatter", "maximum", 4, "reduce-scatter.1")
      ),
      "reduce-scatter (maximum) over 4 devices (reduce-scatter.1)",
    )
    self.assertIsNone(sw.collective_words(None))
    self.assertIsNone(sw.conflict_words(None))

  def test_each_fp8_gate_has_words(self):
    g = Fp8Gate
    cases = [
      (
        Fp8Rewrite(False, gates=(g.OLD_GPU,), compute_capability="8.0"),
        "did not fire: compute capability 8.0 < 8.9 (FP8 cuBLASLt gemms "
        "need Ada, Hopper or later)",
      ),
      (
        Fp8Rewrite(
          False,
          gates=(g.OPERAND_TYPES, g.OUTPUT_TYPE),
          operand_types=("f8e4m3fn", "s8"),
          output="s32",
        ),
        "did not fire: operand types f8e4m3fn x s8 (cuBLASLt FP8 takes "
        "f8e4m3fn or f8e5m2); output s32 (must be bf16, f16, f32, f8e4m3fn, "
        "f8e5m2)",
      ),
      (
        Fp8Rewrite(False, gates=(g.BOTH_E5M2, g.DIMENSIONS)),
        "did not fire: both operands f8e5m2 (one must be f8e4m3fn); an "
        "operand without exactly one contracting and one non-contracting "
        "dimension",
      ),
      (
        Fp8Rewrite(False, gates=(g.STRENGTH_REDUCED,), fate=Fate.MULTIPLY),
        "did not fire: dot strength reduction made it a multiply before any "
        "gemm rewriter ran (no dot left to rewrite)",
      ),
      (
        Fp8Rewrite(False, gates=(g.TRITON_GEMM,)),
        "did not fire: the Triton gemm took the dot first "
        "(triton-gemm-rewriter runs before GemmRewriter; "
        "--xla_gpu_enable_triton_gemm=false leaves it to GemmRewriter)",
      ),
      (
        Fp8Rewrite(False, gates=(g.NOT_FP8_GEMM,)),
        "did not fire: GemmRewriter made a non-FP8 gemm; its operands are "
        "not MatchFp8Param's dequantization (an f8 value converted, "
        "optionally times or over a broadcast scalar, then only layout "
        "ops) or cuBLASLt does not support the gemm "
        "(GemmIsSupportedByCublasLt): the optimized HLO does not tell which",
      ),
      (
        Fp8Rewrite(None, gates=(g.NO_COMPUTE_CAPABILITY,)),
        "unknown: the target's compute capability is unknown",
      ),
      (
        Fp8Rewrite(None, gates=(g.OTHER_FATE,), fate=Fate.DOT),
        "unknown: the site is dot",
      ),
      (Fp8Rewrite(True), "fired (`__cublas$lt$matmul$f8`)"),
      (
        Fp8Rewrite(True, call=True, operands=(("A", "f8e5m2", (16, 32)),)),
        "fired (`__cublas$lt$matmul$f8`, scales none; A f8e5m2[16,32])",
      ),
    ]
    self.assertEqual({x for r, _ in cases for x in r.gates}, set(Fp8Gate))
    for record, words in cases:
      self.assertEqual(sw.fp8_rewrite_words(record), words)
    self.assertIsNone(sw.fp8_rewrite_words(None))

  def test_the_fate_a_pass_left(self):
    cases = [
      (PassAttribution(0, "p", "q", Fate.TRITON_GEMM), "Triton gemm"),
      (
        PassAttribution(0, "p", "q", Fate.DOT, "__ynn_fusion"),
        "dot in __ynn_fusion",
      ),
      (PassAttribution(0, "p", "q", Fate.DOT, split_k=4), "dot split-K 4"),
      (
        PassAttribution(0, "p", "q", Fate.DOT, merged=True, split_k=2),
        "dot (merged) split-K 2",
      ),
    ]
    for attribution, words in cases:
      self.assertEqual(sw.pass_fate_words(attribution), words)

  def test_site_json_words_its_records_in_their_place(self):
    rec = recorded.load("two_dots_cpu_n2_default", "0.12.0.1")
    f = recorded.fates(rec)[0]
    f = dataclasses.replace(
      f,
      conflict=PrecisionConflict("highest,highest", ("DEFAULT", "DEFAULT")),
      collective=Collective("all-reduce", "add", 2, "all-reduce.1"),
    )
    by = PassAttribution(0, "algsimp", "simplification", Fate.MULTIPLY_REDUCE)
    doc = sw.site_json(f, by)
    self.assertEqual(list(doc), list(f.record(by)))  # the schema's order
    self.assertEqual(
      doc["rewritten_by"],
      {
        "pass": "algsimp",
        "pipeline": "simplification",
        "fate_after": "multiply+reduce",
      },
    )
    self.assertEqual(
      doc["conflict"],
      "optimized precision config highest,highest contradicts StableHLO "
      "DEFAULT,DEFAULT",
    )
    self.assertEqual(
      doc["collective"], "all-reduce over 2 devices (all-reduce.1)"
    )


class SiteNoteWordsTest(absltest.TestCase):
  def test_sites_below_their_request_by_how_the_verdict_shows_them(self):
    two = (*_TF32_AT, ("BF16_BF16_F32", (0,)))
    self.assertEqual(
      sw.site_note_words(BelowRequest(two, Shown.BELOW)),
      "TF32_TF32_F32 at sites [1, 2] and BF16_BF16_F32 at sites [0] below "
      "the requested precision",
    )
    self.assertEqual(
      sw.site_note_words(BelowRequest(_TF32_AT, Shown.PREDICTED)),
      "TF32_TF32_F32 at sites [1, 2] predicted, not seen in this run",
    )
    self.assertEqual(
      sw.site_note_words(BelowRequest(_TF32_AT, Shown.HIDDEN, "bf16")),
      "TF32_TF32_F32 at sites [1, 2], hidden by bf16 output rounding",
    )
    self.assertEqual(
      sw.site_note_words(BelowRequest(_TF32_AT, Shown.HIDDEN)),
      "TF32_TF32_F32 at sites [1, 2], hidden by the f32 noise",
    )

  def test_tf32_allowed_not_required(self):
    libs = ((Fate.CUBLAS, (0,)), (Fate.CUDNN_CONV, (2, 3)))
    self.assertEqual(
      sw.site_note_words(Tf32Optional(True, libs)),
      f"cuBLAS kept site 0 in f32 (TF32 allowed, not required) and "
      f"{Fate.CUDNN_CONV.value} kept sites [2, 3] in f32 (TF32 allowed, "
      "not required)",
    )
    self.assertEqual(
      sw.site_note_words(Tf32Optional(False, ((Fate.CUBLASLT, (1, 4)),))),
      "ambiguous: row 0 assumes TF32_TF32_F32 at cuBLASLt sites [1, 4], "
      "where TF32 is allowed, not required, and cuBLAS may keep some in f32",
    )
    self.assertEqual(
      sw.site_note_words(Tf32Optional(False, libs)),
      f"ambiguous: row 0 assumes TF32_TF32_F32 at cuBLAS site 0 and "
      f"{Fate.CUDNN_CONV.value} sites [2, 3], where TF32 is allowed, not "
      "required, and cuBLAS or cuDNN may keep some in f32",
    )

  def test_one_site_notes_by_kind(self):
    k = SiteNoteKind
    cases = (
      (
        SiteNote(k.TF32_TRUNCATED, (0, 2), "TF32_TRUNCATED_F32"),
        "sites [0, 2]: TF32_TF32_F32 kernels with no cvt.rna.tf32.f32 "
        "(TF32 operands truncated), emulated as TF32_TRUNCATED_F32",
      ),
      (SiteNote(k.AMBIGUOUS, (3,)), "site 3 ambiguous, emulated as F32"),
      (
        SiteNote(k.FP8_FAST_ACCUM, (0,), "ANY_F8_ANY_F8_F32_FAST_ACCUM"),
        "site 0 ANY_F8_ANY_F8_F32_FAST_ACCUM: not modelled: cuBLASLt FP8 "
        "fast accumulation (predicted as F32_F32_F32)",
      ),
      (SiteNote(k.EMULATED_F32, (1,)), "site 1 unknown, emulated as F32"),
      (
        SiteNote(k.EMULATED_F32, (1,), "BF16_BF16_F32_X9"),
        "site 1 BF16_BF16_F32_X9, emulated as F32",
      ),
      (
        SiteNote(
          k.STRENGTH_REDUCED,
          (2,),
          "F32_F32_F32",
          "BF16_BF16_F32",
          Fate.MULTIPLY_REDUCE,
        ),
        "site 2 ran F32_F32_F32 for declared BF16_BF16_F32: dot strength "
        "reduction made it a multiply+reduce, whose kernel computes "
        "F32_F32_F32, so this row says nothing about a gemm that honours "
        "the preset",
      ),
      (
        SiteNote(k.PRESET_IGNORED, (0,), "F32_F32_F32", "TF32_TF32_F32"),
        "site 0 ran F32_F32_F32 for declared TF32_TF32_F32: the target "
        "ignores the preset, so this check says nothing about a GPU",
      ),
      (
        SiteNote(
          k.CONFLICT,
          (4,),
          detail=PrecisionConflict("high,high", ("DEFAULT", "DEFAULT")),
        ),
        "site 4: optimized precision config high,high contradicts StableHLO "
        "DEFAULT,DEFAULT",
      ),
      (
        SiteNote(
          k.FP8_REWRITE,
          (0,),
          detail=Fp8Rewrite(False, gates=(Fp8Gate.DIMENSIONS,)),
        ),
        "site 0: fp8 cuBLASLt rewrite did not fire: an operand without "
        "exactly one contracting and one non-contracting dimension",
      ),
    )
    for note, words in cases:
      self.assertEqual(sw.site_note_words(note), words, note.kind)

  def test_sum_overflow_and_the_verdict_with_its_notes(self):
    over = SumOverflow(
      "s8", ((1, "s8", "s8", Fate.DOT), (3, "s8", "s8", Fate.DOT))
    )
    self.assertEqual(
      sw.site_note_words(over),
      "the exact sum overflows s8 at site 1 (s8 x s8 -> s8 dot), site 3 "
      "(s8 x s8 -> s8 dot)",
    )
    v = Verdict(VerdictKind.WITHIN_NOISE).noted(
      BelowRequest(_TF32_AT, Shown.HIDDEN),
      SiteNote(SiteNoteKind.AMBIGUOUS, (0,)),
    )
    self.assertEqual(
      verdict_words(v),
      "within f32 noise; TF32_TF32_F32 at sites [1, 2], hidden by the f32 "
      "noise; site 0 ambiguous, emulated as F32",
    )

  def test_the_predictions_own_notes(self):
    taken = TakenAsF32(((1, None), (2, _FAST)), _FAST)
    self.assertEqual(
      sw.site_note_words(taken),
      f"taken as F32_F32_F32: site 1: unknown, site 2: {_FAST} (not "
      "modelled: cuBLASLt FP8 fast accumulation)",
    )
    bias = AttentionBias(
      ((0, "float32", "bfloat16"), (3, "float16", "bfloat16"))
    )
    self.assertEqual(
      sw.site_note_words(bias),
      "cuDNN attention bias of another dtype than q/k/v at site 0: bias "
      "float32, q/k/v bfloat16; site 3: bias float16, q/k/v bfloat16 (read "
      "in its own type, added to the f32 scores)",
    )
    p = type("P", (), {"notes": (taken, bias)})
    self.assertEqual(
      sw.prediction_note(p),
      f"{sw.site_note_words(taken)}; {sw.site_note_words(bias)}",
    )
    p.notes = ()
    self.assertIsNone(sw.prediction_note(p))

  def test_shares_alone_name_what_was_not_computed_and_why(self):
    # gpt2_12: 72 TF32 sites of 72, 340 MB of inputs; gpt2_1: 6 of 6,
    # 31 MB.
    both = SharesAlone(72, 72, 16, 356_515_840, 16 << 20)
    self.assertEqual(
      sw.site_note_words(both),
      "site shares from each of the 72 non-F32 sites alone at row 0; each "
      "site's error without it (the others as chosen) not computed: a large "
      "program (72 dot sites (over 16) and inputs of 340.0 MiB (from 16 "
      "MiB))",
    )
    small = SharesAlone(6, 6, 16, 31_457_280, 16 << 20)
    self.assertTrue(
      sw.site_note_words(small).endswith(
        "a large program (inputs of 30.0 MiB (from 16 MiB))"
      )
    )
    v = Verdict(VerdictKind.EXPLAINED).noted(small)
    self.assertIn(sw.site_note_words(small), verdict_words(v))
    # gpt2_12's 72 TF32 sites in 9 groups of 8: the largest group's 8.
    grouped = SharesAlone(8, 72, 16, 356_515_840, 16 << 20, 9, 72, 16)
    self.assertEqual(
      sw.site_note_words(grouped),
      "site shares from the 8 sites of the group of largest error (9 groups "
      "of consecutive non-F32 sites, each emulated together at row 0: 72 "
      "sites, over 16), each alone at row 0; the other groups' sites' shares "
      "and each site's error without it (the others as chosen) not computed: "
      "a large program (72 dot sites (over 16) and inputs of 340.0 MiB (from "
      "16 MiB))",
    )

  def test_the_best_candidate_assignment(self):
    p = type("P", (), {"best_candidate": None})
    self.assertIsNone(sw.best_candidate_words(p))
    p.best_candidate = ()
    self.assertEqual(sw.best_candidate_words(p), "F32_F32_F32")
    p.best_candidate = (*_TF32_AT, ("BF16_BF16_F32", (0,)))
    self.assertEqual(
      sw.best_candidate_words(p),
      "TF32_TF32_F32 at sites [1, 2] and BF16_BF16_F32 at sites [0]",
    )


if __name__ == "__main__":
  absltest.main()
