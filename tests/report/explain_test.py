"""Tests of `hloprobe explain` (explain.py and explain_text.py) on real
compiles: the user's seed MLP on a100, t4 and cpu, jaxlib 0.10.2."""

from __future__ import annotations

import dataclasses
import json

import pytest
import testutil
from absl.testing import absltest, parameterized
from testutil import numpy_seed_row0, run_hloprobe_here

from hloprobe import engine, records
from hloprobe.compile import cases, experiments, targets
from hloprobe.report import (
  explain,
  explain_records,
  explain_text,
  results_schema,
)
from hloprobe.sites import Fate

# Asserts CPU-computed floats: `make test-isa` reruns it under other ISAs.
pytestmark = pytest.mark.cpu_numerics

_ROOT = testutil.ROOT
_PRECISIONS = ("bfloat16", "tensorfloat32", "float32")
_TARGETS = ("a100", "t4", "cpu")
# The swept cases' records, handed to `explain` (it looks no name up).
_CASES = (cases.seed_mlp,)
_MR = (
  (0, 1, 2, 3),
  "multiply+reduce",
  "dot-strength-reduction, simplification",
)


# One pool of workers for the module's sweeps (each reuses them).
_POOL = testutil.SweepPool()


def tearDownModule():
  _POOL.close()


def _sweep(batch_sizes, precisions, target_names):
  """The sweep `explain` runs, through this test process's record cache
  (testutil.record_cache): a config an earlier test of this file swept is
  a hit (the cache's tests show a hit equals a computed record)."""
  spec = engine.SweepSpec(
    ("seed_mlp",),
    batch_sizes,
    precisions,
    target_names,
    explain_passes=True,
    cache_dir=testutil.record_cache(),
  )
  return _POOL.run(spec)


def _by_target(explanations):
  return {e.target: e for e in explanations}


def _block(text: str, target: str) -> str:
  """The part of the account about one target."""
  start = text.index(f"seed_mlp on {target} (")
  end = text.find("\n\n", start)
  return text[start:end]


def _unsettled(text: str) -> list[str]:
  tail = text[text.index("What this cannot settle without a real device:") :]
  return [line[4:] for line in tail.splitlines() if line.startswith("  - ")]


def _seed_tf32_row0_abs() -> float:
  """|row 0 with TF32 operands at sites 0-2 and f32 activations - float64|,
  in numpy."""
  return abs(numpy_seed_row0((0, 1, 2), f32_between=True) - numpy_seed_row0())


