"""Rendering: strict JSON for machines, whatever the numbers."""

from __future__ import annotations

import json
import math
import os

from absl.testing import absltest

from hloprobe.compile.targets import get_target
from hloprobe.numerics import Verdict, VerdictKind, accuracy, bands, predict
from hloprobe.records import Config, ConfigResult, Execution
from hloprobe.report import files, results_schema, tables, verification
from hloprobe.verify.fix import Fix
from hloprobe.verify.outcome import Verification
from hloprobe.verify.requirements import Requirement

_INF, _NAN = math.inf, math.nan
_VERSIONS = {"jax": "0.10.2", "jaxlib": "0.10.2"}


def _strict_loads(text: str):
  """json.loads that rejects NaN, Infinity and -Infinity, as jq does."""

  def reject(constant):
    raise ValueError(f"not JSON: {constant}")

  return json.loads(text, parse_constant=reject)


def _overflowed() -> ConfigResult:
  """A config whose f32 output overflowed: inf and nan errors, inf band."""
  stats = accuracy.ErrorStats(
    row0=_INF, row0_ref=3e38, row0_abs=_INF, max_abs=_INF, max_rel=_NAN
  )
  band = bands.SiteBand(0, "F32_F32_F32", 64, _INF, 1e30, _INF, 1e37)
  prediction = predict.Prediction(
    site_algorithms=("F32_F32_F32",),
    stats=stats,
    noise=accuracy.NoiseFloor(_INF, _INF, _NAN),
    tolerance_abs=_INF,
    shares=(),
    top_site=None,
    bands=(band,),
    best_candidate=None,
    leaves=("",),
    verdicts=(Verdict(VerdictKind.UNEXPLAINED),),
  )
  return ConfigResult(
    Config("c_inf", get_target("cpu"), 2, "float32"),
    execution=Execution(run_s=0.5, leaf_stats=(stats,), headline=0),
    prediction=prediction,
  )


class StrictJsonTest(absltest.TestCase):
  def test_non_finite_floats_become_null(self):
    doc = _strict_loads(tables.render([_overflowed()], "json", _VERSIONS))
    config = doc["configs"][0]
    self.assertIsNone(config["numerics"]["row0_abs_err"])
    self.assertIsNone(config["numerics"]["max_rel_err"])
    self.assertEqual(config["numerics"]["row0_ref_f64"], 3e38)
    self.assertIsNone(config["prediction"]["site_bands"][0]["worst_abs"])
    self.assertEqual(config["prediction"]["site_bands"][0]["K"], 64)
    self.assertIsNone(config["prediction"]["noise_floor"]["row0_spread_abs"])

  def test_results_json_file_is_strict(self):
    out = self.create_tempdir().full_path
    files.write_outputs([_overflowed()], out, _VERSIONS)
    with open(os.path.join(out, "results.json")) as f:
      doc = _strict_loads(f.read())
    self.assertIsNone(doc["configs"][0]["numerics"]["max_abs_err"])

  def test_verification_json_is_strict(self):
    fix = Fix("float32", precision="float32")
    outcome = Verification(
      fix, (Requirement("accurate", False, ("x",)),), (), ()
    )
    doc = _strict_loads(verification.render_verification(outcome, "json"))
    self.assertFalse(doc["passed"])

  def test_dumps_json_recurses_and_keeps_finite_values(self):
    doc = {"a": [1.5, _INF, {"b": (-_INF, _NAN, 0.0)}], "c": "inf", "d": 7}
    self.assertEqual(
      _strict_loads(results_schema.dumps_json(doc)),
      {"a": [1.5, None, {"b": [None, None, 0.0]}], "c": "inf", "d": 7},
    )


class MarkdownTest(absltest.TestCase):
  def test_headers_have_no_pipes(self):
    # A '|' in a header would add columns to a GitHub markdown table.
    for header in tables._TABLE_HEADERS + tables._SITE_HEADERS:
      self.assertNotIn("|", header)


if __name__ == "__main__":
  absltest.main()


class NotesTest(absltest.TestCase):
  """What hloprobe changed or could not do is said under the table."""

  def _results(self):
    from hloprobe.records import Compilation

    note = "compiled again with xla_gpu_enable_triton_gemm=false: because"
    changed = ConfigResult(
      Config("c", get_target("a100"), 2, "float32", "deterministic_ops"),
      compilation=Compilation("", "", compile_notes=(note,)),
    )
    unpredicted = [
      ConfigResult(
        Config("c", get_target("cpu"), n, "float32"),
        compilation=Compilation("", ""),
        prediction_error="no float64 reference: KeyError: 'num_consts'",
      )
      for n in (1, 2)
    ]
    return [changed, *unpredicted]

  def test_table_says_see_notes_and_not_predicted(self):
    text = tables.render(self._results(), "table", _VERSIONS)
    self.assertIn("ok, see notes", text)
    notes = text[text.index("\nnotes:\n") :]
    wide = tables.render(self._results(), "table", _VERSIONS, wide=True)
    self.assertEqual(wide.count("not predicted"), 3)  # 2 cells and a note
    self.assertIn("\nnotes:\n", wide)
    self.assertIn("xla_gpu_enable_triton_gemm=false", notes)
    # one note for both configs that share it, naming both
    self.assertIn("n=1 float32; cpu c n=2 float32: not predicted: no", notes)
    self.assertIn("KeyError: 'num_consts'", notes)

  def test_json_keeps_the_compile_notes(self):
    doc = json.loads(tables.render(self._results(), "json", _VERSIONS))
    self.assertEqual(
      doc["configs"][0]["compile_notes"],
      ["compiled again with xla_gpu_enable_triton_gemm=false: because"],
    )
