"""`hloprobe explain` answers first (issues 26, 39): on the seed (a100 and
cpu, bfloat16), the first line names the a100's TF32 sites with their
source line and how many times the f32 noise floor row 0's error is, the
next the first fix that passes as a change to the code, the third its
`verify` command, which exits 0 when run; one line per target follows,
the worst first, and the answer again last. The size is checked against
numpy: row 0 of the issue's MLP in float64 with TF32 operands at sites
0-2, against an f32 computation of it, neither from hloprobe. report.html
(explain --output_dir) opens with the finding table and the same answer,
read in headless Chromium."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import tempfile

import chromium
import numpy as np
import pytest
import testutil
from absl.testing import absltest
from testutil import run_hloprobe_here

# Reads the answer out of report.html as the browser laid it out: its
# first element's id, its headline, Do and verify command, the heading
# before it, and where it and the plot's heading start (px).
_ANSWER_PROBE = """
(function () {
  var answer = document.getElementById("answer");
  var heads = Array.prototype.slice.call(document.querySelectorAll("h2"));
  var plot = heads.filter(function (h) { return /Row 0/.test(h.textContent); });
  function text(sel) {
    var e = answer.querySelector(sel);
    return e ? e.textContent : null;
  }
  var pre = document.createElement("pre");
  pre.id = "hloprobe-probe";
  pre.textContent = JSON.stringify({
    first: answer.firstElementChild.id,
    headline: text("p.headline"),
    command: text("code.command"),
    after: answer.previousElementSibling.textContent,
    answer_top: answer.getBoundingClientRect().top,
    plot_top: plot[0].getBoundingClientRect().top});
  document.body.appendChild(pre);
})();
"""

# Batch sizes 1 and 2: n = 1 is multiply+reduce (F32), n = 2 the Triton
# gemms that run TF32 (see README, "The diagnosis in one command").
_ARGS = (
  "--targets=cpu,a100",
  "--batch_sizes=1,2",
  "--precisions=bfloat16",
  "--invariance=off",  # the bitwise answer: tests/invariance/
)


def _numpy_f32_row0() -> float:
  """Row 0 of the seed MLP computed in float32 by numpy (one f32
  summation order; the noise floor hloprobe measures is the largest over
  several)."""
  xy, params = testutil.seed_mlp_inputs()
  weights, biases, gammas, mus = params
  x = np.asarray(xy[0], np.float32)
  for i, w in enumerate(weights):
    x = (w @ x + biases[i]).astype(np.float32)
    if i < len(gammas):
      g = -(gammas[i] ** 2) * np.square(x - mus[i])
      x = (np.exp(g) * np.sin(np.float32(16) * x)).astype(np.float32)
  return float(x.mean(dtype=np.float32))


def _from_answer(lines: list[str]) -> list[str]:
  """explain's lines from its "Answer:" on (these tests run it with
  --invariance=off: the bitwise answer has tests/invariance/)."""
  first = next(i for i, l in enumerate(lines) if l.startswith("Answer:"))
  return lines[first:]


_WORKERS = contextlib.ExitStack()


def setUpModule():
  # The module's in-process commands share warm workers.
  _WORKERS.enter_context(testutil.shared_workers())


def tearDownModule():  # pytest calls it (not unittest's module cleanups)
  _WORKERS.close()


@pytest.mark.compiles
class SeedAnswerTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    # In this process, through its record cache: the JSON run after the
    # text run, and the verify command after both, find every config
    # there (the tries sweep as verify does).
    # The JSON run also writes report.html (--output_dir): its answer is
    # checked in headless Chromium against the text run's lines.
    cls.text = run_hloprobe_here("explain", *_ARGS, timeout_s=900)
    # Issue 38: the bitwise question's answer opens the output; the
    # accuracy answer ("Answer: ...") follows it.
    cls.all_lines = cls.text.stdout.splitlines()
    cls.lines = _from_answer(cls.all_lines)
    cls.out = tempfile.mkdtemp(prefix="answer_explain_")
    # The JSON run tries every fix (--all_fixes), the text run stops at
    # the first that passes (the default).
    cls.doc = json.loads(
      run_hloprobe_here(
        "explain",
        *_ARGS,
        "--format=json",
        "--all_fixes",
        f"--output_dir={cls.out}",
        timeout_s=900,
      ).stdout
    )["answer"]

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.out, ignore_errors=True)
    super().tearDownClass()

  def test_headline_names_the_a100_tf32_sites(self):
    # The seed's three dots are one line of its loop (builtin_cases.py).
    self.assertEqual(self.text.returncode, 0, self.text.stderr)
    self.assertRegex(
      self.lines[0],
      r"^Answer: seed_mlp on a100 \(compile only\): TF32_TF32_F32 at sites "
      r"0-2 \(builtin_cases\.py:\d+ `x = W @ x \+ b`\), made Triton gemm "
      r"\(triton-gemm-rewriter\): row 0 \|err\| vs f64 6\.10e-01 "
      r"\(predicted\), \d+x the f32 noise floor 1\.\de-04, worst at n = 2 "
      r"under bfloat16; at n = 2 under bfloat16$",
    )
    self.assertEqual(self.lines[-1], self.lines[0])

  def test_ratio_against_numpy(self):
    # Independent: numpy float64 with TF32 operands at sites 0-2 against
    # numpy float64, over numpy's own f32 error of row 0.
    ref = testutil.numpy_seed_row0()
    error = abs(testutil.numpy_seed_row0((0, 1, 2)) - ref)
    floor = abs(_numpy_f32_row0() - ref)
    (first, *_) = self.doc["findings"]
    self.assertAlmostEqual(first["error_abs"], error, delta=1e-3 * error)
    printed = float(re.search(r"(\d+)x the f32", self.lines[0]).group(1))
    self.assertAlmostEqual(printed, first["ratio"], delta=1)
    # The floors are one f32 order (numpy's) and the largest of several
    # (hloprobe's): the same size, not the same number.
    self.assertLess(abs(np.log2(printed / (error / floor))), 1.0)

  def test_first_fix_passes_and_its_command_exits_0(self):
    self.assertRegex(
      self.lines[1],
      r"^Do: precision=jax\.lax\.Precision\.HIGHEST on the calls at "
      r"builtin_cases\.py:\d+ .* or `with "
      r'jax\.default_matmul_precision\("float32"\):` around them',
    )
    command = self.lines[2].removeprefix("Verify (PASS): ")
    self.assertEqual(
      command,
      "hloprobe verify --case=seed_mlp --targets=a100 --batch_sizes=1,2 "
      "--precisions=bfloat16 --fix=float32 --require=consistent,accurate",
    )
    words = shlex.split(command)[1:]
    proc = run_hloprobe_here(*words, timeout_s=900)
    self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
    self.assertIn("PASS", proc.stdout)

  def test_should_fail_twin_a_fix_that_leaves_tf32_fails(self):
    # cuBLASLt calls may use TF32 under DEFAULT: the flag alone fails
    # (--all_fixes: every fix tried, the passing ones first).
    fixes = {f["fix"]: f for f in self.doc["fixes"]}
    self.assertTrue(all(f["tried"] for f in fixes.values()), fixes)
    self.assertFalse(fixes["no_triton_gemm"]["passed"])
    self.assertTrue(fixes["float32"]["passed"])
    self.assertIsNone(self.doc["not_tried"])

  def test_default_stops_at_the_first_fix_that_passes(self):
    # float32 is the first candidate and passes: the others are listed
    # with their --fix, not tried (issue 37: the tries were most of a
    # real-size explain's cost).
    at = self.lines.index(
      "Not tried (a fix before them passed; --all_fixes tries every one):"
    )
    self.assertNotIn("Other fixes tried", "\n".join(self.lines))
    self.assertIn(
      "  XLA_FLAGS=--xla_gpu_enable_triton_gemm=false (cuBLAS/cuBLASLt "
      "calls instead of Triton gemms: 1 pass per gemm, the library's kernel "
      "and its TF32 rule): --fix=no_triton_gemm",
      self.lines[at:],
    )

  def test_folded_targets_worst_first(self):
    # One line per target, its detail folded (--verbose), a100 first.
    out = self.text.stdout
    self.assertLess(
      out.index("\n  seed_mlp on a100 (compile only): 1 cause: "),
      out.index("\n  seed_mlp on cpu (compiled and run): no finding"),
    )
    self.assertNotIn("Fates by batch size", out)

  def test_report_html_opens_with_the_same_answer(self):
    # What Chromium shows: the first thing after the title and what was
    # swept is the answer, its finding table first, then the headline as
    # `explain` printed it and the passing fix's command whole.
    with open(os.path.join(self.out, "report.html"), encoding="utf-8") as f:
      probe = chromium.dump_dom(f.read(), _ANSWER_PROBE)
    self.assertEqual(probe["first"], "findings")
    self.assertEqual(probe["headline"], self.lines[0])
    self.assertEqual("Verify (PASS): " + probe["command"], self.lines[2])
    self.assertEqual(probe["after"], "The answer")
    self.assertGreater(probe["answer_top"], 0)
    self.assertLess(probe["answer_top"], probe["plot_top"])

  def test_notry_fixes_lists_them_untried(self):
    proc = run_hloprobe_here("explain", *_ARGS, "--notry_fixes", timeout_s=600)
    lines = _from_answer(proc.stdout.splitlines())
    self.assertEqual(lines[1], "Do: fixes not tried (--notry_fixes)")
    self.assertIn(
      "  precision=jax.lax.Precision.HIGHEST or jax.default_matmul_precision("
      '"float32") (F32_F32_F32: 1 pass per gemm on CUDA cores, no tensor '
      "cores): hloprobe verify --case=seed_mlp",
      proc.stdout,
    )


class BitsThenAccuracyTest(absltest.TestCase):
  """No accuracy finding after a bitwise one (issue 38, the check of
  dense_ln_softmax): the accuracy answer is scoped, not a second
  "Answer: no finding" that reads as the bits' contradiction, and the
  last line gives both, the bits first. Hand-made records, no compile."""

  def test_scoped_after_a_bitwise_finding(self):
    import verify_findings

    from hloprobe.report import Answer, render_answered

    group = verify_findings.split_group("m", "float32")
    lines = render_answered([], Answer((), invariance=(group,))).splitlines()
    bits = next(i for i, l in enumerate(lines) if "not batch-invariant" in l)
    accuracy = lines.index(
      "Accuracy: no finding: every config within its band; the bitwise "
      "answer above stands."
    )
    self.assertLess(bits, accuracy)
    self.assertIn("Per target, accuracy (the detail: --verbose):", lines)
    self.assertEqual(
      [l for l in lines if l.startswith("Answer:")],
      [
        "Answer: bits not batch-invariant on a100 under float32; accuracy: "
        "no finding: every config within its band."
      ],
    )
    self.assertEqual(lines[-1][:7], "Answer:")

  def test_unchanged_where_the_bits_are_invariant(self):
    import dataclasses

    import verify_findings

    from hloprobe.report import Answer, render_answered

    group = dataclasses.replace(
      verify_findings.split_group("m", "float32"), invariant=True
    )
    lines = render_answered([], Answer((), invariance=(group,))).splitlines()
    no = "Answer: no finding: every config within its band."
    self.assertEqual(lines.count(no), 2)
    self.assertEqual(lines[-1], no)
    self.assertIn("Per target (the detail: --verbose):", lines)


@pytest.mark.compiles
class NoFindingTest(absltest.TestCase):
  def test_cpu_has_no_finding(self):
    # SeedAnswerTest's cpu configs (the CPU computes bfloat16's dots in
    # f32: within its band), record-cache hits after it (file order).
    proc = run_hloprobe_here(
      "explain",
      "--targets=cpu",
      "--batch_sizes=1,2",
      "--precisions=bfloat16",
      "--invariance=off",
      timeout_s=600,
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertTrue(
      proc.stdout.startswith(
        "Answer: no finding: every config within its band.\n\n"
        "Per target (the detail: --verbose):\n"
        "  seed_mlp on cpu (compiled and run): no finding"
      ),
      proc.stdout[:300],
    )


if __name__ == "__main__":
  absltest.main()