@pytest.mark.compiles
@pytest.mark.release_rules
class SeedMlpExplainTest(parameterized.TestCase):
  # Whether the a100's Triton gemm runs TF32 under HIGH (XLA 251becc5,
  # jaxlib 0.11.1): then tensorfloat32 reads as bfloat16 does.
  HIGH_TF32 = testutil.triton_tf32_under_high()

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.results = _sweep((1, 2, 3), _PRECISIONS, _TARGETS)
    cls.found = _by_target(explain.explain_results(cls.results, _CASES))
    # One line per statement, so assertions do not depend on wrapping.
    cls.text = explain_text.render_explanation(
      list(cls.found.values()), width=10_000
    )

  def test_json_mirrors_the_records(self):
    records = list(self.found.values())
    doc = json.loads(
      results_schema.dumps_json(explain_text.explanation_json(records))
    )
    self.assertEqual(
      (doc["schema"], doc["schema_version"]), ("hloprobe.explain", 1)
    )
    by_target = {e["target"]: e for e in doc["explanations"]}
    self.assertEqual(set(by_target), set(_TARGETS))
    a100, record = by_target["a100"], self.found["a100"]
    self.assertEqual(a100["precisions"], record.precisions)
    span = a100["spans"]["bfloat16"][0]
    self.assertEqual(
      span["batch_sizes"], list(record.spans["bfloat16"][0].batch_sizes)
    )
    sites, fate, how = record.spans["bfloat16"][0].groups[0]
    self.assertEqual(
      span["groups"][0], {"sites": list(sites), "fate": fate, "how": how}
    )
    change = record.changes[0]
    ns, fate, algorithm = change.steps[0]
    self.assertEqual(
      a100["changes"][0]["steps"][0],
      {"batch_sizes": list(ns), "fate": fate, "algorithm": algorithm},
    )
    cpu_row0 = by_target["cpu"]["row0"][0]
    self.assertEqual(cpu_row0["row0"], self.found["cpu"].row0[0].row0)

  def test_every_config_compiled_with_passes(self):
    for r in self.results:
      self.assertTrue(r.ok, (r.config, r.failure))
      self.assertIsNotNone(r.compilation.passes, r.compilation.passes_error)

  @parameterized.parameters(*_PRECISIONS)
  def test_a100_fates_change_between_n1_and_n2(self, precision):
    spans = self.found["a100"].spans[precision]
    self.assertEqual(
      spans,
      (
        explain_records.FateSpan((1,), (_MR,)),
        explain_records.FateSpan(
          (2, 3),
          (
            (
              (0, 1, 2),
              "Triton gemm",
              "triton-gemm-rewriter, hlo_normalization",
            ),
            ((3,), "multiply+reduce", "dot-strength-reduction, simplification"),
          ),
        ),
      ),
    )

  def test_a100_tf32_under_default_and_high_by_release(self):
    uses = [a for a in self.found["a100"].algorithms if a.fate == "Triton gemm"]
    by_precision = {a.precision: a.algorithm for a in uses}
    self.assertLen(uses, 3)
    self.assertEqual(
      by_precision,
      {
        "bfloat16": "TF32_TF32_F32",
        "tensorfloat32": "TF32_TF32_F32" if self.HIGH_TF32 else "F32_F32_F32",
        "float32": "F32_F32_F32",
      },
    )
    self.assertIn(
      "mma.sync", next(a.evidence for a in uses if a.precision == "bfloat16")
    )

  def test_a100_arithmetic_changes_under_tf32_precisions(self):
    changes = {c.precision: c for c in self.found["a100"].changes}
    moved = ("bfloat16",) + (("tensorfloat32",) if self.HIGH_TF32 else ())
    for precision in moved:
      self.assertEqual(changes[precision].sites, (0, 1, 2))
      self.assertTrue(changes[precision].arithmetic)
      self.assertEqual(
        changes[precision].steps,
        (
          ((1,), "multiply+reduce", "F32_F32_F32"),
          ((2, 3), "Triton gemm", "TF32_TF32_F32"),
        ),
      )
    self.assertEqual(changes["tensorfloat32"].arithmetic, self.HIGH_TF32)
    self.assertFalse(changes["float32"].arithmetic)

  def test_a100_library_alternative_under_high_only(self):
    if self.HIGH_TF32:  # the library rule agrees with the Triton kernels
      self.assertEqual(self.found["a100"].alternatives, ())
      return
    (alt,) = self.found["a100"].alternatives
    self.assertEqual(
      (alt.precision, alt.sites, alt.batch_sizes),
      ("tensorfloat32", (0, 1, 2), (2, 3)),
    )
    self.assertEqual(
      (alt.triton_algorithm, alt.library_algorithm, alt.elsewhere),
      ("F32_F32_F32", "TF32_TF32_F32", ("F32_F32_F32",)),
    )
    self.assertEqual(alt.libraries, ("cuBLAS", "cuBLASLt"))
    self.assertEqual(
      self.found["a100"].reported, cases.get_case("seed_mlp").reported
    )

  def test_t4_cublaslt_f32_and_nothing_to_claim(self):
    t4 = self.found["t4"]
    self.assertEqual(
      t4.spans["bfloat16"][1].groups[0][:2], ((0, 1, 2), "cuBLASLt")
    )
    algos = {a.algorithm for a in t4.algorithms if a.fate == "cuBLASLt"}
    self.assertEqual(algos, {"F32_F32_F32"})
    self.assertEqual(t4.alternatives, ())
    self.assertIsNone(t4.reported)

  def test_cpu_observed_ulps_come_from_the_results(self):
    cpu = self.found["cpu"]
    self.assertFalse(cpu.compile_only)
    want = {
      (r.config.precision, r.config.n): r.execution.ulp_vs_n1
      for r in self.results
      if r.config.target.name == "cpu"
    }
    got = {
      (z.precision, n): z.ulp_vs_n1 for z in cpu.row0 for n in z.batch_sizes
    }
    self.assertEqual(got, want)
    self.assertEqual(got[("float32", 1)], 0)
    self.assertGreater(got[("float32", 2)], 0)
    self.assertEqual(self.found["a100"].row0, ())

  def test_text_fates_and_passes(self):
    a100 = _block(self.text, "a100")
    self.assertIn(
      "under every precision swept (bfloat16, tensorfloat32 and float32):", a100
    )
    self.assertIn(
      "n = 1: sites 0-3 multiply+reduce (dot-strength-reduction, simplification)",
      a100,
    )
    self.assertIn(
      "n = 2-3: sites 0-2 Triton gemm (triton-gemm-rewriter, hlo_normalization); "
      "site 3 multiply+reduce (dot-strength-reduction, simplification)",
      a100,
    )
    self.assertIn(
      "sites 0-2 change arithmetic: multiply+reduce F32_F32_F32 at n = 1, "
      "Triton gemm TF32_TF32_F32 at n = 2-3",
      a100,
    )

  def test_text_algorithms(self):
    a100 = _block(self.text, "a100")
    (line,) = [
      l
      for l in a100.splitlines()
      if l.strip().startswith("Triton gemm (sites 0-2):")
    ]
    if self.HIGH_TF32:
      self.assertRegex(
        line,
        r"under bfloat16 \(DEFAULT\) and tensorfloat32 \(HIGH\) TF32_TF32_F32 "
        r"\[ptx: [^]]*tf32",
      )
      self.assertIn("under float32 (HIGHEST) F32_F32_F32 [ptx: no mma", line)
    else:
      self.assertRegex(
        line, r"under bfloat16 \(DEFAULT\) TF32_TF32_F32 \[ptx: [^]]*tf32"
      )
      self.assertIn(
        "under tensorfloat32 (HIGH) and float32 (HIGHEST) F32_F32_F32 "
        "[ptx: no mma",
        line,
      )
    # algorithm line, a change line per TF32 precision, predicted verdict
    self.assertEqual(a100.count("TF32_TF32_F32"), 4 if self.HIGH_TF32 else 3)
    t4 = _block(self.text, "t4")
    self.assertIn(
      "cuBLASLt (sites 0-2): under bfloat16 (DEFAULT) and tensorfloat32 (HIGH) F32_F32_F32",
      t4,
    )
    self.assertNotIn("TF32_TF32_F32", t4)

  def test_text_cpu_observed_row0(self):
    cpu = _block(self.text, "cpu")
    r2 = next(
      r.execution
      for r in self.results
      if (r.config.target.name, r.config.n, r.config.precision)
      == ("cpu", 2, "float32")
    )
    self.assertIn(
      f"n = 2-3: {r2.stats.row0:.7g} (|err| vs f64 {r2.stats.row0_abs:.2e}), "
      f"{r2.ulp_vs_n1} ULP (float32) from n = 1",
      cpu,
    )
    self.assertIn("Row 0:", cpu)
    self.assertIn("not observed (compile only)", _block(self.text, "a100"))

  def test_text_cannot_settle(self):
    lines = _unsettled(self.text)
    tf32 = [
      l for l in lines if l.startswith("a100: under tensorfloat32 (HIGH)")
    ]
    self.assertEqual(
      [l.split(":")[0] for l in lines if "fates chosen by" in l], ["a100", "t4"]
    )
    if self.HIGH_TF32:  # the heuristic choice already runs TF32 under HIGH
      self.assertEqual(tf32, [])
      return
    self.assertLen(tf32, 1)
    self.assertIn(
      "autotuning could pick cuBLAS/cuBLASLt, whose rule gives TF32_TF32_F32",
      tf32[0],
    )
    self.assertIn(
      "reproduce the reporter's tensorfloat32 error seen with jaxlib 0.4.23",
      tf32[0],
    )
    self.assertIn("which this heuristic choice does not", tf32[0])
    self.assertEqual(
      [l.split(":")[0] for l in lines if "fates chosen by" in l], ["a100", "t4"]
    )
    self.assertFalse([l for l in lines if l.startswith(("t4: under", "cpu"))])
    self.assertNotIn("bfloat16", " ".join(lines))

  def test_planted_sm75_a100_claims_no_library_tf32(self):
    # The claim comes from effective.blas_algorithm: on sm_75 cuBLAS has no
    # TF32, so the same fates give no TF32 alternative (only the reverse one:
    # a library call would drop the Triton kernels' TF32 under DEFAULT).
    # explain reads the compute capability from each config's Target record.
    sm75 = dataclasses.replace(
      targets.get_target("a100"), compute_capability="7.5"
    )

    def on_sm75(r):
      if r.config.target.name != "a100":
        return r
      return dataclasses.replace(
        r, config=dataclasses.replace(r.config, target=sm75)
      )

    found = _by_target(
      explain.explain_results([on_sm75(r) for r in self.results], _CASES)
    )
    tf32 = ("bfloat16",) + (("tensorfloat32",) if self.HIGH_TF32 else ())
    self.assertEqual(
      [
        (alt.precision, alt.triton_algorithm, alt.library_algorithm)
        for alt in found["a100"].alternatives
      ],
      [(p, "TF32_TF32_F32", "F32_F32_F32") for p in tf32],
    )
    self.assertIsNone(found["a100"].reported)
    text = explain_text.render_explanation(list(found.values()), width=10_000)
    self.assertNotIn("whose rule gives TF32_TF32_F32", text)
    self.assertNotIn("reproduce", text)

  def test_planted_tf32_triton_under_high_is_no_alternative(self):
    # Had the Triton kernels run TF32 under HIGH, the library rule would
    # agree, and the heuristic choice would already explain the report.
    def tf32(r):
      if (r.config.target.name, r.config.precision) != (
        "a100",
        "tensorfloat32",
      ):
        return r
      fates = tuple(
        dataclasses.replace(f, effective_algorithm="TF32_TF32_F32")
        if f.fate == Fate.TRITON_GEMM
        else f
        for f in r.compilation.fates
      )
      compilation = dataclasses.replace(r.compilation, fates=fates)
      return dataclasses.replace(r, compilation=compilation)

    found = _by_target(
      explain.explain_results([tf32(r) for r in self.results], _CASES)
    )
    self.assertEqual(found["a100"].alternatives, ())
    changes = {c.precision: c.arithmetic for c in found["a100"].changes}
    self.assertTrue(changes["tensorfloat32"])

  def test_a100_predicted(self):
    by = {(z.precision, z.batch_sizes): z for z in self.found["a100"].predicted}
    tf32 = by["bfloat16", (2, 3)]
    # Independent: numpy, TF32 operands at sites 0-2 (the verdict's) vs
    # float64 (0.61005); the f32 sums and activations of the emulation
    # move it by ~1e-7 (AVX-512 and AVX alike).
    self.assertAlmostEqual(tf32.row0_abs, _seed_tf32_row0_abs(), delta=1e-4)
    self.assertEqual(
      tf32.verdict, "explained by TF32_TF32_F32 at sites [0, 1, 2]"
    )
    self.assertEqual(tf32.top_site, 0)
    self.assertGreater(tf32.top_share, 0.9)
    self.assertEqual(by["bfloat16", (1,)].verdict, "within f32 noise")
    self.assertEqual(by["float32", (1, 2, 3)].verdict, "within f32 noise")
    self.assertIn(
      "explained by TF32_TF32_F32 at sites [0, 1, 2]; top site 0 (9", self.text
    )
    self.assertIn(
      "Row 0 predicted (emulating each site's effective algorithm):", self.text
    )

  def test_predicted_groups_span_their_configs(self):
    # Each group's smallest and largest |err| are its configs' own.
    self.assertNotEmpty(self.found["a100"].predicted)
    for z in self.found["a100"].predicted:
      errs = [
        r.prediction.stats.row0_abs
        for r in self.results
        if r.config.target.name == "a100"
        and r.config.precision == z.precision
        and r.config.n in z.batch_sizes
      ]
      self.assertLen(errs, len(z.batch_sizes))
      self.assertEqual((z.row0_abs_min, z.row0_abs), (min(errs), max(errs)))


