"""Compile failures are findings (issue 24, item 7): a config XLA rejects
names its dot sites and the pass or rule that rejected it, and `verify`
FAILs it as "does not compile", never "no errors to judge".

Expected values: XLA's own words and code (each rule's file and function,
cited in `sites.rejection`), the StableHLO of the recorded rejection
(tests/intdots_testdata/seed_a100_n1_F16_F16_F32, jaxlib 0.12.0.1: which
dots declare F16_F16_F32), and live compiles where the failure is the point.
"""

from __future__ import annotations

import os
import re

import pytest
from absl.testing import absltest

from hloprobe import engine
from hloprobe.compile import Rejection
from hloprobe.report.site_words import failure_words, finding_words
from hloprobe.sites import explain_rejection
from hloprobe.verify import verify_fix
from hloprobe.verify.evidence import Reason

_DATA = os.path.join(
  os.path.dirname(os.path.dirname(__file__)),
  "intdots_testdata",
  "seed_a100_n1_F16_F16_F32",
)


def _read(name: str) -> str:
  with open(os.path.join(_DATA, name), encoding="utf-8") as f:
    return f.read()


def _recorded() -> Rejection:
  names = _read("dumps.txt").split()
  last = _read("last_dump.txt")
  return Rejection(
    _read("stablehlo.txt"),
    _read("message.txt"),
    tuple((n, last if n == names[-1] else "") for n in names),
  )


def _declaring(stablehlo: str, algorithm: str) -> list[int]:
  """Indices of the dot_generals whose `algorithm = <...>` is `algorithm`
  (read from the text: lhs/rhs precision types and accumulation)."""
  lhs, rhs, acc = algorithm.lower().split("_")[:3]
  dots = re.findall(r"stablehlo\.dot_general[^\n]*", stablehlo)
  want = (
    f"lhs_precision_type = {lhs}, rhs_precision_type = {rhs}, "
    f"accumulation_type = {acc}"
  )
  return [i for i, d in enumerate(dots) if want in d]


class RecordedRejectionTest(absltest.TestCase):
  def test_f16_f16_f32_at_n1_names_sites_and_strength_reduction(self):
    rejection = _recorded()
    self.assertIn("Unsupported dot precision algorithm: 4", rejection.message)
    found = explain_rejection(rejection)
    # Algorithm 4 is ALG_DOT_F16_F16_F32 (xla/xla_data.proto); every dot
    # of seed_mlp declares it, and at n = 1 every one is strength-reduced.
    self.assertEqual(found.algorithm, "F16_F16_F32")
    self.assertEqual(
      list(found.sites), _declaring(rejection.stablehlo, "F16_F16_F32")
    )
    self.assertEqual(found.sites, (0, 1, 2, 3))
    self.assertIn("dot strength reduction", found.rule)
    self.assertIn("algebraic_simplifier.cc", found.rule)
    self.assertTrue(
      finding_words(found).startswith(
        "sites [0, 1, 2, 3] (F16_F16_F32) rejected by"
      )
    )

  def test_source_frame_in_the_message_names_the_site(self):
    stablehlo = _read("stablehlo.txt")
    # Site 3's innermost frame, as jaxlib 0.12.0.1 prints it.
    frame = re.search(r"builtin_cases\.py\":110:6", stablehlo)
    self.assertIsNotNone(frame)
    path = re.search(r"\"([^\"]*builtin_cases\.py)\":110:6", stablehlo)[1]
    message = (
      "UNIMPLEMENTED: Unsupported algorithm on the current device(s): "
      "ALG_DOT_F16_F16_F32\n\nSuspected Python Code Location:\n"
      f"  {path}:110:6 [_seed_forward]\n"
    )
    found = explain_rejection(Rejection(stablehlo, message))
    self.assertEqual((found.sites, found.how), ((3,), "message"))
    self.assertIn("algorithm-checker", found.rule)

  def test_ret_check_names_file_line_and_the_last_pass_dumped(self):
    names = _read("dumps.txt").split()
    message = (
      "INTERNAL: RET_CHECK failure (xla/service/gpu/foo.cc:123) dot != nullptr"
    )
    found = explain_rejection(
      Rejection(_read("stablehlo.txt"), message, tuple((n, "") for n in names))
    )
    self.assertTrue(
      found.rule.startswith("RET_CHECK at xla/service/gpu/foo.cc:123")
    )
    self.assertIn("a pass after", found.rule)
    self.assertEqual(found.sites, ())  # nothing names a dot
    self.assertTrue(finding_words(found).startswith("no dot site named"))


@pytest.mark.compiles
class LiveRejectionTest(absltest.TestCase):
  def test_sweep_row_names_site_and_pass(self):
    spec = engine.SweepSpec(("seed_mlp",), (1,), ("F16_F16_F32",), ("a100",))
    (r,) = engine.run_sweep(spec)
    self.assertFalse(r.ok)
    self.assertEqual(r.failure.stage, "compile")
    self.assertEqual(r.failure.finding.sites, (0, 1, 2, 3))
    words = failure_words(r.failure)
    self.assertIn("dot strength reduction", words)
    self.assertIn("Unsupported dot precision algorithm: 4", words)

  def test_verify_fails_a_fix_that_does_not_compile(self):
    # TF32_TF32_F32 at n = 1 without dot strength reduction: the vector x
    # vector dot (site 3) is left to a loop fusion, whose EmitDot rejects
    # the algorithm (xla/codegen/emitters/elemental_hlo_to_mlir.cc).
    spec = engine.SweepSpec(
      ("seed_mlp",), (1, 2), ("TF32_TF32_F32",), ("a100",)
    )
    outcome = verify_fix(spec, "no_dot_strength_reduction", ("accurate",))
    self.assertFalse(outcome.passed)
    (accurate,) = outcome.requirements
    reasons = [getattr(e, "reason", None) for e in accurate.evidence]
    self.assertIn(Reason.NOT_COMPILED, reasons)
    self.assertNotIn(Reason.NO_ERRORS, reasons)
    (failed,) = [e for e in accurate.evidence if getattr(e, "failure", None)]
    self.assertEqual(failed.subject.n, 1)
    self.assertEqual(failed.failure.finding.sites, (3,))
    self.assertIn(
      "site 3 (TF32_TF32_F32) rejected by the loop emitter",
      failure_words(failed.failure),
    )


if __name__ == "__main__":
  absltest.main()
