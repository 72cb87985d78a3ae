"""A `--shard` run's files, read back and joined for `hloprobe merge`.

A shard's --output_dir holds what any sweep's does (results.json, its
per-config files, report.html) and two things more: results.json's
"shard" entry (`report.results_json`: the plan's fingerprint and words, the
shard's index and count, each config's index in the whole plan) and
`RECORDS_NAME`, the shard's `ConfigResult` records whole, in that order,
which the merge reports on as if one sweep had made them.

`RECORDS_NAME` is in the record cache's own format
(`runtime.record_file`: JSON and raw numpy bytes with a sha256, never a
pickle): a forged file can lie about results but runs no code.

These files are the `sweep --shard` and `merge` commands' own: no library
stage reads or writes them (`engine` cuts a plan into shards and checks
that shards are a plan's: `engine.check_shards`). `recorded_results` reads
a merge's folder for `explain`, `golden check` and `verify --results`.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from collections.abc import Sequence

from hloprobe.errors import InvalidArgumentError
from hloprobe.ir import InputFile
from hloprobe.records import ConfigResult
from hloprobe.report import atomic_write
from hloprobe.runtime import RecordFileError, dump_record, load_record

__all__ = [
  "RECORDS_NAME",
  "ShardPart",
  "join_shards",
  "read_records",
  "read_shard",
  "read_shards",
  "recorded_results",
  "write_records",
]

# A shard's records beside its results.json (see above); a merge's too.
RECORDS_NAME = "records.hloprobe"
_RESULTS = "results.json"
# The first characters of a fingerprint that a message shows.
_SHORT = 12
# The largest shard results.json and records file read, in bytes: a
# sweep's records run to a few MiB per hundred configs.
_MAX_RESULTS_BYTES = 256 << 20
_MAX_RECORDS_BYTES = 1 << 30
# The most shards a sweep is split into (`engine.shard.parse_shard`'s bound).
_MAX_SHARDS = 4096


@dataclasses.dataclass(frozen=True)
class ShardPart:
  """One shard's folder, read.

  Attributes:
    folder: the folder as given.
    index: the shard's index (0-based).
    count: how many shards its sweep was split into.
    fingerprint: its plan's fingerprint (sha256 hex).
    plan: the plan's words (`SweepPlan.words()`).
    configs: each record's index in the whole plan.
    host: results.json's "host" (the CPU the numbers were computed on).
    records: the records, in `configs`' order.
  """

  folder: str
  index: int
  count: int
  fingerprint: str
  plan: dict
  configs: tuple[int, ...]
  host: dict | None
  records: tuple[ConfigResult, ...]

  @property
  def label(self) -> str:
    """E.g. "shard 1/3 (out/s1)"."""
    return f"shard {self.index}/{self.count} ({self.folder})"


def write_records(output_dir: str, results: Sequence[ConfigResult]) -> str:
  """Writes `results` whole to `<output_dir>/RECORDS_NAME`; returns its path.

  Raises:
    OSError: it cannot be written.
  """
  path = os.path.join(output_dir, RECORDS_NAME)
  data = io.BytesIO()
  dump_record(tuple(results), data)
  atomic_write(path, data.getvalue())
  return path


def _not_a_shard(folder: str, why: str) -> InvalidArgumentError:
  return InvalidArgumentError(
    f"{folder} is not a shard's --output_dir ({why}); make one with "
    "`hloprobe sweep --shard=I/N --output_dir=DIR`"
  )


def read_records(folder: str) -> tuple[ConfigResult, ...]:
  """The records a shard or a merge wrote into `folder` (`RECORDS_NAME`).

  Raises:
    InvalidArgumentError: none there, or not records (naming the folder).
  """
  path = os.path.join(folder, RECORDS_NAME)
  written = (
    "it is written by `hloprobe sweep --shard` and `hloprobe merge`, and "
    "read by the hloprobe that wrote it (one another version wrote: shard "
    "and merge again)"
  )
  try:  # a FIFO, a device or a link to /dev/zero: refused unread
    data = InputFile(
      path, path, InvalidArgumentError, _MAX_RECORDS_BYTES, "record files"
    ).read_bytes()
  except InvalidArgumentError as e:
    raise InvalidArgumentError(f"{e}; {written}") from None
  try:
    records = load_record(data)
  except RecordFileError as e:
    raise InvalidArgumentError(f"cannot read {path}: {e}; {written}") from None
  if not isinstance(records, tuple) or not all(
    isinstance(r, ConfigResult) for r in records
  ):
    raise InvalidArgumentError(f"{path} holds no hloprobe records")
  return records


def read_shard(folder: str) -> ShardPart:
  """Reads a `--shard` run's --output_dir.

  Raises:
    InvalidArgumentError: no results.json with a "shard" entry, no
      records, or records that do not match it (one line, naming the
      folder).
  """
  path = os.path.join(folder, _RESULTS)
  try:
    data = InputFile(
      path, path, InvalidArgumentError, _MAX_RESULTS_BYTES, "results files"
    ).read_bytes()
  except InvalidArgumentError as e:
    raise _not_a_shard(folder, str(e)) from None
  try:
    doc = json.loads(data)
    entry = doc["shard"]
    index, count = _int(entry, "index"), _int(entry, "count")
    configs = entry["configs"]
    fingerprint, plan = entry["fingerprint"], entry["plan"]
  except (ValueError, KeyError, TypeError, RecursionError) as e:
    raise _not_a_shard(
      folder, f"no {_RESULTS} with a shard entry: {type(e).__name__}: {e}"
    ) from None
  why = _bad_entry(index, count, configs, fingerprint, plan, doc.get("host"))
  if why:
    raise _not_a_shard(folder, f"its {_RESULTS} shard entry has {why}")
  configs = tuple(configs)
  records = read_records(folder)
  if len(records) != len(configs):
    raise _not_a_shard(folder, f"{RECORDS_NAME} does not match {_RESULTS}")
  return ShardPart(
    folder, index, count, fingerprint, plan, configs, doc.get("host"), records
  )


def _int(entry: dict, key: str) -> int:
  """entry[key], an int (never a bool, a float or a string)."""
  value = entry[key]
  if type(value) is not int:
    raise TypeError(f"{key} is a {type(value).__name__}, not an int")
  return value


def _bad_entry(index, count, configs, fingerprint, plan, host) -> str:
  """What is wrong with a shard entry's values, in words; "" for nothing."""
  if not 1 <= count <= _MAX_SHARDS:
    return f"a count of {count} (1 to {_MAX_SHARDS})"
  if not 0 <= index < count:
    return f"index {index} outside 0..{count - 1}"
  if type(configs) is not list or not all(
    type(i) is int and i >= 0 for i in configs
  ):
    return "configs that are not a list of indices"
  if len(set(configs)) != len(configs) or configs != sorted(configs):
    return "config indices repeated or out of order"
  if not isinstance(fingerprint, str) or len(fingerprint) != 64:
    return "no sha256 fingerprint"
  if not isinstance(plan, dict):
    return "a plan that is not a JSON object"
  if host is not None and not (
    isinstance(host, dict) and all(isinstance(k, str) for k in host)
  ):
    return "a host that is not a JSON object"
  return ""


