"""`hloprobe --help` / `-h`, `hloprobe COMMAND --help` and `--version`.

absl's own `--help` lists every flag of the program, the same 150-odd
lines for every command. Here a command's help shows its own flags in
full (the fields of its args record, `cli._main._COMMANDS`, each a flag of the
same name) and the flags every command shares one line each;
`--helpfull` is still absl's whole list. The words are the flags' own
help texts (`cli._flags`), so they are written once.

`cli._main._parse_flags` asks `wanted` before absl parses anything, so `-h`
(which absl does not know) and `--version` work with any other words,
and print to stdout with exit status 0, as `git` and `pip` do.

Private in intent: use the package, `hloprobe.cli`.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re
import textwrap
from collections.abc import Sequence

from absl import flags

__all__ = ["HELP_WORDS", "VERSION_WORD", "help_text", "version_text", "wanted"]

HELP_WORDS = ("-h", "--help", "-help", "-?")
VERSION_WORD = "--version"
_WIDTH = 80
# A command entry of cli's docstring: two spaces, the command's words, two
# or more spaces, its summary; continuation lines are indented further.
_ENTRY_RE = re.compile(r"^  (\S+)(?: \S+)*?\s{2,}(\S.*)$")
# The end of a sentence: a full stop before a capital or a backquote (not
# "e.g. '1,2'").
_SENTENCE_RE = re.compile(r"(?<=\.)\s+(?=[A-Z`])")
# What absl appends to a DEFINE_multi_* flag's help.
_REPEAT_RE = re.compile(r";\s+repeat this option to specify a list of values")
# Distributions whose version `--version` names when installed.
_DISTRIBUTIONS = ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt")


def wanted(argv: Sequence[str]) -> str | None:
  """ "help" or "version" when the words ask for it, else None.

  Only words before a lone `--` count (after it, words are arguments).
  """
  for word in argv[1:]:
    if word == "--":
      return None
    if word in HELP_WORDS:
      return "help"
    if word == VERSION_WORD:
      return "version"
  return None


def command_word(argv: Sequence[str], default: str) -> str:
  """The command named in `argv` (its first word that is not a flag)."""
  words = [w for w in argv[1:] if not w.startswith("-")]
  return words[0] if words else default


def summaries(doc: str) -> dict[str, str]:
  """command -> its summary, from the "Commands:" block of `doc` (cli's
  docstring); a command with several entries (`golden check`, `golden
  update`) gets them joined."""
  block = doc.split("Commands:", 1)[-1].split("\n\n", 1)[0]
  found: dict[str, list[str]] = {}
  current = None
  for line in block.splitlines():
    m = _ENTRY_RE.match(line)
    if m and not line.startswith("   "):
      current = found.setdefault(m.group(1), [])
      words = line.split("  ", 2)[1].strip()
      current.append(f"{words}: {m.group(2).strip()}")
    elif current is not None and line.strip():
      current[-1] += " " + line.strip()
  return {name: "\n".join(lines) for name, lines in found.items()}


def _flag_name(holder: flags.Flag) -> str:
  return f"--[no]{holder.name}" if holder.boolean else f"--{holder.name}"


def _default(holder: flags.Flag) -> str:
  shown = holder.default_as_str
  return "none" if shown is None else shown.strip("'")


def _help(holder: flags.Flag) -> str:
  """The flag's help text, without the note absl adds to a multi flag's
  (its help says "repeatable" itself)."""
  return _REPEAT_RE.sub("", holder.help)


def _full(holder: flags.Flag) -> str:
  """A flag in full: name, help and default, wrapped."""
  text = f"{_flag_name(holder)}: {_help(holder)} (default: {_default(holder)})"
  return textwrap.fill(
    text,
    _WIDTH,
    initial_indent="  ",
    subsequent_indent="      ",
    break_on_hyphens=False,
  )


def _brief(holder: flags.Flag) -> str:
  """A flag briefly: name and its help's first sentence, whole (never cut
  with "..."), wrapped at 80 columns; `COMMAND --help` of a command that
  owns it, or `--helpfull`, has the rest."""
  first = _SENTENCE_RE.split(_help(holder), maxsplit=1)[0]
  return textwrap.fill(
    f"{_flag_name(holder)}: {first}",
    _WIDTH,
    initial_indent="  ",
    subsequent_indent="      ",
    break_on_hyphens=False,
  )


def help_text(
  command: str,
  summary: str,
  own: Sequence[str],
  shared: Sequence[str],
  values: flags.FlagValues,
) -> str:
  """One command's help.

  Args:
    command: e.g. "verify".
    summary: what it does (`summaries`), possibly several lines.
    own: the flags only this command (and perhaps a few others) reads.
    shared: the flags every command accepts.
    values: the flags (absl's FLAGS), for their help texts and defaults.
  """
  lines = [f"usage: hloprobe {command} [--flag=value ...]", ""]
  lines += [
    textwrap.fill(part, _WIDTH, initial_indent="  ", subsequent_indent="    ")
    for part in summary.splitlines()
  ]
  if own:
    lines += ["", f"`hloprobe {command}` flags:"]
    lines += [_full(values[name]) for name in own]
  lines += [
    "",
    "Flags every command takes, each its first sentence (`--helpfull`: "
    "every flag in full):",
  ]
  lines += [_brief(values[name]) for name in shared]
  lines += [
    "",
    "`hloprobe --help` lists the commands; `hloprobe COMMAND --help` shows "
    "one;",
    "`hloprobe --version` the versions. The README has the rest.",
  ]
  return "\n".join(lines)


def overview(commands: dict[str, str]) -> str:
  """The command list `hloprobe --help` starts with (`summaries`)."""
  lines = ["commands (`hloprobe COMMAND --help` for each one's flags):"]
  for name, summary in commands.items():
    first = summary.splitlines()[0].split(": ", 1)[-1]
    lines.append(
      textwrap.fill(
        first,
        _WIDTH,
        initial_indent=f"  {name:<13}",
        subsequent_indent=" " * 15,
        break_on_hyphens=False,
      )
    )
  return "\n".join(lines)


def version_text(hloprobe_version: str) -> str:
  """hloprobe's version, then jax's, jaxlib's, the CUDA plugin's (those
  installed) and Python's, one per line, e.g. "jaxlib 0.12.0.1"."""
  lines = [f"hloprobe {hloprobe_version}"]
  for name in _DISTRIBUTIONS:
    try:
      lines.append(f"{name} {importlib.metadata.version(name)}")
    except importlib.metadata.PackageNotFoundError:
      lines.append(f"{name} not installed")
  lines.append(f"Python {platform.python_version()}")
  return "\n".join(lines)
