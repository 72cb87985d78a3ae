"""Issue 23: the "XLA changed the math" verdict through every consumer.

One config result made from the recorded jaxlib 0.10.2 compile of
scaled_dense (a100, float32, Triton gemms off; see tests/scaled_dense.py)
and its executed module, then read by the tables, results.json, explain,
verify's "accurate", the goldens' dots.json and the Model Explorer
overlay. Expected words come from the recorded module's text (its custom
call target and backend_config), not from hloprobe's output. No test here
compiles.
"""

from __future__ import annotations

import json

import recorded
import scaled_dense as mv
from absl.testing import absltest

from hloprobe import verify
from hloprobe.compile import get_target
from hloprobe.golden import format as golden_format
from hloprobe.golden.format import ConfigKey
from hloprobe.pictures import model_explorer
from hloprobe.records import Compilation, Config, ConfigResult
from hloprobe.report import explain_results, render
from hloprobe.report.explain_records import AGREES
from hloprobe.report.explain_text import render_explanation
from hloprobe.report.results_schema import config_json
from hloprobe.report.verdict_words import CHANGED, config_words
from hloprobe.verify.evidence import MathChanged

_WORDS = "alpha_real 0.1, beta 0, epilogue BIAS"


def _result(jaxlib: str = "0.10.2", edit=lambda text: text) -> ConfigResult:
  made, fates = mv.check(jaxlib, edit)
  rec = recorded.load(mv.FIXTURE, jaxlib)
  return ConfigResult(
    Config("scaled_dense", get_target("a100"), mv.N, "float32"),
    Compilation(edit(rec.stablehlo), edit(rec.optimized_hlo), tuple(fates)),
    made=made,
  )


class WiringTest(absltest.TestCase):
  def test_config_verdict_leads_with_the_change(self):
    r = _result()
    self.assertTrue(
      config_words(r).startswith(f"{CHANGED}: __cublas$lt$matmul")
    )
    self.assertIn(_WORDS, config_words(r))
    self.assertIsNone(config_words(_result("0.12.0.1")))

  def test_tables_show_made_error_and_verdict(self):
    text = render([_result()], "markdown", {"jax": "x", "jaxlib": "x"})
    self.assertIn("made abs err row0", text)
    self.assertIn(f"{CHANGED}: __cublas$lt$matmul", text)

  def test_results_json_records_the_change(self):
    doc = config_json(_result())
    self.assertTrue(doc["made"]["changed"])
    self.assertEqual(doc["made"]["changes"][0]["fields"], _WORDS)
    self.assertTrue(doc["verdict"].startswith(CHANGED))
    json.dumps(doc["made"])  # plain JSON

  def test_explain_leads_with_it(self):
    (e,) = explain_results([_result()])
    self.assertTrue(e.made[0].changed)
    text = render_explanation([e])
    first = text.splitlines()[1]
    self.assertEqual(
      first.strip(), "What XLA made (the optimized module executed):"
    )
    self.assertIn("__cublas$lt$matmul", text.split("Fates by batch size")[0])

  def test_explain_says_when_the_module_does_what_the_program_asks(self):
    # jaxlib 0.12.0.1 keeps the scale outside the call (alpha_real 1):
    # both predictions are shown, the executed module's agreeing.
    (e,) = explain_results([_result("0.12.0.1")])
    self.assertFalse(e.made[0].changed)
    head = render_explanation([e]).split("Fates by batch size")[0]
    self.assertIn("What XLA made (the optimized module executed):", head)
    self.assertIn(f"n = {mv.N}: {AGREES}", head)
    self.assertNotIn(CHANGED, head)

  def test_accurate_fails_naming_the_instruction(self):
    (req,) = verify.judge([_result()], ["accurate"])
    self.assertFalse(req.passed)
    (found,) = req.evidence
    self.assertIsInstance(found, MathChanged)
    from hloprobe.report import requirement_lines

    (line,) = requirement_lines(req)
    self.assertIn("__cublas$lt$matmul", line)
    self.assertIn(_WORDS, line)

  def test_goldens_record_it(self):
    r = _result()
    key = ConfigKey("a100", "scaled_dense", mv.N, "float32", "no_triton_gemm")
    files = golden_format.config_files(
      key, r.compilation, {"jax": "j", "jaxlib": "j"}, "2026-12-02", r.made
    )
    rel = key.path("dots.json")
    parsed = golden_format.parse(rel, rel, files[rel])
    math = parsed.content["math"]
    self.assertTrue(math["changed"])
    self.assertEqual(math["changes"][0]["target"], "__cublas$lt$matmul")
    self.assertEqual(math["changes"][0]["fields"], _WORDS)
    self.assertEqual(parsed.header["schema_version"], "3")
    clean = _result("0.12.0.1")
    files = golden_format.config_files(
      key, clean.compilation, {"jax": "j", "jaxlib": "j"}, "d", clean.made
    )
    self.assertIn('  "math": null', files[rel])

  def test_model_explorer_colours_the_site_last(self):
    values = model_explorer._site_values(_result())
    self.assertEqual(list(values)[-1], "math")
    self.assertTrue(
      values["math"][0].startswith(f"{CHANGED}: __cublas$lt$matmul")
    )
    self.assertEqual(
      model_explorer._colour("math", values["math"][0], {}), "#e53935"
    )
    clean = model_explorer._site_values(_result("0.12.0.1"))
    self.assertEqual(list(clean)[-1], "error")
    self.assertEqual(clean["math"][0], "as the program asks")


if __name__ == "__main__":
  absltest.main()
