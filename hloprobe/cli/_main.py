"""hloprobe's command line: `hloprobe <command> [--flags]`.

Commands:
  sweep           lower, compile, map dot sites, run or predict every
                  config (the default command)
  explain         sweep with --explain_passes and say in words why row 0
                  depends on batch size and precision, per target, and
                  what compile-only targets cannot settle (--format=json:
                  the same records for machines)
  verify          [--fix=PRECISION_OR_EXPERIMENT] --require=consistent,
                  accurate[,golden,invariant]: run baseline and fix, PASS
                  or FAIL (without --fix: the baseline as it is)
  golden check    re-run the sweep recorded in the golden folder's
                  MANIFEST.json (flags override its parts) and compare
                  with the goldens; exit 0 when all match, 1 otherwise
  golden update   re-run it and write the goldens atomically (a sweep
                  within the manifest's replaces only its own files)
  targets         list the targets
  cases           list the built-in cases and the reports they come from
  experiments     list the built-in XLA_FLAGS experiments
  versions        --jaxlib=V1,V2,...: the sweep under each jaxlib release
                  (cached venvs), one table comparing them
  bisect          --good=V --bad=V --require=consistent: the first release
                  where the requirement's verdict changes
  merge DIR...    join `sweep --shard=I/N --output_dir=DIR` runs into the
                  unsharded sweep's table and --output_dir (results.json,
                  report.html, --plot)
  cache [clear]   the cache folder, its records and venvs; `clear`
                  removes the records
  view DIR        start Google's Model Explorer (127.0.0.1 only) on a
                  --model_explorer folder: each config's StableHLO graph
                  with its dot sites coloured by error (at most 10 configs;
                  --case, --targets, --batch_sizes, --precisions pick them)

Exit status: 0 when everything succeeded (verify: passed; golden check:
matched), 1 when a config failed, a fix failed, goldens differ or a file
could not be written (`cannot write ...`, after any results), 2 for bad
input (unknown case, target, precision, format, flag, command; an empty
--case, --targets or --precisions; bad batch size; unparseable target
config), with one line `hloprobe: error: ...`; 130 / 143 when interrupted
by SIGINT / SIGTERM (see the README's list of rules).
"""

from __future__ import annotations

import _thread
import contextlib
import dataclasses
import os
import re
import signal
import sys

from absl import app, flags

from hloprobe.startup import EscapingStream, quiet_startup

# Importing jax loads the CUDA plugin, whose libraries each log "Could not
# find cuda drivers" on a machine without one; the command line drops those
# lines (startup.quiet_startup). The library leaves stderr alone.
with quiet_startup():
  import jax  # noqa: F401

from hloprobe import commands
from hloprobe.api import Interrupted
from hloprobe.cli import _flags as cli_flags
from hloprobe.cli import _help as cli_help
from hloprobe.cli import _rules as cli_rules
from hloprobe.errors import (
  HloprobeError,
  InvalidArgumentError,
  counted,
  did_you_mean,
)
from hloprobe.ir import InputFile
from hloprobe.report import OUTPUT_FORMS
from hloprobe.runtime import WorkerPool

__all__ = ["main", "run"]

# Each command is a module of `hloprobe.commands` (its face's `COMMANDS`);
# this one reads the flags once into the command's args record,
# dispatches, and handles signals.
# (The docstring above is --help's usage text.)


EXIT_OK, EXIT_FAILED, EXIT_USAGE = (
  commands.ExitStatus.OK,
  commands.ExitStatus.FAILED,
  commands.ExitStatus.USAGE,
)

# command -> (its args record, its main): `hloprobe.commands.COMMANDS`.
_COMMANDS = commands.COMMANDS
# Fields that are not flags: the flags every command accepts, and the
# positional words (`hloprobe golden check`).
_COMMON, _WORDS = "common", "words"
# The order a flag's commands are named in its usage error.
_NAMING_ORDER = (
  "sweep",
  "explain",
  "golden",
  "verify",
  "versions",
  "bisect",
  "cache",
  "view",
  "merge",
)


def _fields(record_type) -> list[str]:
  return [f.name for f in dataclasses.fields(record_type)]


def command_flags() -> dict[str, tuple[str, ...]]:
  """Each flag only some commands read -> those commands: every field of
  a command's args record that is neither the common flags
  (`commands.SweepWords`) nor its words. Given to another command, such a
  flag would be silently ignored (`sweep --fix=float32`): a usage error."""
  owners: dict[str, list[str]] = {}
  for name, (record_type, _) in _COMMANDS.items():
    for field in _fields(record_type):
      if field not in (_COMMON, _WORDS):
        owners.setdefault(field, []).append(name)
  rank = {name: i for i, name in enumerate(_NAMING_ORDER)}
  return {
    flag: tuple(sorted(names, key=lambda n: rank.get(n, len(rank))))
    for flag, names in owners.items()
  }


