"""results.json's JSON Schema and the PTX --output_dir keeps (issue 26).

The schema (hloprobe/report/results.schema.json, package data) accepts a
real sweep's results.json and refuses broken ones; --output_dir writes
the PTX of every kernel a dot site's algorithm was read from, named in
results.json. The fast tests use a recorded a100 compile; one sweep (cpu
and a100, n = 2, bfloat16; marked `compiles`) checks both end to end.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import shutil
import tempfile

import jsonschema
import pytest
import recorded
from absl.testing import absltest, parameterized
from testutil import run_hloprobe_here

from hloprobe.engine.compiled import evidence_ptx
from hloprobe.ir import parse_ptx
from hloprobe.report import write_outputs
from hloprobe.report.results_schema import results_json, schema_document

_VERSIONS = {"jax": "0.12.0.1", "jaxlib": "0.12.0.1"}
# How effective.py names the kernel a "ptx" algorithm was read from.
_KERNEL_RE = re.compile(r"^kernel (\S+): ")


def _with_ptx(name: str, jaxlib: str = recorded.RELEASES[-1]):
  """The recorded compile's ConfigResult with the PTX a sweep keeps."""
  rec = recorded.load(name, jaxlib)
  r = recorded.config_result(rec)
  files = [(text, parse_ptx(text)) for text in rec.ptx]
  ptx = evidence_ptx(r.compilation.fates, files)
  return dataclasses.replace(
    r, compilation=dataclasses.replace(r.compilation, ptx=ptx)
  )


def _claimed_kernels(config: dict) -> set[str]:
  """The kernels results.json's sites say their algorithm was read from."""
  return {
    _KERNEL_RE.match(s["algorithm_evidence"]).group(1)
    for s in config["dot_sites"]
    if s["algorithm_source"] == "ptx"
  }


def _invalid(doc) -> bool:
  try:
    jsonschema.validate(doc, schema_document())
  except jsonschema.ValidationError:
    return True
  return False


class SchemaTest(parameterized.TestCase):
  def test_schema_is_a_valid_json_schema(self):
    jsonschema.Draft202012Validator.check_schema(schema_document())

  @parameterized.parameters(*recorded.RELEASES)
  def test_recorded_results_json_validates(self, jaxlib):
    results = [
      _with_ptx(n, jaxlib)
      for n in ("seed_a100_n2_bfloat16", "seed_cpu_n2_bfloat16")
    ]
    doc = json.loads(json.dumps(results_json(results, _VERSIONS)))
    jsonschema.validate(doc, schema_document())

  def test_broken_documents_do_not_validate(self):
    good = json.loads(
      json.dumps(results_json([_with_ptx("seed_a100_n2_bfloat16")], _VERSIONS))
    )
    self.assertFalse(_invalid(good))
    breaks = {
      "no_fate": lambda d: d["configs"][0]["dot_sites"][0].pop("fate"),
      "n_as_text": lambda d: d["configs"][0].update(n="2"),
      "status_word": lambda d: d["configs"][0].update(status="fine"),
      "version": lambda d: d.update(schema_version=4),
      "no_configs": lambda d: d.pop("configs"),
      "ptx_absolute": lambda d: d["configs"][0]["ptx_files"].update(
        k="/tmp/k.ptx"
      ),
    }
    for name, spoil in breaks.items():
      doc = copy.deepcopy(good)
      spoil(doc)
      self.assertTrue(_invalid(doc), name)


class PtxKeptTest(parameterized.TestCase):
  @parameterized.parameters(*recorded.RELEASES)
  def test_every_ptx_claim_has_its_kernel_file(self, jaxlib):
    r = _with_ptx("seed_a100_n2_bfloat16", jaxlib)
    out = self.create_tempdir().full_path
    written = write_outputs([r], out, _VERSIONS)
    with open(os.path.join(out, "results.json")) as f:
      (config,) = json.load(f)["configs"]
    named = config["ptx_files"]
    claimed = _claimed_kernels(config)
    self.assertNotEmpty(claimed)  # the a100's Triton gemms: read from PTX
    self.assertEqual(set(named), claimed)
    for kernel, rel in named.items():
      self.assertTrue(rel.startswith("a100/seed_mlp/n2-bfloat16/ptx/"), rel)
      path = os.path.join(out, rel)
      self.assertIn(path, written)
      with open(path) as f:
        text = f.read()
      self.assertRegex(text, rf"\.entry\s+{re.escape(kernel)}\s*\(")
    # The TF32 claim's evidence is in the file: the mma the evidence names.
    for site in config["dot_sites"]:
      if site["effective_algorithm"] == "TF32_TF32_F32":
        kernel = _KERNEL_RE.match(site["algorithm_evidence"]).group(1)
        with open(os.path.join(out, named[kernel])) as f:
          self.assertRegex(f.read(), r"mma\.sync\.aligned\.\S*\.tf32")

  def test_cpu_config_keeps_none(self):
    r = _with_ptx("seed_cpu_n2_bfloat16")
    self.assertEqual(r.compilation.ptx, {})


@pytest.mark.compiles
class RealSweepTest(absltest.TestCase):
  """One real sweep (cpu and a100, n = 2, bfloat16) with --output_dir."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.out = tempfile.mkdtemp(prefix="hloprobe-outputs-")
    cls.addClassCleanup(shutil.rmtree, cls.out, ignore_errors=True)
    proc = run_hloprobe_here(
      "sweep",
      "--targets=cpu,a100",
      "--batch_sizes=2",
      "--precisions=bfloat16",
      f"--output_dir={cls.out}",
      "--format=json",
      timeout_s=600,
    )
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(cls.out, "results.json")) as f:
      cls.doc = json.load(f)

  def test_results_json_validates(self):
    jsonschema.validate(self.doc, schema_document())

  def test_a100_ptx_files_present_and_named(self):
    by_target = {c["target"]: c for c in self.doc["configs"]}
    a100, cpu = by_target["a100"], by_target["cpu"]
    self.assertEqual(cpu["ptx_files"], {})
    self.assertEqual(set(a100["ptx_files"]), _claimed_kernels(a100))
    self.assertNotEmpty(a100["ptx_files"])
    for kernel, rel in a100["ptx_files"].items():
      with open(os.path.join(self.out, rel)) as f:
        self.assertIn(f".entry {kernel}", f.read())


if __name__ == "__main__":
  absltest.main()
