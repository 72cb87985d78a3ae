"""commands/cache.py: `hloprobe cache` and `cache clear` in this process
(no XLA) on an empty folder made here: the folder named, no records, a
clear that removes none, and any other word refused in one line."""

from __future__ import annotations

import testutil
from absl.testing import absltest


class CacheCommandTest(absltest.TestCase):
  def test_lists_and_clears_an_empty_cache(self):
    folder = self.create_tempdir().full_path
    shown = testutil.run_hloprobe_here("cache", f"--cache_dir={folder}")
    self.assertEqual(shown.returncode, 0, shown.stderr)
    lines = shown.stdout.splitlines()
    self.assertEqual(lines[0], f"cache folder: {folder}")
    self.assertTrue(lines[1].startswith("records: 0 (0.0 MiB of "), lines[1])
    cleared = testutil.run_hloprobe_here(
      "cache", "clear", f"--cache_dir={folder}"
    )
    self.assertEqual(cleared.returncode, 0, cleared.stderr)
    self.assertIn("removed 0 records (0.0 MiB)", cleared.stdout)

  def test_another_word_is_one_line(self):
    proc = testutil.run_hloprobe_here("cache", "empty")
    self.assertEqual(proc.returncode, 2)
    self.assertIn("`cache` takes no word or `clear`", proc.stderr)
    self.assertLen(proc.stderr.strip().splitlines(), 1)


if __name__ == "__main__":
  absltest.main()
