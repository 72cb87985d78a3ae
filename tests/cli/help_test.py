"""`--version`, `-h` and per-command help (issue 26): in this process,
through the command line's own flag parsing (`testutil.run_hloprobe_here`)."""

from __future__ import annotations

import importlib.metadata
import platform
import re

from absl.testing import absltest, parameterized
from testutil import run_hloprobe_here

# Flags only `sweep` (and `explain`) read: never in verify's help.
_SWEEP_ONLY = ("--columns", "--[no]wide", "--plot", "--model_explorer")
# Flags of other commands.
_OTHERS = ("--jaxlib", "--good", "--port", "--[no]changes_only")


def _flag_names(text: str) -> set[str]:
  """The flags a help text describes: each line's leading `--name`."""
  return set(re.findall(r"^  (--[\[\]\w]+):", text, re.M))


class VersionTest(absltest.TestCase):
  def test_version_names_hloprobe_jax_and_jaxlib(self):
    proc = run_hloprobe_here("--version")
    self.assertEqual(proc.returncode, 0, proc.stderr)
    lines = proc.stdout.splitlines()
    self.assertRegex(lines[0], r"^hloprobe \d+\.\d+")
    # The installed distributions' own metadata, not hloprobe's words.
    for name in ("jax", "jaxlib"):
      self.assertIn(f"{name} {importlib.metadata.version(name)}", lines)
    self.assertIn(f"Python {platform.python_version()}", lines)

  def test_version_with_a_command(self):
    proc = run_hloprobe_here("verify", "--version")
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertTrue(proc.stdout.startswith("hloprobe "))


class HelpTest(parameterized.TestCase):
  @parameterized.named_parameters(("long", "--help"), ("short", "-h"))
  def test_verify_help_lists_its_flags_not_sweeps(self, word):
    proc = run_hloprobe_here("verify", word)
    self.assertEqual(proc.returncode, 0, proc.stderr)
    self.assertEqual(proc.stderr, "")
    names = _flag_names(proc.stdout)
    # verify's own (commands.verify.VerifyArgs) and the shared ones.
    for flag in ("--fix", "--require", "--abs_error_bound", "--golden_dir"):
      self.assertIn(flag, names)
    for flag in ("--case", "--targets", "--precisions", "--batch_sizes"):
      self.assertIn(flag, names)
    for flag in _SWEEP_ONLY + _OTHERS:
      self.assertNotIn(flag, names)
    self.assertIn("usage: hloprobe verify", proc.stdout)
    # Far from absl's every-flag list (153 lines in issue 26).
    self.assertLess(len(proc.stdout.splitlines()), 100)

  def test_shared_flags_are_their_first_sentence_whole(self):
    proc = run_hloprobe_here("verify", "--help")
    shared = proc.stdout.split("Flags every command takes", 1)[1]
    lines = [l for l in shared.splitlines()[1:] if l.strip()]
    self.assertTrue(lines[0].startswith("  --case: "))
    for line in lines:
      self.assertLessEqual(len(line), 80)
    # Issue 39 item 10: nothing cut with "...".
    text = " ".join(l.strip() for l in lines)
    self.assertIn("`hloprobe cases`), package.module:factory", text)
    self.assertNotRegex(proc.stdout, r"\w\.\.\.$")

  def test_command_summaries_are_whole(self):
    proc = run_hloprobe_here("--help")
    overview = proc.stdout.split("usage:", 1)[0]
    self.assertNotIn("...\n", overview)
    for line in overview.splitlines():
      self.assertLessEqual(len(line), 80)

  def test_sweep_help_has_its_own_flags(self):
    proc = run_hloprobe_here("sweep", "-h")
    names = _flag_names(proc.stdout)
    self.assertContainsSubset(_SWEEP_ONLY, names)
    self.assertNotIn("--fix", names)

  def test_plain_help_lists_the_commands_then_sweep(self):
    proc = run_hloprobe_here("-h")
    self.assertEqual(proc.returncode, 0, proc.stderr)
    for command in ("sweep", "explain", "verify", "golden", "versions"):
      self.assertRegex(proc.stdout, rf"(?m)^  {command} +\S")
    self.assertIn("usage: hloprobe sweep", proc.stdout)

  def test_help_of_an_unknown_command_is_a_usage_error(self):
    proc = run_hloprobe_here("frobnicate", "--help")
    self.assertEqual(proc.returncode, 2)
    self.assertIn("hloprobe: error: unknown command 'frobnicate'", proc.stderr)

  def test_help_after_a_lone_dashdash_is_a_word(self):
    proc = run_hloprobe_here("verify", "--", "-h")
    self.assertNotIn("usage:", proc.stdout)


if __name__ == "__main__":
  absltest.main()
