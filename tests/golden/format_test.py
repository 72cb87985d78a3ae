"""Damaged golden files are one GoldenError naming the file, never a
foreign exception (issue 13.7)."""

from __future__ import annotations

import os

import testutil
from absl.testing import absltest, parameterized

from hloprobe.errors import GoldenError
from hloprobe.golden import format as fmt

_REL = "cpu/seed_mlp/n1-float32.hlo"


def _golden_hlo() -> str:
  with open(os.path.join(testutil.ROOT, "golden", _REL)) as f:
    return f.read()


class DamagedGoldenTest(parameterized.TestCase):
  @parameterized.named_parameters(
    ("row_key", 'FileNames\nx "a.py"\n', "bad FileNames row key 'x'"),
    ("row_json", 'FileNames\n1 "a\\q"\n', "bad JSON"),
  )
  def test_malformed_table_row_of_an_hlo(self, table, message):
    text = _golden_hlo() + "\n" + table
    with self.assertRaisesRegex(GoldenError, f"{_REL}: .*{message}"):
      fmt.parse(_REL, _REL, text)

  def test_deeply_nested_json(self):
    deep = '{"golden": ' + "[" * 100_000
    with self.assertRaisesRegex(GoldenError, "nested too deeply"):
      fmt.parse_manifest("MANIFEST.json", deep)
    rel = _REL.replace(".hlo", ".dots.json")
    with self.assertRaisesRegex(GoldenError, f"{rel}: JSON nested too deeply"):
      fmt.parse(rel, rel, deep)


if __name__ == "__main__":
  absltest.main()