def _check_flags_for(command: str) -> None:
  """Every command-specific flag given is one `command` reads.

  Raises:
    InvalidArgumentError: names the flag and the commands that read it.
  """
  table = command_flags()
  for holder in flags.FLAGS.get_flags_for_module(cli_flags.__name__):
    readers = table.get(holder.name)
    if readers and holder.present and command not in readers:
      why = cli_rules.NOT_FOR.get((holder.name, command))
      raise InvalidArgumentError(
        f"--{holder.name} is for `hloprobe {' / '.join(readers)}`, not "
        f"`hloprobe {command}`{f' ({why})' if why else ''}; drop it"
      )


def _value(name: str):
  """The flag's value; a list as a tuple (the records are frozen)."""
  value = flags.FLAGS[name].value
  return tuple(value) if isinstance(value, list) else value


def _common() -> commands.SweepWords:
  """The flags every command accepts, and which of them were given."""
  names = [n for n in _fields(commands.SweepWords) if n != "given"]
  return commands.SweepWords(
    **{n: _value(n) for n in names},
    given=frozenset(n for n in names if flags.FLAGS[n].present),
  )


def _args(record_type, words: list[str]):
  """`record_type` filled from the flags (read here, once) and `words`."""
  values = {}
  for field in _fields(record_type):
    if field == _COMMON:
      values[field] = _common()
    elif field == _WORDS:
      values[field] = tuple(words)
    else:
      values[field] = _value(field)
  return record_type(**values)


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _on_signal(signum, frame) -> None:
  """Turns the first SIGINT/SIGTERM into `Interrupted`; drops the rest
  (clean-up, e.g. ending worker processes, is not interrupted again)."""
  del frame
  Interrupted.raise_for(signum)


def _on_unraisable(unraisable) -> None:
  """sys.unraisablehook: an `Interrupted` that Python dropped is sent again.

  A handler runs between any two bytecodes of the main thread, also inside
  a callback whose exceptions Python prints as "Exception ignored" and
  drops (a gc callback such as jax's `_xla_gc_callback`, a `__del__`). The
  handlers are set again and the signal is sent from a new thread (a
  low-level one: `threading.Thread.start` waits, and the handler would run
  in that wait), so the main thread raises it once out of the callback;
  other exceptions go to Python's own hook.
  """
  e = unraisable.exc_value
  if not isinstance(e, Interrupted):
    sys.__unraisablehook__(unraisable)
    return
  while True:
    try:
      for s in _SIGNALS:
        signal.signal(s, _on_signal)
      _thread.start_new_thread(os.kill, (os.getpid(), e.signum))
      return
    except Interrupted:  # it came back here: send it again
      continue


def _unknown_command(command: str) -> str:
  """The usage line of an unknown command, the nearest one first."""
  return (
    f"unknown command {command!r}; {did_you_mean(command, _COMMANDS)}"
    f"choose from {', '.join(_COMMANDS)}"
  )


def main(argv: list[str]) -> int:
  """Runs one command; returns the exit status.

  Bad input and hloprobe's errors are one line and a non-zero status, not
  raised; an interrupt is its signal's status.

  Raises:
    Exception: an error that is none of hloprobe's (a bug), as raised.
  """
  command, *rest = argv[1:] or ["sweep"]
  try:
    if command not in _COMMANDS:
      raise InvalidArgumentError(_unknown_command(command))
    record_type, command_main = _COMMANDS[command]
    _check_flags_for(command)
    if rest and _WORDS not in _fields(record_type):
      raise InvalidArgumentError(
        f"unexpected arguments {rest}; flags are written --name=value"
      )
    return command_main(_args(record_type, rest))
  except KeyboardInterrupt as e:
    return _interrupted(e)
  except Exception as e:
    if (stop := Interrupted.after(e)) is not None:  # C code swallowed it
      return _interrupted(stop)
    if isinstance(e, InvalidArgumentError):
      _error(e)
      return EXIT_USAGE
    if isinstance(e, (HloprobeError, OSError)):
      _error(e)
      return EXIT_FAILED
    raise
  finally:
    _ignore_late_signals()


