"""results.jsonl: each config's results.json entry as the config finishes.

`stream_results` starts the stream and returns its `Progress`.

A sweep the user interrupts keeps what finished: `Progress.add` appends one
JSON line per config to `<output_dir>/results.jsonl` (`files.RESULTS_STREAM`,
`files.append_result_line`); results.json is written whole at the end.

Private in intent: use the package, `hloprobe.report`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil

from hloprobe.errors import InvalidArgumentError
from hloprobe.ir import InputFile, path_part
from hloprobe.report import files

__all__ = ["Progress", "start_stream", "stream_results"]


@dataclasses.dataclass
class Progress:
  """The configs a running sweep finished, streamed to --output_dir.

  Mutable by design: the sweep's `on_result` callback adds to it as configs
  finish. A failed append stops the stream (`output_dir` becomes None);
  the final write then says `cannot write`, after the results.

  Attributes:
    total: the sweep's number of configs.
    output_dir: where results.jsonl grows, or None (no stream).
    done: the finished `ConfigResult`s, in order.
  """

  total: int
  output_dir: str | None
  done: list = dataclasses.field(default_factory=list)

  def add(self, r) -> None:
    self.done.append(r)
    if self.output_dir:
      try:
        files.append_result_line(self.output_dir, r)
      except OSError:  # the final write says `cannot write`, after results
        self.output_dir = None


# What a sweep writes at the top of --output_dir (the HTML page is
# pictures' `HTML_NAME`); results.json or results.jsonl there marks an
# earlier sweep's results.
_MARKERS = ("results.json", files.RESULTS_STREAM)
_TOP_FILES = (*_MARKERS, "report.html")


def start_stream(output_dir: str | None, overwrite: bool = False) -> str | None:
  """Empties --output_dir's results.jsonl; None (no stream) if it cannot.

  A folder holding an earlier sweep's results (results.json or
  results.jsonl) is refused, so two sweeps never mix their files there;
  with `overwrite` those results are removed first (`_clear_results`).

  Raises:
    InvalidArgumentError: `output_dir` holds earlier results and not
      `overwrite`, or is something other than a folder (a file,
      /dev/null), or with `overwrite` its results.json cannot be read;
      one line, before anything runs.
  """
  if not output_dir:
    return None
  if os.path.exists(output_dir) and not os.path.isdir(output_dir):
    raise InvalidArgumentError(
      f"--output_dir={output_dir!r} is not a folder; give a folder (made "
      "if missing)"
    )
  found = [n for n in _MARKERS if os.path.lexists(os.path.join(output_dir, n))]
  if found and not overwrite:
    raise InvalidArgumentError(
      f"--output_dir={output_dir!r} already holds a sweep's results "
      f"({', '.join(found)}); pass --overwrite to replace them, or choose "
      "another folder"
    )
  try:
    if found:
      _clear_results(output_dir)
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, files.RESULTS_STREAM), "w"):
      pass
  except OSError:  # the final write says `cannot write`, after results
    return None
  return output_dir


def _old_config_dirs(output_dir: str) -> list[str]:
  """The config folders the earlier results.json names (`config_dir`'s
  layout), relative to `output_dir`; [] when there is no results.json.

  Raises:
    InvalidArgumentError: results.json is there but cannot be read or is
      not a sweep's: its config folders cannot be told from the user's
      other files, so `--overwrite` would leave them beside the new ones
      (review finding 19).
  """
  path = os.path.join(output_dir, "results.json")
  if not os.path.lexists(path):
    return []
  try:
    text = InputFile(path, "results.json", InvalidArgumentError).read_text()
    configs = json.loads(text)["configs"]
    dirs = []
    for c in configs:
      exp = c.get("experiment", "baseline")
      leaf = f"n{c['n']}-{c['precision']}" + (
        "" if exp == "baseline" else f"-{exp}"
      )
      dirs.append(
        os.path.join(
          path_part(c["target"]), path_part(c["case"]), path_part(leaf)
        )
      )
    return dirs
  except (InvalidArgumentError, ValueError, KeyError, TypeError) as e:
    raise InvalidArgumentError(
      f"--overwrite: the earlier {path} cannot be read ({e}), so the config "
      "folders it named cannot be found and removed; remove the folder's "
      "old results yourself, or choose another --output_dir"
    ) from None


def _clear_results(output_dir: str) -> None:
  """Removes an earlier sweep's files from `output_dir`: the config
  folders its results.json names (then their parents, when left empty)
  and `_TOP_FILES`; nothing else there is touched.

  Raises:
    OSError: a file could not be removed.
  """
  for rel in _old_config_dirs(output_dir):
    path = os.path.join(output_dir, rel)
    if os.path.isdir(path) and not os.path.islink(path):
      shutil.rmtree(path)
    for parent in (os.path.dirname(rel), os.path.dirname(os.path.dirname(rel))):
      with contextlib.suppress(OSError):  # not empty: kept
        os.rmdir(os.path.join(output_dir, parent))
  for name in _TOP_FILES:
    with contextlib.suppress(FileNotFoundError):
      os.remove(os.path.join(output_dir, name))


def stream_results(
  output_dir: str | None, total: int, overwrite: bool = False
) -> Progress:
  """A sweep of `total` configs' `Progress`, its results.jsonl started in
  `output_dir` (`start_stream`; no stream where None or it cannot be
  made): each `Progress.add` appends a finished config's line.

  Raises:
    InvalidArgumentError: as `start_stream`: `output_dir` holds earlier
      results and not `overwrite`, or is not a folder; before anything runs.
  """
  return Progress(total, start_stream(output_dir, overwrite))
