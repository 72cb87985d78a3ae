"""report/sweep_shown.py: what `hloprobe sweep` prints, by stream, on records
made by hand (two CPU configs with stage seconds, nothing compiled).

The expectations are the command's documented streams: beside JSON the
notes and the seconds go to stderr and stdout is the JSON document alone;
with a table every part is on stdout, the seconds last; the HTML page
replaces the table and drops the notes.
"""

from __future__ import annotations

import json

from absl.testing import absltest

from hloprobe.compile import get_target
from hloprobe.ir import Precision
from hloprobe.records import Config, ConfigResult
from hloprobe.report import sweep_text

_VERSIONS = {"jax": "x", "jaxlib": "x"}
_NOTE = "seed_mlp: a note of the case"


def _results() -> list[ConfigResult]:
  return [
    ConfigResult(
      Config("seed_mlp", get_target("cpu"), n, Precision.bfloat16),
      timings={"compile": 1.5, "run": 0.25},
    )
    for n in (1, 2)
  ]


class SweepTextTest(absltest.TestCase):
  def test_json_alone_on_stdout_notes_and_seconds_on_stderr(self):
    text = sweep_text(
      _results(), "json", _VERSIONS, timings=True, notes=[_NOTE]
    )
    doc = json.loads(text.out)
    self.assertEqual([c["n"] for c in doc["configs"]], [1, 2])
    self.assertIsNotNone(text.err)
    self.assertTrue(text.err.startswith("\n" + _NOTE + "\n\n"))
    self.assertIn("total", text.err)  # the seconds table's last column

  def test_table_holds_every_part_seconds_last(self):
    text = sweep_text(
      _results(), "table", _VERSIONS, timings=True, notes=[_NOTE]
    )
    self.assertIsNone(text.err)
    head, rest = text.out.split("\n\n" + _NOTE + "\n\n")
    self.assertIn("seed_mlp", head)
    self.assertIn("compile", rest.splitlines()[0])  # the seconds' header
    self.assertEqual(rest.splitlines()[-1].split()[-1], "3.50")  # 2 x 1.75

  def test_html_page_replaces_the_table_without_notes(self):
    text = sweep_text(
      _results(), "html", _VERSIONS, notes=[_NOTE], page="<html></html>"
    )
    self.assertEqual(text, type(text)("<html></html>", None))
    with self.assertRaises(ValueError):
      sweep_text(_results(), "html", _VERSIONS)


if __name__ == "__main__":
  absltest.main()