def _ignore_late_signals() -> None:
  """Once the command is done (results written), an interrupt changes
  nothing: the exit status stays the command's (only where `run` set
  the handlers, not in a caller's process)."""
  for s in _SIGNALS:
    if signal.getsignal(s) is _on_signal:
      signal.signal(s, signal.SIG_IGN)


def _interrupted(e: KeyboardInterrupt) -> int:
  """Says what an interrupt kept, in one line; returns 128 + the signal."""
  signum = getattr(e, "signum", signal.SIGINT)
  done = getattr(e, "done", None)
  line = "hloprobe: interrupted"
  if done is not None:
    line += f" after {len(done)} of {counted(e.total, 'config')}"
    if cli_flags.OUTPUT_DIR.value:
      where = os.path.join(
        cli_flags.OUTPUT_DIR.value, OUTPUT_FORMS.results_stream
      )
      line += f"; results so far in {where}"
    else:
      line += " (--output_dir=DIR keeps each finished config's results)"
  print(line, file=sys.stderr)
  return 128 + signum


def _error(e: Exception) -> None:
  """The one `hloprobe: error: ...` line (library messages say [hloprobe])."""
  print(
    f"hloprobe: error: {str(e).removeprefix('[hloprobe] ')}", file=sys.stderr
  )


def _help(argv: list[str]) -> str:
  """`hloprobe [COMMAND] --help`'s text (see `cli_help`).

  Raises:
    InvalidArgumentError: an unknown command.
  """
  command = cli_help.command_word(argv, "sweep")
  if command not in _COMMANDS:
    raise InvalidArgumentError(_unknown_command(command))
  shared = [n for n in _fields(commands.SweepWords) if n != "given"]
  own = [
    n for n in _fields(_COMMANDS[command][0]) if n not in (_COMMON, _WORDS)
  ]
  summaries = cli_help.summaries(__doc__)
  text = cli_help.help_text(
    command, summaries.get(command, ""), own, shared, flags.FLAGS
  )
  if command in argv[1:]:
    return text
  return f"{cli_help.overview(summaries)}\n\n{text}"


