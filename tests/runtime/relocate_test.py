"""Cached records are relocatable (issue 26): a record another checkout
wrote names this checkout's files, and the entry on disk holds no
absolute path of the checkout that wrote it."""

from __future__ import annotations

import dataclasses
import glob
import os

import recorded
from absl.testing import absltest

from hloprobe import records
from hloprobe.runtime import RecordCache
from hloprobe.runtime import relocate as relocate_module
from hloprobe.runtime.relocate import Roots

# Where the other checkout was: a folder this machine does not have.
_ELSEWHERE = "/somewhere/else/hloprobe"
_PACKAGE = os.path.dirname(os.path.abspath(records.__file__))
_BUILTIN = "hloprobe/compile/builtin_cases.py"


def _foreign_record() -> records.ConfigResult:
  """The recorded seed_mlp a100 n=2 compile as a checkout at /somewhere/
  else would have cached it: its debug locations absolute there (the
  fixture stores them relative to the repository root)."""
  rec = recorded.load("seed_a100_n2_bfloat16")
  there = os.path.join(os.path.dirname(_ELSEWHERE), _BUILTIN)
  rec = dataclasses.replace(
    rec, stablehlo=rec.stablehlo.replace(f'"{_BUILTIN}"', f'"{there}"')
  )
  return recorded.config_result(rec)


def _put_there(cache: RecordCache, key: str, record) -> None:
  """`cache.put` as the checkout at /somewhere/else makes it: `put` stores
  `relocate.relative(record, Roots.of(case_dir))` with the writer's own
  package folder as a root (this process's cannot be moved there)."""
  cache.put(key, relocate_module.relative(record, Roots.of(package=_ELSEWHERE)))


class RelocatedCacheTest(absltest.TestCase):
  def setUp(self):
    super().setUp()
    self.cache = RecordCache(self.create_tempdir().full_path)
    self.record = _foreign_record()

  def test_the_writer_saw_its_own_absolute_paths(self):
    # The planted difference is real: without relocation it would leak.
    site = self.record.compilation.fates[0].site
    self.assertTrue(site.location.startswith(_ELSEWHERE + "/compile/"))
    self.assertIn(_ELSEWHERE, self.record.compilation.stablehlo)

  def test_entry_on_disk_has_no_absolute_path_of_the_writer(self):
    _put_there(self.cache, "ab" * 32, self.record)
    (entry,) = glob.glob(os.path.join(self.cache.records_dir, "*", "*.record"))
    with open(entry, "rb") as f:
      data = f.read()
    self.assertNotIn(b"/somewhere/else", data)
    self.assertIn(b"{hloprobe:package}/compile/builtin_cases.py", data)

  def test_another_checkout_reads_its_own_paths(self):
    _put_there(self.cache, "cd" * 32, self.record)
    # Read from this checkout (the default roots: this package).
    got = self.cache.get("cd" * 32)
    self.assertNotIn("/somewhere/else", repr(got))
    here = os.path.join(_PACKAGE, "compile", "builtin_cases.py")
    for fate in got.compilation.fates:
      self.assertTrue(fate.site.location.startswith(here + ":"), fate.site)
      for frame in fate.site.frames:
        self.assertFalse(frame.startswith("{hloprobe:"), frame)
    self.assertEqual(
      [f.site.location.removeprefix(here) for f in got.compilation.fates],
      [
        f.site.location.removeprefix(_ELSEWHERE + "/compile/builtin_cases.py")
        for f in self.record.compilation.fates
      ],
    )
    self.assertIn(f'"{here}"', got.compilation.stablehlo)

  def test_case_file_paths_follow_the_case_folder(self):
    theirs, mine = "/home/them/cases", self.create_tempdir().full_path
    record = relocate_module.relative(
      {"location": f"{theirs}/my_case.py:12", "other": "/usr/lib/x.py:1"},
      Roots.of(theirs),
    )
    self.assertEqual(record["location"], "{hloprobe:case}/my_case.py:12")
    self.assertEqual(record["other"], "/usr/lib/x.py:1")  # under no root
    back = relocate_module.resolved(record, Roots.of(mine))
    self.assertEqual(back["location"], f"{mine}/my_case.py:12")
    # No case folder here: the token stays; no path is made up.
    kept = relocate_module.resolved(record, Roots.of(None))
    self.assertEqual(kept["location"], "{hloprobe:case}/my_case.py:12")

  def test_the_cache_stores_case_paths_under_the_case_folder_given(self):
    theirs, mine = "/home/them/cases", self.create_tempdir().full_path
    self.cache.put("ef" * 32, {"location": f"{theirs}/my_case.py:12"}, theirs)
    self.assertEqual(
      self.cache.get("ef" * 32, mine), {"location": f"{mine}/my_case.py:12"}
    )

  def test_a_record_without_paths_comes_back_the_same_object(self):
    plain = ("a", 1, {"b": (2.0, "c")})
    self.assertIs(relocate_module.relative(plain, Roots.of()), plain)


if __name__ == "__main__":
  absltest.main()
