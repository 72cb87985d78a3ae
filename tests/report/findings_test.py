"""Findings grouped by cause, each fix as a code change at the line, and
the one-screen answer (issue 39, items 1-3), without XLA: the findings are
built here as `verify.find_findings` gives them.

The source lines are this file's own (`_MATMUL_LINE`, `_SECOND_LINE`):
the expected text is read by the test from the file, not from hloprobe.
"""

from __future__ import annotations

import inspect

import verify_findings
from absl.testing import absltest

from hloprobe import report, verify
from hloprobe.invariance.answer import Boundary
from hloprobe.report import Answer
from hloprobe.report.explain_answer import (
  BITS_ONLY_LAST,
  answer_line,
  answer_lines,
)
from hloprobe.report.findings import code_change, group_causes
from hloprobe.report.invariance_words import first_lines
from hloprobe.sites import Fate
from hloprobe.verify.candidates import TrialReason
from hloprobe.verify.findings import Said, rank_findings


def _dense(x, w1, w2):
  h = x @ w1  # the first site's line
  return h @ w2  # the second site's line


_SOURCE, _FIRST = inspect.getsourcelines(_dense)
_MATMUL_LINE = _FIRST + 1
_SECOND_LINE = _FIRST + 2
_HERE = f"{__file__}:{_MATMUL_LINE}"
_THERE = f"{__file__}:{_SECOND_LINE}"


def _finding(ns, row=0, ratio=780.0, n=None, precisions=("bfloat16",), **kw):
  fields = dict(
    sites=(0, 1),
    algorithms=("TF32_TF32_F32", "TF32_TF32_F32"),
    locations=(_HERE, _THERE),
    fates=("Triton gemm (triton-gemm-rewriter)",),
  )
  fields.update(kw)
  return verify.Finding(
    "row 0" if row == 0 else "row",
    "my_model",
    "a100",
    "baseline",
    True,
    precisions,
    ns,
    Said(
      text="explained by TF32_TF32_F32 at sites [0, 1]"
      if row == 0
      else f"row {row} of 9 beyond its floor"
    ),
    error_abs=ratio * 1e-5,
    floor_abs=1e-5,
    floor_dtype="float32",
    ratio=ratio,
    source="predicted",
    worst_n=n or ns[0],
    worst_precision=precisions[0],
    row=row,
    **fields,
  )


def _trial(fix: str, passed: bool) -> verify.FixTrial:
  c = verify.Candidate(fix, f"--precisions={fix}", "some cost")
  why = TrialReason(passed, ("accurate",), 4)
  return verify.FixTrial(c, passed, why, f"hloprobe verify --fix={fix}")


class GroupTest(absltest.TestCase):
  def test_one_tf32_story_split_four_ways_is_one_cause(self):
    # The user model: n = 7, 9, 8, 2-6, row 0 at some sizes and
    # another row at others, all the same two TF32 Triton gemm sites.
    found = rank_findings(
      [
        _finding((7,), row=3, ratio=900.0),
        _finding((9,), ratio=850.0),
        _finding((8,), row=5, ratio=700.0, precisions=("tensorfloat32",)),
        _finding((2, 3, 4, 5, 6), ratio=600.0),
      ]
    )
    (cause,) = group_causes(found)
    self.assertEqual(cause.batch_sizes, tuple(range(2, 10)))
    self.assertEqual(cause.precisions, ("bfloat16", "tensorfloat32"))
    self.assertEqual((cause.worst.row, cause.worst.worst_n), (3, 7))
    self.assertEqual(cause.algorithms, ("TF32_TF32_F32",))
    self.assertEqual(cause.sites, (0, 1))
    self.assertEqual(len(cause.findings), 4)

  def test_should_fail_twin_other_sites_or_algorithm_are_other_causes(self):
    found = [
      _finding((2,)),
      _finding((3,), algorithms=("BF16_BF16_F32", "BF16_BF16_F32")),
      _finding((4,), sites=(1,), locations=(_THERE,), algorithms=("X",)),
    ]
    self.assertLen(group_causes(found), 3)

  def test_source_lines_read_from_the_program(self):
    (cause,) = group_causes([_finding((2,))])
    first, second = cause.lines
    base = __file__.rsplit("/", 1)[-1]
    self.assertEqual(first.short, f"{base}:{_MATMUL_LINE}")
    self.assertEqual(first.code, _SOURCE[1].strip())
    self.assertEqual(second.code, _SOURCE[2].strip())

  def test_a_site_without_a_location_says_so(self):
    (cause,) = group_causes([_finding((2,), locations=(None, None))])
    self.assertEqual(cause.lines[0].words(), "site 0 (no source line)")


