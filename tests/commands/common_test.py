"""The command layer's args records: the per-command flag table derives
from their fields, and `cli` fills them from the flags, read once."""

from __future__ import annotations

import contextlib
import dataclasses
import io

from absl import flags
from absl.testing import absltest, flagsaver

from hloprobe.cli import _flags as cli_flags
from hloprobe.cli import _main as cli
from hloprobe.commands import common, verify

# The table cli.py kept by hand before issue 22 (flag -> the commands that
# read it, in the order its usage error names them).
_LEGACY = {
  "fix": ("verify",),
  "require": ("verify", "bisect"),
  "abs_error_bound": ("verify",),
  "rel_error_bound": ("verify",),
  "golden_dir": ("golden", "verify"),
  "strict": ("golden",),
  "port": ("view",),
  "browser": ("view",),
  "jaxlib": ("versions",),
  "changes_only": ("versions",),
  "python": ("versions", "bisect"),
  "good": ("bisect",),
  "bad": ("bisect",),
  "timings": ("sweep", "merge"),  # merge: issue 29
  "sites": ("sweep", "merge"),
  "wide": ("sweep", "merge"),
  "columns": ("sweep", "merge"),
  "plot": ("sweep", "explain", "merge"),
  "model_explorer": ("sweep", "explain", "merge"),
  "overwrite": ("sweep", "explain", "merge"),
  "plot_shared_y": ("sweep", "explain", "merge"),  # issue 26
  "cache_max_mb": ("sweep", "explain", "verify", "cache"),
  "experiment": ("sweep", "explain", "versions", "bisect"),  # issue 23
  "experiments_file": ("sweep", "explain", "versions", "bisect"),
  "try_fixes": ("explain",),  # issue 26
  "all_fixes": ("explain",),  # issue 37: every fix, not up to one passing
  "invariance": ("explain",),  # issue 38
  "only": ("explain",),  # issue 38 item 6: the bitwise answer alone
  "verbose": ("explain",),  # issue 39: the detail behind --verbose
  "shard": ("sweep",),  # issue 29
  "results": ("explain", "golden", "verify"),
  "executor": ("sweep", "explain", "verify"),  # issue 29
  "ray_address": ("sweep", "explain", "verify"),
}


@contextlib.contextmanager
def _parsed(*argv: str):
  """flags.FLAGS parsed from `argv` for the block (flagsaver restores)."""
  with flagsaver.flagsaver():
    flags.FLAGS.unparse_flags()
    flags.FLAGS(["hloprobe", *argv])
    yield


class FlagTableTest(absltest.TestCase):
  def test_derived_table_is_the_old_one(self):
    self.assertEqual(cli.command_flags(), _LEGACY)

  def test_every_field_is_a_flag(self):
    defined = {
      f.name for f in flags.FLAGS.get_flags_for_module(cli_flags.__name__)
    }
    fields = {"given"}
    for record_type, _ in cli._COMMANDS.values():
      fields |= {f.name for f in dataclasses.fields(record_type)}
    fields |= {f.name for f in dataclasses.fields(common.SweepWords)}
    self.assertEqual(fields - defined, {"common", "words", "given"})

  def test_a_field_added_to_a_record_is_accepted_there_only(self):
    # Should-fail twin of the table: a flag no record reads is no
    # command's, and one record's field is that command's alone.
    self.assertNotIn("case", cli.command_flags())
    self.assertEqual(cli.command_flags()["strict"], ("golden",))


class ArgsTest(absltest.TestCase):
  def test_verify_args_from_flags(self):
    with _parsed("--fix=float32", "--require=accurate", "--targets=a100"):
      args = cli._args(verify.VerifyArgs, [])
    self.assertEqual(args.fix, "float32")
    self.assertEqual(args.require, ("accurate",))
    self.assertEqual(args.common.targets, ("a100",))
    self.assertEqual(args.common.given, frozenset({"targets"}))
    with self.assertRaises(dataclasses.FrozenInstanceError):
      args.fix = "bfloat16"  # type: ignore[misc]

  def test_misplaced_flag_is_a_usage_error(self):
    with _parsed("--fix=float32"):
      status = cli.main(["hloprobe", "cases"])
    self.assertEqual(status, cli.EXIT_USAGE)


class DefaultSizesTest(absltest.TestCase):
  """--batch_sizes left out: the default's sizes up to the fewest rows of
  the built-in batch cases named (`common.default_sizes_fitted`, from
  `_FEW_ROWS`: jax_22557's einsum has P = 4, jax_24909's
  descriptor 8 frames; builtin_cases_test checks them against the
  inputs), no case's inputs made (no jax started: none is marked
  `compiles`)."""

  def _fitted(self, *cases, given=frozenset()):
    err = io.StringIO()
    words = common.SweepWords(case=cases, given=frozenset(given))
    with contextlib.redirect_stderr(err):
      out = common.default_sizes_fitted(words)
    return out, err.getvalue()

  def test_a_case_of_four_rows_sweeps_one_to_four_and_says_so(self):
    out, err = self._fitted("jax_22557")
    self.assertEqual(out, "1,2,3,4")
    self.assertIn("the 4 rows of case 'jax_22557'", err)
    self.assertIn("--batch_sizes", err)

  def test_the_fewest_rows_of_the_cases_named(self):
    self.assertEqual(
      self._fitted("seed_mlp", "jax_24909")[0], "1,2,3,4,5,6,7,8"
    )

  def test_given_sizes_and_large_cases_are_kept(self):
    self.assertEqual(self._fitted("seed_mlp"), ("1-9", ""))
    self.assertEqual(
      self._fitted("jax_22557", given={"batch_sizes"}), ("1-9", "")
    )
    # explain --results: the recorded words, not the default.
    words = common.SweepWords(case=("jax_22557",), batch_sizes="1,2")
    self.assertEqual(common.default_sizes_fitted(words), "1,2")
    # A sized case (its size is K, not rows) and a user's case: as given.
    self.assertEqual(self._fitted("jax_19444")[0], "1-9")
    self.assertEqual(self._fitted("pkg.mod:factory")[0], "1-9")


if __name__ == "__main__":
  absltest.main()