@pytest.mark.compiles
class NothingChangesTest(absltest.TestCase):
  def test_cpu_batch_2_and_3(self):
    (e,) = explain.explain_results(
      _sweep((2, 3), ("float32",), ("cpu",)), _CASES
    )
    self.assertLen(e.spans["float32"], 1)
    self.assertEqual(e.changes, ())
    text = explain_text.render_explanation([e], width=10_000)
    self.assertIn("n = 2-3: sites 0-2 dot in __ynn_fusion", text)
    self.assertIn("no contraction site changes fate across n = 2-3", text)
    self.assertIn(
      "under float32 (HIGHEST), no contraction site changes fate or algorithm with batch size",
      text,
    )
    self.assertIn("ULP vs n = 1 n/a", text)
    self.assertIn("  - nothing: every target here compiled and ran", text)


@pytest.mark.compiles
class CublasTf32OptionalTest(absltest.TestCase):
  def test_change_is_worded_as_may(self):
    # no_triton_gemm: sites 0-2 become cuBLASLt calls whose TF32 is
    # allowed, not required (a real H200's kept the K = 2 gemm in f32).
    # Through the record cache: tests/verify/fix_test.py's no_triton_gemm
    # fix sweeps the bfloat16 half of these configs.
    spec = engine.SweepSpec(
      ("seed_mlp",),
      (1, 2),
      ("bfloat16", "float32"),
      ("a100",),
      experiments=(experiments.Experiment.parse("no_triton_gemm"),),
      cache_dir=testutil.record_cache(),
    )
    found = {
      e.experiment: e for e in explain.explain_results(_POOL.run(spec), _CASES)
    }
    changes = {c.precision: c for c in found["no_triton_gemm"].changes}
    self.assertTrue(changes["bfloat16"].arithmetic)
    self.assertTrue(changes["bfloat16"].tf32_optional)
    self.assertFalse(changes["float32"].arithmetic)  # HIGHEST: F32 only
    baseline = {c.precision: c for c in found["baseline"].changes}
    self.assertFalse(baseline["bfloat16"].tf32_optional)  # Triton: PTX
    text = explain_text.render_explanation(
      [found["baseline"], found["no_triton_gemm"]], width=10_000
    )
    unsettled = _unsettled(text)
    self.assertTrue(unsettled[0].startswith("a100: fates chosen by"))
    self.assertTrue(
      any(
        line.startswith(
          "a100 (experiment no_triton_gemm): fates chosen by XLA heuristic"
        )
        for line in unsettled
      ),
      unsettled,
    )
    self.assertIn(
      "sites 0-2 change arithmetic where cuBLAS uses the TF32 it is "
      "allowed, not required, to use (it may keep f32): multiply+reduce "
      "F32_F32_F32 at n = 1, cuBLASLt TF32_TF32_F32 at n = 2 (could be "
      "consistent with the reported bfloat16 error",
      text,
    )


