"""report/listings.py: what `hloprobe targets`, `cases` and `experiments`
print. Compute capabilities expected are NVIDIA's published ones (CUDA
GPUs list: A100 8.0, T4 7.5, V100 7.0; H100 9.0, whose XLA target is the
`a` variant); flags are XLA's own spellings (xla/debug_options_flags.cc)."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.compile import CASES
from hloprobe.report import listings


class ListingsTest(absltest.TestCase):
  def test_targets_with_mode_and_compute_capability(self):
    text = listings.targets_listing()
    rows = {l.split()[0]: l.split() for l in text.splitlines()[2:] if l.strip()}
    self.assertEqual(rows["cpu"][1:5], ["cpu", "compile", "and", "run"])
    for name, cc in (
      ("a100", "8.0"),
      ("t4", "7.5"),
      ("v100", "7.0"),
      ("h100", "9.0a"),
    ):
      self.assertEqual(rows[name][1:5], ["cuda", "compile", "only", cc], name)
    self.assertRegex(text, r"\n\nptxas for GPU targets: \S")

  def test_one_line_per_case_with_its_source(self):
    lines = listings.cases_listing().splitlines()
    self.assertEqual([l.split()[0] for l in lines], list(CASES))
    self.assertTrue(all(len(l.split()) == 2 for l in lines), lines)

  def test_experiments_name_their_flags(self):
    text = listings.experiments_listing()
    self.assertRegex(
      text, r"\nno_triton_gemm +--xla_gpu_enable_triton_gemm=false +GPU"
    )
    self.assertIn("--xla_disable_hlo_passes=dot-strength-reduction", text)


class ListingTest(absltest.TestCase):
  def test_one_call_names_each_listing(self):
    self.assertEqual(listings.listing("cases"), listings.cases_listing())
    self.assertEqual(
      listings.listing("experiments"), listings.experiments_listing()
    )
    with self.assertRaisesRegex(ValueError, "no listing 'sites'"):
      listings.listing("sites")


if __name__ == "__main__":
  absltest.main()
