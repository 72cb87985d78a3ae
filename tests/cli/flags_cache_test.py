"""`--cache` / `--nocache` (issue 26's leftovers): the record cache's
boolean is named `cache`, so per-command help reads `--[no]cache` (a flag
named `nocache` read `--[no]nocache`), and every spelling the old flag
took still means what it meant. Flags parsed by the command line's own
parser (`cli._parse_flags`), restored after (absl `flagsaver`); nothing
compiles."""

from __future__ import annotations

import contextlib
import io

from absl.testing import absltest, flagsaver, parameterized
from testutil import run_hloprobe_here

from hloprobe.cli import _flags as cli_flags
from hloprobe.cli import _main as cli
from hloprobe.commands import common


def _cache_after(*words: str) -> bool:
  """--cache's value once `hloprobe cache WORDS` is parsed."""
  with flagsaver.flagsaver():
    cli._parse_flags(["hloprobe", "cache", *words])
    return cli_flags.CACHE.value


class CacheFlagTest(parameterized.TestCase):
  def test_help_reads_cache_nocache(self):
    proc = run_hloprobe_here("sweep", "--help")
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertIn("  --[no]cache: Read and write the record cache", proc.stdout)
    self.assertNotIn("nonocache", proc.stdout)
    self.assertNotIn("[no]nocache", proc.stdout)

  @parameterized.named_parameters(
    ("default", (), True),
    ("new", ("--cache",), True),
    ("old", ("--nocache",), False),
    ("old_one_dash", ("-nocache",), False),
    ("old_true", ("--nocache=true",), False),
    ("old_false", ("--nocache=false",), True),
    ("old_zero", ("--nocache=0",), True),
    ("old_negated", ("--nonocache",), True),
    ("new_false", ("--cache=false",), False),
  )
  def test_spellings(self, words, cache):
    self.assertEqual(_cache_after(*words), cache)

  @parameterized.named_parameters(
    ("old", "--nocache", False),
    ("old_true", "--nocache=true", False),
    ("old_false", "--nocache=false", True),
    ("old_negated", "--nonocache", True),
  )
  def test_spellings_in_a_flag_file(self, line, cache):
    # absl reads a flag file's lines as words (FlagValues.
    # read_flags_from_files): each meant there what it meant on the line.
    path = self.create_tempfile(content=f"--jobs=1\n{line}\n").full_path
    self.assertEqual(_cache_after(f"--flagfile={path}"), cache)

  @parameterized.named_parameters(
    ("not_a_boolean", "--nocache=yes"),
    ("negated_with_value", "--nowide=true"),
  )
  def test_bad_boolean_is_one_line(self, word):
    # absl raises ValueError (not flags.Error) for `--noBOOL=x`.
    err = io.StringIO()
    with flagsaver.flagsaver(), contextlib.redirect_stderr(err):
      with self.assertRaises(SystemExit) as raised:
        cli._parse_flags(["hloprobe", "cache", word])
    self.assertEqual(raised.exception.code, 2)
    self.assertEqual(
      err.getvalue(), f"hloprobe: error: {word} does not take an argument\n"
    )

  def test_should_fail_twin_other_flags_untouched(self):
    words = ["hloprobe", "sweep", "--cache_dir=/x", "--", "--nocache=true"]
    self.assertEqual(cli_flags.old_spellings(words), words)

  def test_nocache_means_no_cache_folder(self):
    self.assertIsNone(common.cache_dir(common.SweepWords(cache=False)))
    self.assertEqual(common.cache_dir(common.SweepWords(cache_dir="/c")), "/c")


if __name__ == "__main__":
  absltest.main()