class ExplainUsageTest(parameterized.TestCase):
  """`hloprobe explain`'s input checks, in this process."""

  @parameterized.named_parameters(
    ("target", "--targets=tpu", "unknown target 'tpu'"),
    ("batch", "--batch_sizes=0", "bad batch size '0'"),
    (
      "precision",
      "--precisions=fp32",
      r"'fp32': did you mean 'float32'\? value should be one of <",
    ),
    ("format", "--format=xml", "--format=xml: value should be one of"),
    ("markdown", "--format=markdown", "explain prints text .* or JSON"),
  )
  def test_bad_input_exits_2(self, flag, message):
    proc = run_hloprobe_here("explain", flag)
    self.assertEqual(proc.returncode, 2, proc.stderr)
    self.assertEqual(proc.stdout, "")
    self.assertRegex(
      proc.stderr, rf"^hloprobe: error: [^\n]*{message}[^\n]*\n$"
    )


@pytest.mark.compiles
class ExplainCommandTest(absltest.TestCase):
  # SeedMlpExplainTest's cpu configs (batch sizes up to 3: the record
  # cache's key has the largest), so these are cache hits after it.
  _CPU = (
    "--targets=cpu",
    "--batch_sizes=1-3",
    "--precisions=float32",
    "--invariance=off",
  )

  def test_explain_cpu(self):
    # In this process (record-cache hits): `python -m hloprobe explain
    # --verbose` runs whole in a process of its own in
    # tests/runtime/host_test.py.
    proc = run_hloprobe_here("explain", *self._CPU, "--verbose", timeout_s=600)
    self.assertEqual(proc.returncode, 0, proc.stderr)
    # The answer first (issue 26), then the account (--verbose: issue 39
    # folds it by default) and the answer again last.
    self.assertTrue(
      proc.stdout.endswith(
        "\nAnswer: no finding: every config within its band.\n"
      )
    )
    self.assertTrue(
      proc.stdout.startswith(
        "Answer: no finding: every config within its band.\n"
      )
    )
    self.assertIn(
      "site 3 multiply+reduce (algsimp, simplification)", proc.stdout
    )
    self.assertIn("What this cannot settle without a real device:", proc.stdout)

  def test_explain_cpu_json(self):
    # The configs are record-cache hits when test_explain_cpu (or
    # SeedMlpExplainTest) swept them first.
    proc = run_hloprobe_here(
      "explain", *self._CPU, "--format=json", timeout_s=600
    )
    self.assertEqual(proc.returncode, 0, proc.stderr)
    (cpu,) = json.loads(proc.stdout)["explanations"]
    self.assertEqual((cpu["target"], cpu["compile_only"]), ("cpu", False))
    groups = cpu["spans"]["float32"][0]["groups"]
    self.assertIn(
      {
        "sites": [3],
        "fate": "multiply+reduce",
        "how": "algsimp, simplification",
      },
      groups,
    )


class PassWordsTest(parameterized.TestCase):
  """A failed attribution reads "pass unknown" (its note names the jaxlib)."""

  @parameterized.named_parameters(
    ("not_asked", None, "pass n/a"),
    ("failed", "pass dump 'x' not read; jaxlib 0.13.0", "pass unknown"),
  )
  def test_words(self, error, words):
    config = records.Config("c", targets.get_target("cpu"), 1, "float32")
    compilation = records.Compilation("", "", passes_error=error)
    r = records.ConfigResult(config, compilation)
    self.assertEqual(explain._pass_words(r, 0), words)


if __name__ == "__main__":
  absltest.main()
