"""versions/compare.py: what `hloprobe versions` compares and counts, and
its table and JSON, on runs made by hand (tests/version_runs.py); a
release not installed is never compared.
"""

from __future__ import annotations

from absl.testing import absltest, parameterized
from version_runs import config_row, not_installed, version_run

from hloprobe.versions import (
  compare,
)
from hloprobe.versions.run import VersionRun


class CompareTest(parameterized.TestCase):
  """What is compared and counted; a not-installed release never is."""

  def test_a_not_installed_release_is_never_a_change(self):
    runs = [
      not_installed("0.4.1"),
      version_run("0.10.2", config_row(1, "dot x4")),
    ]
    (entry,) = compare.compare(runs)
    self.assertEqual(entry["changed"], [])
    self.assertEqual(entry["compared_in"], ["0.10.2"])
    self.assertEqual(entry["cells"]["0.4.1"]["status"], "not installed")
    self.assertEqual(compare.footer_counts([entry]), (0, 0, 1))

  def test_a_failed_worker_compares_nothing(self):
    runs = [
      VersionRun("0.4.38", error="worker exited with status 1: boom"),
      version_run("0.10.2", config_row(1, "dot x4")),
    ]
    (entry,) = compare.compare(runs)
    self.assertEqual((entry["changed"], entry["compared_in"]), ([], ["0.10.2"]))
    self.assertEqual(entry["cells"]["0.4.38"]["status"], "n/a")

  def test_a_failed_config_is_a_change(self):
    failed = config_row(1, "") | {"status": "failed", "stage": "compile"}
    runs = [
      version_run("0.4.38", failed | {"error": "x"}),
      version_run("0.10.2", config_row(1, "dot x4")),
    ]
    (entry,) = compare.compare(runs)
    self.assertEqual(entry["changed"], ["status"])
    self.assertEqual(compare.footer_counts([entry]), (1, 1, 1))

  def test_a_real_change_beside_a_not_installed_release_counts(self):
    # The planted difference: one dot gone at n = 2 in the newer release.
    runs = [
      version_run("0.4.38", config_row(1, "dot x4"), config_row(2, "dot x4")),
      not_installed("0.4.1"),
      version_run("0.10.2", config_row(1, "dot x4"), config_row(2, "dot x3")),
    ]
    entries = compare.compare(runs)
    self.assertEqual([e["changed"] for e in entries], [[], ["fates"]])
    self.assertEqual(compare.footer_counts(entries), (1, 2, 2))
    text = compare.render_versions(runs)
    self.assertIn(
      "1 of 2 configs compared in two or more versions changed (*).", text
    )
    (row,) = [l for l in text.splitlines() if "n=2 float32" in l]
    self.assertIn("not installed: no wheel", row)
    self.assertTrue(row.rstrip().endswith("*"))

  def test_the_issue_case_counts_nothing(self):
    """The issue's run: 0.12.0.1 not installed under Python 3.11 made all
    12 rows "changed"; now none is and none is compared."""
    configs = [config_row(n, "dot x4") for n in range(1, 13)]
    runs = [not_installed("0.12.0.1"), version_run("0.10.2", *configs)]
    entries = compare.compare(runs)
    self.assertEqual(compare.footer_counts(entries), (0, 0, 12))
    self.assertIn(
      "0 of 0 configs compared in two or more versions changed (*); 12 of "
      "12 ran under fewer than two versions and are not compared.",
      compare.render_versions(runs),
    )

  def test_rows_and_json_name_the_commits(self):
    jax_commit = "990e6a0b84138346e6a38785412f36356e0e5dc3"
    runs = [
      version_run("0.10.2", config_row(1, "dot x4"), jax_commit=jax_commit),
      version_run("0.12.0.1", config_row(1, "dot x4")),
    ]
    text = compare.render_versions(runs)
    (jax_row,) = [
      l for l in text.splitlines() if l.lstrip().startswith("jax commit")
    ]
    self.assertIn("990e6a0b8413", jax_row)
    (xla_row,) = [
      l for l in text.splitlines() if l.lstrip().startswith("xla commit")
    ]
    self.assertIn("5a9e73cbd925", xla_row)
    self.assertIn("unknown", xla_row)
    doc = compare.versions_json(runs)
    self.assertEqual(doc["schema_version"], 2)
    first, second = doc["versions"]
    self.assertEqual(
      (first["jax_commit"], first["xla_commit"]),
      (jax_commit, "5a9e73cbd92530cac2ac36f4736a774b2412afe2"),
    )
    self.assertIsNone(second["xla_commit"])
    self.assertIn("XLA from jaxlib 0.10.2 to 0.12.0.1: unknown", text)


if __name__ == "__main__":
  absltest.main()
