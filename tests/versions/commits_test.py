"""versions/commits.py: the shipped jaxlib -> XLA commit table and the
range between two releases, against commits read independently.
"""

from __future__ import annotations

import re

from absl.testing import absltest, parameterized

from hloprobe.versions import (
  commits,
  venvs,
)


class CommitsTest(parameterized.TestCase):
  """The shipped table against commits read independently: XLA_COMMIT of
  jax-ml/jax's third_party/xla/{workspace,revision}.bzl at the tags, by
  `git show jax-vV:third_party/xla/....bzl` (2026-12-01)."""

  @parameterized.parameters(
    ("0.4.34", "cd6e808c59f53b40a99df1f1b860db9a3e598bff"),
    ("0.6.2", "3d5ece64321630dade7ff733ae1353fc3c83d9cc"),
    ("0.10.2", "5a9e73cbd92530cac2ac36f4736a774b2412afe2"),
    ("0.11.0", "131bf41acb4650e4391a640c3f1859c1c86ad74b"),
  )
  def test_known_release(self, jaxlib, xla):
    found = commits.built_from(jaxlib, None, commits.load_table())
    self.assertEqual(found.xla_commit, xla)
    self.assertIn("third_party/xla/", found.xla_source)

  def test_the_table_is_well_formed(self):
    table = commits.load_table()
    hex40 = re.compile(r"[0-9a-f]{40}")
    for jaxlib, entry in table.items():
      venvs.version_key(jaxlib)
      self.assertRegex(entry.jax_commit, hex40, jaxlib)
      self.assertIn(entry.jax_commit_from, ("wheel", "tag"), jaxlib)
      if entry.xla_commit is not None:
        self.assertRegex(entry.xla_commit, hex40, jaxlib)
      else:
        self.assertStartsWith(entry.source, "unknown: ")

  def test_beyond_the_table_is_unknown(self):
    table = commits.load_table()
    for jaxlib in ("0.12.0.1", "0.3.25"):  # not verified; not in it
      found = commits.built_from(jaxlib, None, table)
      self.assertIsNone(found.xla_commit)
      self.assertStartsWith(found.xla_source, "unknown: ")

  def test_another_jax_commit_is_unknown(self):
    found = commits.built_from("0.10.2", "0" * 40, commits.load_table())
    self.assertIsNone(found.xla_commit)
    self.assertIn("built from jax 000000000000", found.xla_source)

  def test_compare_link(self):
    self.assertEqual(
      commits.compare_link("aaa", "bbb"),
      "https://github.com/openxla/xla/compare/aaa...bbb",
    )

  def test_xla_range(self):
    old = commits.BuiltFrom("0.10.1", None, "9b63" + "0" * 36, "t")
    new = commits.BuiltFrom("0.10.2", None, "5a9e" + "0" * 36, "t")
    self.assertEqual(
      commits.xla_range(old, new),
      "XLA from jaxlib 0.10.1 to 0.10.2 (9b6300000000 to 5a9e00000000): "
      "https://github.com/openxla/xla/compare/"
      f"9b63{'0' * 36}...5a9e{'0' * 36}",
    )
    gone = commits.BuiltFrom("0.12.0", None, None, "unknown: why")
    self.assertEqual(
      commits.xla_range(new, gone),
      "XLA from jaxlib 0.10.2 to 0.12.0: unknown (0.12.0: why)",
    )


if __name__ == "__main__":
  absltest.main()