class CodeChangeTest(absltest.TestCase):
  def test_float32_is_highest_on_the_call(self):
    c = code_change(verify.Candidate("float32", "", ""))
    self.assertEqual(c.on_call, "precision=jax.lax.Precision.HIGHEST")
    self.assertEqual(c.around, 'jax.default_matmul_precision("float32")')
    self.assertTrue(c.code)

  def test_a_preset_is_the_preset(self):
    c = code_change(verify.Candidate("TF32_TF32_F32_X3", "", ""))
    self.assertEqual(
      c.on_call, "precision=jax.lax.DotAlgorithmPreset.TF32_TF32_F32_X3"
    )

  def test_should_fail_twin_a_flag_fix_has_no_code_change(self):
    c = code_change(verify.Candidate("no_triton_gemm", "", ""))
    self.assertFalse(c.code)
    self.assertIsNone(c.on_call)
    self.assertEqual(c.flags, "XLA_FLAGS=--xla_gpu_enable_triton_gemm=false")


class ScreenTest(absltest.TestCase):
  def test_first_three_lines_algorithm_lines_change_and_command(self):
    answer = Answer((_finding((2, 9)),), (_trial("float32", True),))
    lines = answer_lines(answer)
    base = __file__.rsplit("/", 1)[-1]
    self.assertIn("TF32_TF32_F32 at sites 0-1", lines[0])
    self.assertIn(f"{base}:{_MATMUL_LINE} `h = x @ w1", lines[0])
    self.assertIn(f"{base}:{_SECOND_LINE} `return h @ w2", lines[0])
    self.assertIn("worst at n = 2 under bfloat16", lines[0])
    self.assertTrue(
      lines[1].startswith(
        "Do: precision=jax.lax.Precision.HIGHEST on the calls at "
        f"{base}:{_MATMUL_LINE}, {base}:{_SECOND_LINE} "
      ),
      lines[1],
    )
    self.assertIn('`with jax.default_matmul_precision("float32"):`', lines[1])
    self.assertEqual(lines[2], "Verify (PASS): hloprobe verify --fix=float32")

  def test_a_call_example_for_the_sites_made(self):
    # jax.lax.conv_general_dilated takes `precision` as jnp.matmul does: a
    # convolution site's Do line shows that call, not `a @ b`; a cause of
    # both shows both.
    def do_line(*kinds):
      found = _finding((2,), fate_kinds=kinds)
      return answer_lines(Answer((found,), (_trial("float32", True),)))[1]

    dot = "(`a @ b` -> `jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)`)"
    conv = (
      "`lax.conv_general_dilated(x, k, ...)` -> `lax.conv_general_dilated("
      "x, k, ..., precision=jax.lax.Precision.HIGHEST)`"
    )
    self.assertIn(dot, do_line(Fate.TRITON_GEMM))
    self.assertNotIn("conv_general_dilated", do_line(Fate.TRITON_GEMM))
    for kind in (Fate.CUDNN_CONV, Fate.CONV):
      self.assertIn(f"({conv})", do_line(kind))
      self.assertNotIn("a @ b", do_line(kind))
    both = do_line(Fate.TRITON_GEMM, Fate.CUDNN_CONV)
    self.assertIn(f"{dot[:-1]}; {conv})", both)

  def test_nothing_twice_and_the_answer_last(self):
    found = [_finding((2,)), _finding((3,), row=4, ratio=500.0)]
    answer = Answer(tuple(found), (_trial("float32", True),))
    text = report.render_answered([], answer)
    lines = text.split("\n")
    self.assertEqual(lines[-1], answer_line(answer))
    self.assertEqual(lines.count(lines[0]), 2)  # first and last only
    body = [line for line in lines[1:-1] if line]
    self.assertEqual(len(body), len(set(body)))
    self.assertNotIn("Findings by cause", text)  # one cause: the answer

  def test_bitwise_answer_folded_after_do_full_under_verbose(self):
    groups = tuple(
      verify_findings.split_group("my_model", p)
      for p in ("bfloat16", "float32")
    )
    answer = Answer(
      (_finding((2,)),),
      (_trial("float32", True), _trial("BF16_BF16_F32_X6", False)),
      invariance=groups,
    )
    lines = report.render_answered([], answer).split("\n")
    self.assertEqual(lines[:3], answer_lines(answer)[:3])
    at = lines.index(
      "Batch invariance, by cause (each precision and kernel: --verbose):"
    )
    # After the Do block (the fixes tried), one line for both precisions.
    self.assertEqual(lines[at - 1], answer_lines(answer)[at - 1])
    self.assertTrue(
      lines[at + 1].startswith(
        "  my_model on a100 under bfloat16 and float32: not batch-invariant"
      ),
      lines[at + 1],
    )
    self.assertEqual(lines[at + 2], "")
    verbose = report.render_answered([], answer, verbose=True)
    self.assertNotIn("Batch invariance, by cause", verbose)
    self.assertIn("is not batch-invariant on a100 under float32", verbose)
    self.assertIn("is not batch-invariant on a100 under bfloat16", verbose)

  def test_bitwise_answer_opens_without_a_finding_and_alone_bits_only(self):
    groups = (verify_findings.split_group("my_model", "float32"),)
    answer = Answer((), invariance=groups)
    first = first_lines(groups)
    lines = report.render_answered([], answer).split("\n")
    # Nothing at fault: the bitwise answer (kernels per n too) opens it,
    # then the accuracy answer scoped to it (issue 38: not a second
    # "Answer:"); the answer's line, the bits first, ends it.
    self.assertEqual(lines[: len(first)], first)
    self.assertTrue(lines[len(first)].startswith("Accuracy: no finding"))
    self.assertEqual(lines[-1], answer_line(answer))
    self.assertEqual(lines.count(answer_line(answer)), 1)
    # explain --only=invariance: that answer, then what it left out.
    alone = report.render_answered([], answer, bits_only=True).split("\n")
    self.assertEqual(alone[: len(first)], first)
    self.assertEqual(alone[len(first) :], ["", BITS_ONLY_LAST])
    self.assertNotIn(answer_line(answer), alone)
    nothing = report.render_answered([], Answer(()), bits_only=True)
    self.assertTrue(nothing.startswith("No batch-invariance answer"))

  def test_make_runs_grid_fits_40_lines_even_unfolded(self):
    # make run's sweep: 3 targets x 3 precisions, each group a cause of
    # its own (nothing folds), four other fixes tried: still one screen.
    groups = tuple(
      verify_findings.group(
        ((1,), (2,)),
        (Boundary(2, 1, verify_findings.site_changes(2, 1, range(i + 1))),),
        case="seed_mlp",
        target=t,
        precision=p,
      )
      for t in ("cpu", "a100", "t4")
      for i, p in enumerate(("bfloat16", "tensorfloat32", "float32"))
    )
    trials = tuple(
      _trial(f, f == "float32")
      for f in (
        "float32",
        "BF16_BF16_F32_X6",
        "TF32_TF32_F32_X3",
        "BF16_BF16_F32_X3",
        "no_triton_gemm",
      )
    )
    answer = Answer((_finding((2, 9)),), trials, invariance=groups)
    lines = report.render_answered([], answer).split("\n")
    self.assertLen([l for l in lines if l.startswith("  seed_mlp on ")], 9)
    self.assertLessEqual(len(lines) + 3, 40)  # + 3 per-target lines

  def test_two_causes_are_listed_once_each(self):
    other = _finding((4,), sites=(1,), locations=(_THERE,), algorithms=("X",))
    answer = Answer((_finding((2,)), other))
    lines = answer_lines(answer)
    self.assertIn("(and 1 more cause below)", lines[0])
    self.assertIn("Findings by cause, worst first:", lines)


if __name__ == "__main__":
  absltest.main()
