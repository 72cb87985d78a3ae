"""versions/pythons.py: which Python makes a release's venv, from given
interpreters and index answers (no interpreter is started).
"""

from __future__ import annotations

import os
import sys

import pytest
from absl.testing import absltest, parameterized

from hloprobe.versions import (
  pythons,
  venvs,
)


class PythonsTest(parameterized.TestCase):
  """Which Python makes a release's venv, from given interpreters and
  index answers (no interpreter is started)."""

  _PY311 = pythons.Interpreter("/usr/bin/python3.11", "3.11")
  _PY312 = pythons.Interpreter("/opt/py312/bin/python3", "3.12")
  _PY313 = pythons.Interpreter("/opt/py313/bin/python3", "3.13")
  # As the package index has them (`pip index versions jaxlib
  # --python-version 3.N`, 2026-12-01), cut down.
  _WHEELS = {
    "3.11": ("0.4.34", "0.10.2"),
    "3.12": ("0.4.34", "0.10.2", "0.11.0", "0.12.0.1"),
    "3.13": ("0.4.34", "0.10.2", "0.11.0", "0.12.0.1"),
  }

  def _pythons(self, running, found=None, forced=False):
    asked = []

    def wheels_for(version):
      asked.append(version)
      return self._WHEELS[version]

    found = found or (running, self._PY312, self._PY313)
    return pythons.Pythons(found, running, wheels_for, forced=forced), asked

  def test_the_running_python_when_it_fits(self):
    found, asked = self._pythons(self._PY311)
    self.assertEqual(found.choose("0.10.2"), self._PY311)
    self.assertEqual(asked, ["3.11"])  # one index query

  def test_else_the_newest_that_fits(self):
    found, asked = self._pythons(self._PY311)
    self.assertEqual(found.choose("0.12.0.1"), self._PY313)
    self.assertEqual(asked, ["3.11", "3.13"])

  def test_no_python_fits(self):
    found, _ = self._pythons(self._PY311)
    with self.assertRaisesRegex(
      venvs.VenvError,
      r"no jaxlib 0\.4\.1 wheel for Python 3\.11, 3\.12, 3\.13 \(the "
      r"Pythons found here; --python=PATH names another\)",
    ):
      found.choose("0.4.1")

  def test_a_forced_python_without_a_wheel(self):
    found, _ = self._pythons(None, found=(self._PY311,), forced=True)
    with self.assertRaisesRegex(
      venvs.VenvError,
      r"no jaxlib 0\.12\.0\.1 wheel for Python 3\.11 "
      r"\(--python=/usr/bin/python3\.11\)",
    ):
      found.choose("0.12.0.1")

  def test_releases_are_the_union(self):
    found, _ = self._pythons(self._PY311)
    self.assertEqual(
      found.releases(), ("0.4.34", "0.10.2", "0.11.0", "0.12.0.1")
    )

  def test_a_failed_query_is_said(self):
    def wheels_for(version):
      raise venvs.VenvError("cannot list jaxlib versions: offline")

    found = pythons.Pythons((self._PY311,), self._PY311, wheels_for)
    with self.assertRaisesRegex(
      venvs.VenvError, "Python 3.11: cannot list jaxlib versions: offline"
    ):
      found.choose("0.10.2")

  def test_candidate_paths(self):
    root = self.create_tempdir()
    for name in ("python3.12", "python3.12-config", "python3", "python3.9"):
      root.create_file(f"bin/{name}")
    for version in ("3.10.13", "3.9.18"):
      root.create_file(f"pyenv/versions/{version}/bin/python3")
    bin_dir = os.path.join(root.full_path, "bin")
    got = pythons.candidate_paths(
      os.pathsep.join([bin_dir, "/no/such/dir"]),
      os.path.join(root.full_path, "pyenv"),
      "/no/home",
    )
    pyenv = os.path.join(root.full_path, "pyenv", "versions")
    self.assertEqual(
      got,
      [
        os.path.join(bin_dir, "python3.12"),
        os.path.join(bin_dir, "python3.9"),
        os.path.join(pyenv, "3.9.18", "bin", "python3"),
        os.path.join(pyenv, "3.10.13", "bin", "python3"),
      ],
    )

  def test_find_pythons_keeps_one_per_interpreter(self):
    # A shim and the interpreter it runs report the same executable; a
    # path that fails its probe is left out.
    reports = {
      "/shims/python3.12": self._PY312,
      "/opt/py312/bin/python3": self._PY312,
      "/usr/bin/python3.11": self._PY311,
    }

    def probe_one(path):
      if path not in reports:
        raise venvs.VenvError(f"{path} does not run")
      return reports[path]

    got = pythons.find_pythons(
      [
        "/shims/python3.12",
        "/bin/false",
        "/opt/py312/bin/python3",
        "/usr/bin/python3.11",
      ],
      self._PY313,
      probe_one,
    )
    self.assertEqual(got, (self._PY313, self._PY312, self._PY311))

  @pytest.mark.compiles  # starts Python interpreters to probe them
  def test_probe_this_interpreter_and_a_bogus_one(self):
    found = pythons.probe(sys.executable)
    self.assertEqual(found.version, venvs.this_python())
    with self.assertRaisesRegex(venvs.VenvError, "does not run"):
      pythons.probe("/no/such/python3")


if __name__ == "__main__":
  absltest.main()