def join_shards(parts: Sequence[ShardPart]) -> list[ConfigResult]:
  """The shards' records in plan order, once each shard is known to be
  one of the same plan, each shard there once and none missing.

  Raises:
    InvalidArgumentError: no shards; shards of different plans (or split
      into different counts); a shard given twice; missing shards, named
      (I/N); two shards computed on different CPUs (results.json's one
      "host" could not say which numbers are whose).
  """
  if not parts:
    raise InvalidArgumentError(
      "`merge` takes the shards' folders, e.g. `hloprobe merge out/s0 "
      "out/s1 --output_dir=out/all`"
    )
  first = parts[0]
  seen: dict[int, ShardPart] = {}
  for p in parts:
    if p.fingerprint != first.fingerprint or p.count != first.count:
      raise InvalidArgumentError(
        f"shards of different plans: {first.label} is of plan "
        f"{first.fingerprint[:_SHORT]}, {p.label} of plan "
        f"{p.fingerprint[:_SHORT]}; merge the shards of one sweep"
      )
    if p.index in seen:
      raise InvalidArgumentError(
        f"shard {p.index}/{p.count} given twice: {seen[p.index].folder} "
        f"and {p.folder}; give each shard once"
      )
    if p.host != first.host:
      raise InvalidArgumentError(
        f"{first.label} and {p.label} ran on different CPUs "
        f"({_cpu(first.host)}; {_cpu(p.host)}), and CPU numbers depend on "
        "the CPU: run the shards on one kind of machine"
      )
    seen[p.index] = p
  missing = [i for i in range(first.count) if i not in seen]
  if missing:
    names = ", ".join(f"{i}/{first.count}" for i in missing)
    raise InvalidArgumentError(
      f"missing shard{'s' if len(missing) > 1 else ''} {names} of plan "
      f"{first.fingerprint[:_SHORT]}; run `hloprobe sweep --shard=I/N` "
      "for each and give every folder"
    )
  placed = {}
  for p in parts:
    placed.update(zip(p.configs, p.records))
  return [placed[i] for i in sorted(placed)]


