"""`hloprobe view DIR`: Google's Model Explorer (127.0.0.1 only) on a
--model_explorer folder, the configs picked by the sweep flags given.
Exit status 0 once the server stops."""

from __future__ import annotations

import dataclasses
import sys

from hloprobe.commands import common
from hloprobe.errors import InvalidArgumentError

__all__ = ["ViewArgs", "main"]


@dataclasses.dataclass(frozen=True, slots=True)
class ViewArgs:
  """`hloprobe view DIR`'s words and flags.

  Attributes:
    common: the flags every command accepts (--case, --targets,
      --batch_sizes, --precisions pick the configs).
    words: the words after `view`: [DIR].
    port: --port (8080: the first free from 8080).
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
  """Serves the picked configs until the server stops; returns 0.

  Raises:
    InvalidArgumentError: not one folder, no index there, nothing picked.
    HloprobeError: Model Explorer is missing.
  """
  from hloprobe.pictures import check_extras, pick, serve

  words = list(args.words)
  if len(words) != 1:
    raise InvalidArgumentError(
      f"`view` takes one folder, got {words}; e.g. `hloprobe view out/me`"
    )
  check_extras(plot=False, explorer=True)
  values, given = common.sweep_values(args.common)
  wanted = {_INDEX_KEY[key]: values[key] for key in given}
  picked, matched = pick(words[0], wanted)
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
  serve(words[0], picked, args.port, args.browser)
  return common.EXIT_OK
