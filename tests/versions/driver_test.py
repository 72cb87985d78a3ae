"""versions/driver.py: where each release runs, decided before any runs,
from interpreters and index answers given here (no interpreter started,
no index asked). Expected: this process's own jaxlib runs here; another
release gets the interpreter that has its wheel (the answers below, cut
from `pip index versions jaxlib --python-version 3.N`), or one line why
not; the CUDA plugin's index is not asked for a CPU-only sweep."""

from __future__ import annotations

from absl.testing import absltest

from hloprobe.compile.compat import installed_jaxlib
from hloprobe.versions import driver, pythons, venvs

_PY311 = pythons.Interpreter("/usr/bin/python3.11", "3.11")
_WHEELS = {"3.11": ("0.4.34", "0.10.2")}


class PlanTest(absltest.TestCase):
  def test_where_each_release_runs(self):
    found = pythons.Pythons((_PY311,), _PY311, lambda v: _WHEELS[v])
    cache = self.create_tempdir().full_path
    where = driver.plan(
      [installed_jaxlib(), "0.4.34", "0.9.9"],
      {"targets": ["cpu"]},
      cache,
      found=found,
    )
    self.assertEqual(where[installed_jaxlib()], venvs.running_venv())
    self.assertEqual(where["0.4.34"], _PY311)
    self.assertIsInstance(where["0.9.9"], str)
    self.assertIn("0.9.9", where["0.9.9"])

  def test_no_plugin_index_for_the_cpu(self):
    self.assertEqual(
      driver.plugin_versions({"0.4.34": _PY311}, {"targets": ["cpu"]}), {}
    )


if __name__ == "__main__":
  absltest.main()
