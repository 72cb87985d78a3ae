"""`hloprobe cache`: the cache folder, its records and venvs;
`hloprobe cache clear`: removes the records (venvs stay). Exit status 0."""

from __future__ import annotations

import dataclasses
import os

from hloprobe.commands import common
from hloprobe.errors import InvalidArgumentError

__all__ = ["CacheArgs", "main"]


@dataclasses.dataclass(frozen=True, slots=True)
class CacheArgs:
  """`hloprobe cache [clear]`'s words and flags.

  Attributes:
    common: the flags every command accepts (--cache_dir).
    words: the words after `cache`: [] or ["clear"].
    cache_max_mb: --cache_max_mb, the records' bound in MiB.
  """

  common: common.SweepWords
  words: tuple[str, ...] = ()
  cache_max_mb: int = 2048


def _mib(size_bytes: int) -> str:
  return f"{size_bytes / 2**20:.1f} MiB"


def main(args: CacheArgs) -> int:
  """Prints the cache folder, its records and venvs (clearing the records
  first with `clear`); returns 0.

  Raises:
    InvalidArgumentError: another word.
  """
  from hloprobe.runtime import RecordCache
  from hloprobe.versions import cached_venvs

  words = list(args.words)
  cache_dir = args.common.cache_dir or RecordCache.default_dir()
  if words not in ([], ["clear"]):
    raise InvalidArgumentError(
      f"`cache` takes no word or `clear`, got {words}; e.g. "
      "`hloprobe cache clear`"
    )
  store = RecordCache(cache_dir)
  print(f"cache folder: {cache_dir}")
  if words == ["clear"]:
    gone = store.clear()
    print(f"removed {gone.entries} records ({_mib(gone.size_bytes)})")
  held = store.usage()
  print(
    f"records: {held.entries} ({_mib(held.size_bytes)} of "
    f"{args.cache_max_mb} MiB, --cache_max_mb; the least recently used go "
    "first)"
  )
  venv_dir = os.path.join(cache_dir, "venvs")
  found = cached_venvs(venv_dir)
  names = ", ".join(name for name, _ in found) or "none"
  total = sum(size for _, size in found)
  print(f"venvs: {len(found)} ({_mib(total)}): {names}")
  if found:
    print(f"  (kept by `clear`; rm -r {venv_dir}/<name> removes one)")
  return common.ExitStatus.OK
