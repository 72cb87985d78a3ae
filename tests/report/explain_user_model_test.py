"""A user's own model explained on cpu, a100 and t4 (issue 39, "What must
be shown"): tests/testdata/user_model/my_model.py, dense -> layernorm ->
gelu -> dense with the parameters shared (`in_axes=(None, 0)`).

The first three lines of `explain` name the algorithm (TF32_TF32_F32 on
the a100's Triton gemms), the two dots with their `my_model.py:LINE` and
code, and the change to make in JAX, whose `verify` command (the third
line) exits 0 with PASS when run. report.html opens with the finding
table, and at 1400 px the configs table's verdict column is on screen
(headless Chromium, `chromium.dump_dom`); the notebook view
(`Results._repr_html_`) shows the finding table first and folds the
words.

With the bitwise answer on (as by default) the screen is at most 40
lines: that answer comes one line per cause, after the `Do:` block.

Expected lines come from the model's file, read here (the lines holding
`x @ w1` and `h @ w2`), not from hloprobe; the CPU's bitwise answer from
the model jitted here (row 0's float32 bits at n = 1 and 2), the a100's
from the Triton gemm fusions in the optimized HLO explain wrote.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import tempfile

import chromium
import pytest
import testutil
from absl.testing import absltest
from testutil import run_hloprobe_here

import hloprobe

pytestmark = pytest.mark.compiles

_MODEL = os.path.join(
  os.path.dirname(os.path.dirname(__file__)),
  "testdata",
  "user_model",
  "my_model.py",
)
_CASE = f"{_MODEL}:make_case"
_SIZES = "1,2"  # n = 1 multiply+reduce, n = 2 the a100's Triton gemms
_GEMM_FUSION_RE = re.compile(r"%gemm_fusion\S* = \S+ fusion\(.*__triton")

# The configs table's verdict header, where the browser laid it out at
# 1400 px, against the window and the table's scrolling box; and what the
# answer shows first.
_PROBE = """
(function () {
  var t = document.getElementById("configs");
  var heads = Array.prototype.map.call(t.tHead.rows[0].cells,
    function (c) { return c.textContent; });
  var v = t.tHead.rows[0].cells[heads.indexOf("verdict")].getBoundingClientRect();
  var box = t.parentNode.getBoundingClientRect();
  var answer = document.getElementById("answer");
  var f = document.getElementById("findings");
  var pre = document.createElement("pre");
  pre.id = "hloprobe-probe";
  pre.textContent = JSON.stringify({
    window: window.innerWidth, verdict_right: v.right, box_right: box.right,
    first: answer.firstElementChild.id,
    findings: Array.prototype.map.call(f.tBodies[0].rows,
      function (r) { return r.textContent; }),
    grouped: Array.prototype.map.call(t.tBodies[0].rows,
      function (r) { return r.cells[0].textContent; })});
  document.body.appendChild(pre);
})();
"""


def _line_of(text: str) -> int:
  """The 1-based line of my_model.py holding `text` (read here)."""
  with open(_MODEL, encoding="utf-8") as f:
    for i, line in enumerate(f, 1):
      if text in line:
        return i
  raise AssertionError(f"{text!r} not in {_MODEL}")


def _row0_bits(sizes) -> dict[int, bytes]:
  """Row 0 of the model's output, jitted here on the CPU, per n: its
  float32 bits (the inputs' first n rows, as the case batches them)."""
  import importlib.util

  import jax
  import numpy as np

  spec = importlib.util.spec_from_file_location("my_model", _MODEL)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  params, x = mod.inputs()
  fn = jax.jit(mod.model)  # the CPU: no accelerator here
  return {
    n: np.asarray(fn(params, x[:n]))[0].view(np.uint32).tobytes() for n in sizes
  }


def _triton_gemms(out: str, n: int) -> int:
  """The a100's Triton gemm fusions at n under float32, read by regex from
  the optimized HLO explain wrote (XLA's own text)."""
  path = os.path.join(out, "a100", "my_model", f"n{n}-float32", "optimized.hlo")
  with open(path, encoding="utf-8") as f:
    return len(_GEMM_FUSION_RE.findall(f.read()))


_WORKERS = contextlib.ExitStack()


def setUpModule():
  # The module's in-process commands and sweeps share warm workers, and
  # one loader worker for the model's file (explain, its verify command
  # and the notebook's explain each load it).
  _WORKERS.enter_context(testutil.shared_workers())
  _WORKERS.enter_context(testutil.shared_case_loader())


def tearDownModule():  # pytest calls it (not unittest's module cleanups)
  _WORKERS.close()


class UserModelTest(absltest.TestCase):
  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.out = tempfile.mkdtemp(prefix="findings_user_")
    cls.proc = run_hloprobe_here(
      "explain",
      f"--case={_CASE}",
      "--targets=cpu,a100,t4",
      f"--batch_sizes={_SIZES}",
      f"--output_dir={cls.out}",
      # The bitwise answer (issue 38) on, as by default.
      timeout_s=900,
    )
    cls.lines = cls.proc.stdout.splitlines()
    cls.first = _line_of("x @ w1")
    cls.second = _line_of("h @ w2")

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.out, ignore_errors=True)
    super().tearDownClass()

  def test_first_line_names_algorithm_and_source_lines(self):
    self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
    self.assertTrue(
      self.lines[0].startswith(
        "Answer: my_model on a100 (compile only): TF32_TF32_F32 at sites 0-1 "
        f"(my_model.py:{self.first} `h = x @ w1 + b1`, "
        f"my_model.py:{self.second} `return h @ w2`), made Triton gemm"
      ),
      self.lines[0],
    )
    self.assertEqual(self.lines[-1], self.lines[0])
    self.assertNotIn("XLA made them", self.proc.stdout)

  def test_second_line_is_a_jax_code_change_at_the_lines(self):
    self.assertTrue(
      self.lines[1].startswith(
        "Do: precision=jax.lax.Precision.HIGHEST on the calls at "
        f"my_model.py:{self.first}, my_model.py:{self.second} "
      ),
      self.lines[1],
    )
    self.assertIn('jax.default_matmul_precision("float32")', self.lines[1])

  def test_third_line_verify_command_passes(self):
    prefix = "Verify (PASS): hloprobe verify "
    self.assertTrue(self.lines[2].startswith(prefix), self.lines[2])
    self.assertIn("--fix=float32", self.lines[2])
    words = shlex.split(self.lines[2].removeprefix("Verify (PASS): "))[1:]
    proc = run_hloprobe_here(*words, timeout_s=900)
    self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
    self.assertTrue(
      proc.stdout.startswith("verify --fix=float32: PASS"), proc.stdout
    )

  def test_one_cause_one_line_per_target(self):
    self.assertLessEqual(len(self.lines), 40)
    self.assertNotIn("Findings by cause", self.proc.stdout)
    for target in ("a100 (compile only): 1 cause", "cpu", "t4"):
      self.assertIn(f"\n  my_model on {target}", self.proc.stdout)

  def test_nothing_printed_twice_but_the_answer(self):
    body = [line for line in self.lines[1:-1] if line]
    self.assertEqual(len(body), len(set(body)), self.proc.stdout)
    self.assertEqual(self.lines.count(self.lines[0]), 2)
    self.assertEqual(self.proc.stdout.count("Verify (PASS)"), 1)

  def test_bitwise_answer_one_line_per_cause(self):
    """The batch-invariance answer (on by default) in one line per cause,
    its three precisions folded; the pins' commands and the reductions
    per n only under --verbose."""
    title = "Batch invariance, by cause (each precision and kernel: --verbose):"
    at = self.lines.index(title)
    self.assertGreater(at, 2)  # after Answer, Do and Verify
    under = "under bfloat16, tensorfloat32 and float32: "
    folded = self.lines[at + 1 : at + 4]
    self.assertEqual(
      [line.split(": ")[0] for line in folded],
      [f"  my_model on {t} {under[:-2]}" for t in ("cpu", "a100", "t4")],
    )
    self.assertEqual(self.lines[at + 4], "")
    self.assertNotIn("Do: to pin", self.proc.stdout)
    self.assertNotIn("is batch-invariant on", self.proc.stdout)
    # The CPU: row 0's bits at n = 1 and 2 from the model jitted here.
    bits = _row0_bits((1, 2))
    word = "batch-invariant" if bits[1] == bits[2] else "not batch-invariant"
    self.assertTrue(
      folded[0].startswith(f"  my_model on cpu {under}{word} (bits"),
      folded[0],
    )
    # The a100: its Triton gemm fusions read from the optimized HLO that
    # explain wrote (none at n = 1: the dots strength-reduced; both at
    # n = 2), so n = 2 differs by sites 0-1.
    gemms = {n: _triton_gemms(self.out, n) for n in (1, 2)}
    self.assertEqual((gemms[1], gemms[2]), (0, 2))
    self.assertIn(
      "not batch-invariant (by kernel identity): every row: same per-row "
      "arithmetic for n = 1, n = 2 differs; at n = 2: sites 0-1 Triton gemm",
      folded[1],
    )

  def test_report_html_finding_table_first_verdict_on_screen(self):
    path = os.path.join(self.out, "report.html")
    with open(path, encoding="utf-8") as f:
      probe = chromium.dump_dom(f.read(), _PROBE, width=1400)
    self.assertEqual(probe["window"], 1400)
    self.assertLessEqual(probe["verdict_right"], probe["box_right"])
    self.assertEqual(probe["first"], "findings")
    (row,) = probe["findings"]
    self.assertIn(f"my_model.py:{self.first}", row)
    self.assertIn("TF32_TF32_F32", row)
    # Rows grouped by finding: the finding's configs first.
    grouped = probe["grouped"]
    ones = [g for g in grouped if g == "1"]
    self.assertEqual(grouped[: len(ones)], ones)
    self.assertTrue(ones)

  def test_notebook_view_finding_table_first_words_folded(self):
    results = hloprobe.explain(
      _CASE, targets=["cpu", "a100", "t4"], batch_sizes=[1, 2]
    )
    page = results._repr_html_()
    self.assertLess(page.index('id="findings"'), page.index('class="sortable"'))
    self.assertLess(page.index('class="sortable"'), page.index("<details>"))
    self.assertIn(f"my_model.py:{self.first}", page)


if __name__ == "__main__":
  absltest.main()