def read_shards(
  folders: Sequence[str],
) -> tuple[tuple[ShardPart, ...], list[ConfigResult]]:
  """Reads `hloprobe merge`'s shard folders (`read_shard`) and joins them
  (`join_shards`); returns (the parts as given, their records in plan
  order).

  Raises:
    InvalidArgumentError: a folder that is not a shard's; as
      `join_shards`; shards whose recorded plans differ under one
      fingerprint.
  """
  parts = tuple(read_shard(folder) for folder in folders)
  records = join_shards(parts)
  first = parts[0]
  for p in parts[1:]:
    if p.plan != first.plan:
      raise InvalidArgumentError(
        f"{p.label} records another plan than {first.label} under the same "
        "fingerprint; merge the shards of one sweep"
      )
  return parts, records


def recorded_results(folder: str, plan) -> list[ConfigResult]:
  """`plan`'s configs' records (`SweepPlan.configs()`, in its order) from a
  `hloprobe merge` (or unsharded shard) --output_dir: what `explain
  --results`, `golden check --results` and `verify --results` judge
  instead of sweeping. The folder may hold more configs than the plan's;
  each record's config is the plan's own.

  Raises:
    InvalidArgumentError: no records there; a shard's folder (merge the
      shards first); a config of the plan missing, named.
  """
  if os.path.isfile(os.path.join(folder, _RESULTS)):
    try:
      part = read_shard(folder)
    except InvalidArgumentError:
      part = None
    if part is not None and part.count > 1:
      raise InvalidArgumentError(
        f"--results={folder} is {part.label}, one part of a sweep: give "
        "the folder `hloprobe merge` wrote"
      )
  key = lambda c: (c.experiment, c.case, c.target.name, c.n, str(c.precision))
  found = {key(r.config): r for r in read_records(folder)}
  picked = []
  for c in plan.configs():
    r = found.get(key(c.config))
    if r is None:
      raise InvalidArgumentError(
        f"--results={folder} has no config {c.config.label()}; sweep (and "
        "merge) what this command judges, or drop --results"
      )
    picked.append(dataclasses.replace(r, config=c.config))
  return picked


def _cpu(host: dict | None) -> str:
  """A results.json "host" in words."""
  if not host:
    return "unknown CPU"
  return f"{host.get('model')}, ISA {host.get('isa')}"
