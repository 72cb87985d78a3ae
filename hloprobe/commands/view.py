"""`hloprobe view DIR`: Google's Model Explorer (127.0.0.1 only) on a
--model_explorer folder, the configs picked by the sweep flags given.

It prints the URL to open on stdout (one line: the port, a random access
token, the configs), serves those configs' files and nothing else
(`pictures.open_server`), and stops on SIGINT/SIGTERM with exit status 0.
"""

from __future__ import annotations

import dataclasses
import sys
import webbrowser

from hloprobe.commands import common
from hloprobe.errors import InvalidArgumentError, counted

__all__ = ["ViewArgs", "main"]


@dataclasses.dataclass(frozen=True, slots=True)
class ViewArgs:
  """`hloprobe view DIR`'s words and flags.

  Attributes:
    common: the flags every command accepts (--case, --targets,
      --batch_sizes, --precisions pick the configs).
    words: the words after `view`: [DIR].
    port: --port (8080: the first free of 8080-8099; 0: any free port).
    browser: --browser: open a browser tab.
  """

  common: common.SweepWords
  words: tuple[str, ...] = ()
  port: int = 8080
  browser: bool = True


# sweep_values' keys -> the keys of the Model Explorer index.
_INDEX_KEY = {
  "cases": "case",
  "targets": "target",
  "batch_sizes": "n",
  "precisions": "precision",
}


def main(args: ViewArgs) -> int:
  """Serves the picked configs until interrupted; returns 0.

  Raises:
    InvalidArgumentError: not one folder, no index there, nothing picked,
      a port outside 0-65535.
    HloprobeError: Model Explorer is missing; the port is in use.
  """
  from hloprobe.pictures import pick_configs

  words = list(args.words)
  if len(words) != 1:
    raise InvalidArgumentError(
      f"`view` takes one folder, got {words}; e.g. `hloprobe view out/me`"
    )
  values, given = common.sweep_values(args.common)
  wanted = {_INDEX_KEY[key]: values[key] for key in given}
  found = pick_configs(words[0], wanted)
  picked, matched = found.entries, found.matched
  if matched > len(picked):
    print(
      f"hloprobe: showing the worst {len(picked)} of "
      f"{matched} configs (Model Explorer's limit); pick others with "
      "--targets, --batch_sizes, --precisions, --case",
      file=sys.stderr,
    )
  first = picked[0]
  print(
    f"hloprobe: opening on {first['target']} {first['case']} n={first['n']} "
    f"{first['precision']}, the worst finding, its layers expanded",
    file=sys.stderr,
  )
  server, url = found.open(args.port)
  try:
    print(url, flush=True)
    print(
      f"hloprobe: Model Explorer on 127.0.0.1 port {server.port}, serving "
      f"{counted(len(picked), 'config')} to the URL above (it holds the access "
      "token); Ctrl+C stops it",
      file=sys.stderr,
      flush=True,
    )
    if args.browser:
      webbrowser.open_new_tab(url)
    server.serve_forever()
  except common.Interrupted:
    print("hloprobe: Model Explorer stopped", file=sys.stderr)
  finally:
    server.close()
  return common.ExitStatus.OK