def _parse_flags(argv: list[str]) -> list[str]:
  """absl flag parsing with one clear line and exit 2 on a bad flag;
  `-h`/`--help` and `--version` print and exit 0 first (`cli_help`)."""
  asked = cli_help.wanted(argv)
  if asked == "version":
    # The package (hloprobe/__init__.py, its `__version__`) is imported
    # before any of its modules; importing it here would climb the layers.
    print(cli_help.version_text(sys.modules["hloprobe"].__version__))
    sys.exit(EXIT_OK)
  if asked == "help":
    try:
      print(_help(argv))
    except InvalidArgumentError as e:
      _error(e)
      sys.exit(EXIT_USAGE)
    sys.exit(EXIT_OK)
  try:
    _check_flagfiles(argv[1:], depth=0)
  except InvalidArgumentError as e:
    _error(e)
    sys.exit(EXIT_USAGE)
  try:
    # A flag file's lines are words too: old spellings there as well.
    words = flags.FLAGS.read_flags_from_files(argv[1:], force_gnu=False)
    return flags.FLAGS(cli_flags.old_spellings([argv[0], *words]))
  except (flags.Error, ValueError) as e:  # absl: `--noBOOL=x` ValueError
    print(f"hloprobe: error: {_with_nearest(str(e))}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


# absl's words for a value outside an enum flag's choices (absl/flags/
# _argument_parser.py, EnumParser and EnumClassListParser: "value should be
# one of <a|b>", a list item's after "'item': "), after its "flag --NAME=V: ".
_ABSL_ENUM_RE = re.compile(
  r"^(flag --[\w.-]+=(?P<value>[^:]*): )(?:'(?P<item>[^']*)': )?"
  r"(value should be one of <(?P<choices>[^>]*)>)"
)


def _with_nearest(message: str) -> str:
  """absl's error for a value outside an enum flag's choices with the
  nearest choice first, as hloprobe's own unknown names have it
  (`errors.did_you_mean`: "--format=jsno" -> "did you mean 'json'? ");
  any other message as it is."""
  m = _ABSL_ENUM_RE.match(message)
  if m is None:
    return message
  bad = m.group("item") if m.group("item") is not None else m.group("value")
  near = did_you_mean(bad, m.group("choices").split("|"))
  return f"{m.group(1)}{near}{message[len(m.group(1)) :]}"


# A flag file is a list of flags; larger than this it is not one.
_MAX_FLAGFILE_BYTES = 1 << 20
# absl reads a flag file's own --flagfile lines in turn; deeper than this
# is a loop or a mistake.
_MAX_FLAGFILE_DEPTH = 16


def _flagfile_paths(words: list[str]) -> list[str]:
  """The files `words` name with absl's `--flagfile=F`, `-flagfile=F` or
  `--flagfile F` (absl/flags/_flagvalues.py, FlagValues.read_flags_from_files:
  the forms it reads), up to a bare `--`."""
  paths = []
  for i, word in enumerate(words):
    if word == "--":
      break
    name, eq, value = word.lstrip("-").partition("=")
    if not word.startswith("-") or name != "flagfile":
      continue
    if eq:
      paths.append(value)
    elif i + 1 < len(words):
      paths.append(words[i + 1])
  return paths


def _check_flagfiles(words: list[str], depth: int) -> None:
  """Every `--flagfile` (and each it names in turn) is a regular UTF-8 text
  file of at most `_MAX_FLAGFILE_BYTES` bytes, checked before absl reads it:
  absl would block on a FIFO, read /dev/zero until memory runs out and raise
  UnicodeDecodeError on a binary file.

  Raises:
    InvalidArgumentError: the first file that is not; one line naming it.
  """
  for path in _flagfile_paths(words):
    what = f"--flagfile={path!r}"
    if depth >= _MAX_FLAGFILE_DEPTH:
      raise InvalidArgumentError(
        f"{what}: flag files nest more than {_MAX_FLAGFILE_DEPTH} deep"
      )
    text = InputFile(
      os.path.expanduser(path), what, InvalidArgumentError, _MAX_FLAGFILE_BYTES
    ).read_text()
    inner = [line.strip() for line in text.splitlines()]
    _check_flagfiles([w for w in inner if w], depth + 1)


def run() -> None:
  """Runs the command line; entered through `hloprobe.__main__.main` (both
  `python -m hloprobe` and the console script), which blocks SIGINT and
  SIGTERM while this module imports jax."""
  # absl's --help prints the __main__ module's docstring as the usage and
  # the key flags of the main program (sys.argv[0]): make those this
  # module's, so --help lists them (closed vocabularies with their values).
  sys.modules["__main__"].__doc__ = __doc__
  for flag in flags.FLAGS.get_flags_for_module(cli_flags.__name__):
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
  # A name holding an ANSI escape or another control character is printed
  # escaped, wherever it is printed (a table, an error line).
  # A stream the shell closed (`>&-`, `2>&-`) is None in Python: what would
  # go there goes nowhere, as a write to /dev/null.
  sys.stdout, sys.stderr = (
    EscapingStream(s if s is not None else open(os.devnull, "w"))  # noqa: SIM115
    for s in (sys.stdout, sys.stderr)
  )
  # `hloprobe sweep | head`: the streams end the process quietly when their
  # reader goes away (`EscapingStream`); SIGPIPE stays ignored, so that a
  # write to a worker whose process ended raises BrokenPipeError there.
  # An interrupt ends the run through `finally` blocks: worker processes and
  # temporary folders go, finished results stay (see `api.run`).
  for s in _SIGNALS:
    signal.signal(s, _on_signal)
  sys.unraisablehook = _on_unraisable
  try:
    # `hloprobe.__main__.main` (`python -m hloprobe` and the console
    # script) blocks them while importing jax.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    app.run(main, flags_parser=_parse_flags)
  except KeyboardInterrupt as e:  # before `main` (flag parsing)
    _exit_interrupted(_interrupted(e))
  except SystemExit as e:
    if isinstance(e.code, int) and e.code - 128 in _SIGNALS:
      _exit_interrupted(e.code)
    raise


def _exit_interrupted(status: int) -> None:
  """Ends an interrupted run without the interpreter's teardown.

  By now the `finally` blocks have run (workers killed, temporary folders
  removed, finished results streamed) and the one line is printed. Tearing
  the interpreter down with jax's runtime mid-work then sometimes crashed:
  exit 139 (SIGSEGV) after the line, in about 3 of 8 SIGINTs or SIGTERMs
  4.2 s into a cpu,a100 sweep (jaxlib 0.10.2, 2026-11-30; 130/143 at 0.3,
  1.5, 3 and 5 s). So the process ends here, with the status the line
  promised.
  """
  for stream in (sys.stdout, sys.stderr):
    with contextlib.suppress(OSError, ValueError):
      stream.flush()
  # What `atexit` would have done: the fork server of the workers waited
  # for and its folder in TMPDIR removed (`runtime.forked`).
  with contextlib.suppress(Exception):
    WorkerPool.end_fork_server()
  os._exit(status)
