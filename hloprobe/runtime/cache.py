"""hloprobe's persistent cache of per-config records (`--cache_dir`).

A warm rerun of a sweep reads each config's finished record (parsed
sites, fates, effective algorithms, observed and predicted numerics)
instead of compiling, parsing and emulating again. A record is stored
under a key that hashes everything it depends on (`CaseKey.config_key`): the
jax/jaxlib versions, hloprobe's own source, the case (its name, batch
cut, the jaxpr of its function and its constants, the bytes of its
inputs), the target (its whole definition, config text included), the
precision, batch size, largest batch size swept (the predictor's
reference and noise floor are computed there), --explain_passes, the
version of the records' layout (`records.RECORD_VERSION`: an entry
written in another layout is never read as this one), the
environment's XLA_/JAX_/CUDA variables and PATH (XLA_FLAGS; which ptxas
a GPU compile finds), and the host CPU and the ISA XLA compiles for
(CPU runs and every emulation happen here).

JAX's own persistent compilation cache is not used: its key drops the
xla_dump_* options (jax/_src/cache_key.py,
`_hash_serialized_compile_options`, jax 0.10.2), so a hit would return an
executable without the PTX and pass dumps hloprobe reads its fates from,
and whether it is used is decided once per process
(`compilation_cache.is_cache_used`), so it cannot be kept to the
emulator's compiles.

Source paths in an entry are stored relative to the case's folder and
hloprobe's package and checkout, and resolved on read (`relocate`), so
a record written from one checkout names the reader's files.

The cache is not `diskcache` (which would do the writing, the eviction
and the LRU order kept here by hand): diskcache pickles every value that
is not bytes, str or a number, so its entries would run code when read;
this cache's cannot (below). The folder itself comes from `platformdirs`.

Entries are data, never pickles (issue 27: whoever can write the folder
must not run code as its reader): JSON and raw numpy bytes with a sha256
of their content (`record_file`: its docstring says what a file may hold
and how it is read with nothing run of its choosing). They are written
whole or not at all (a temporary file in the same folder, then
`os.replace`); one that cannot be read -- a torn or forged file, a hash
that does not match, a type or field this hloprobe does not have -- is a
miss with a warning, and is rewritten. The pickles of earlier releases
(`*.pkl`) are never read: only evicted.

The folder is bounded: `RecordCache.evict` removes the least recently used
entries (a hit sets an entry's mtime to now) until the rest fit in a size
limit (`--cache_max_mb`, default `RecordCache.DEFAULT_MAX_MB`), and the `records/xx/`
folders left empty; the command line calls it after each command that
sweeps. Several hloprobe processes may share the folder: an entry that
vanishes while it is read, refreshed or evicted is a miss, never an error,
a reader sees a whole entry or none, and a writer whose folder another
process's eviction removed makes it again.

Private in intent: use the package, `hloprobe.runtime`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable

import jax
import jaxlib
import numpy as np
import platformdirs

from hloprobe.compile import Case, Target
from hloprobe.errors import HloprobeError
from hloprobe.ir import InputFile, write_whole
from hloprobe.runtime import host
from hloprobe.runtime.record_file import (
  RecordFileError,
  dump_record,
  load_record,
)
from hloprobe.runtime.relocate import Roots, relative, resolved

__all__ = [
  "Warn",
  "CacheUsage",
  "RecordCache",
  "CaseKey",
  "source_hash",
]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Bumped when the layout of entries changes.
_FORMAT = 2
_ENV_PREFIXES = ("XLA_", "JAX_", "CUDA", "TF_", "NVIDIA_")
_ENTRY = ".record"
# Entries of format 1 (pickles): never read, counted and evicted.
_ENTRIES = (_ENTRY, ".pkl")
_TMP = ".tmp-"
# A temporary file this old was left by a process that died mid-write.
_STALE_TMP_S = 3600.0
# Linux's PATH_MAX (limits.h), the NUL included: a longer path is refused
# with ENAMETOOLONG.
_PATH_MAX = 4096
# How often `put` makes an entry's folder again when another process's
# eviction removed it before the entry was written.
_WRITE_TRIES = 3


# What a cache does with a line it cannot act on (an unreadable entry, a
# write that failed): the caller's callable, e.g. the command line's.
Warn = Callable[[str], None]


# The largest cache entry read, in bytes (a record is a few MiB at most).
_MAX_ENTRY_BYTES = 1 << 30


def log_warning(line: str) -> None:
  """The default `Warn`: a `logging.warning` of the line."""
  logging.warning("%s", line)


@functools.lru_cache(maxsize=1)
def source_hash() -> str:
  """sha256 of every .py and .txtpb file of the hloprobe package (hex)."""
  h = hashlib.sha256()
  for dirpath, dirnames, files in os.walk(_PACKAGE):
    dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
    for name in sorted(files):
      if name.endswith((".py", ".txtpb")):
        path = os.path.join(dirpath, name)
        h.update(os.path.relpath(path, _PACKAGE).encode() + b"\0")
        with open(path, "rb") as f:
          h.update(f.read() + b"\0")
  return h.hexdigest()


def _hash_leaves(h, tree) -> None:
  for leaf in jax.tree_util.tree_leaves(tree):
    a = np.asarray(leaf)
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(np.ascontiguousarray(a).tobytes())


def _environment(xla_flags: str | None) -> dict[str, str]:
  env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}
  env["PATH"] = os.environ.get("PATH", "")
  if xla_flags is not None:
    env["XLA_FLAGS"] = xla_flags
  return dict(sorted(env.items()))


@dataclasses.dataclass(frozen=True, slots=True)
class CaseKey:
  """The case part of its configs' cache keys: what a case computes, hashed.

  Attributes:
    digest: sha256 (hex) of the case's jaxpr, constants and inputs (`of`).
  """

  digest: str

  @classmethod
  def of(cls, case: Case, full_inputs: tuple) -> CaseKey:
    """sha256 of what a case computes: its jaxpr, constants and inputs.

    The jaxpr (traced at batch size 1, or the case's `fixed_size`: a
    module file's shapes are fixed) stands for the function's source:
    a changed body, a changed closed-over constant or a different case with
    the same name changes it. The inputs are hashed by dtype, shape and bytes.
    """
    h = hashlib.sha256()
    h.update(
      repr(
        (case.name, case.batch_arg, case.batch_axis, case.output_axis)
      ).encode()
    )
    args = case.inputs_for(full_inputs, case.fixed_size or 1)
    closed = jax.make_jaxpr(case.fn)(*args)
    h.update(str(closed.jaxpr).encode())
    _hash_leaves(h, closed.consts)
    _hash_leaves(h, full_inputs)
    return cls(h.hexdigest())

  def config_key(
    self,
    target: Target,
    precision: str,
    n: int,
    largest: int,
    explain_passes: bool,
    xla_flags: str | None = None,
    *,
    record_version: int,
    all_rows: bool = False,
    numerics: bool = True,
  ) -> str:
    """The cache key (sha256 hex) of one config's record; see the module doc.

    Args:
      target: the target, whole (config text, compiler options, ...).
      precision, n, explain_passes: the config.
      largest: the largest batch size the sweep cuts (reference and noise
        floor are computed there and sliced).
      xla_flags: the XLA_FLAGS the config compiles under (a worker's, see
        `WorkerPool.worker_flags`); None: this process's environment's.
      record_version: the layout of the records stored
        (`records.RECORD_VERSION`; the sweep passes it, as this stage is
        below the records' module).
      all_rows: every row judged (--all_rows): another record where the
        default judges some rows (`numerics.rows.judged_rows`).
      numerics: the record has its accuracy numerics (False: the bits only,
        `engine.SweepSpec.numerics`; another key, so such a record never
        serves a sweep that wants them; the default's keys are unchanged).
    """
    if xla_flags is None:
      xla_flags = os.environ.get("XLA_FLAGS")
    cpu = host.HostCpu.of(xla_flags)
    parts = {
      "format": _FORMAT,
      "jax": jax.__version__,
      "jaxlib": jaxlib.__version__,
      "hloprobe": source_hash(),
      "case": self.digest,
      "target": repr(dataclasses.astuple(target)),
      "precision": precision,
      "n": n,
      "largest": largest,
      "explain_passes": explain_passes,
      "record_version": record_version,
      "all_rows": all_rows,
      "env": _environment(xla_flags),
      "host": cpu.as_json(),
    }
    if not numerics:
      parts["numerics"] = False
    text = json.dumps(parts, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclasses.dataclass(frozen=True, slots=True)
class CacheUsage:
  """What records/ of a cache folder holds.

  Attributes:
    directory: the records/ folder.
    entries: how many records.
    size_bytes: their total size, in bytes (files only, not folders).
  """

  directory: str
  entries: int
  size_bytes: int


@dataclasses.dataclass(frozen=True, slots=True)
class _Entry:
  path: str
  size_bytes: int
  mtime_ns: int


class RecordCache:
  """Records in a folder, by key, least recently used evicted.

  Args:
    directory: the cache folder (created on first write); records go to
      `<directory>/records/<key[:2]>/<key>.record` (`record_file`).
    warn: given one line for each entry it cannot read, write or remove
      (each costs speed, never results); default `log_warning`.
  """

  # The default bound of records/, in MiB: an entry is 30-40 KiB
  # (seed_mlp, one config), so about 60000 configs.
  DEFAULT_MAX_MB = 2048

  def __init__(self, directory: str, warn: Warn | None = None):
    self.directory = directory
    self._warn = warn or log_warning

  @staticmethod
  def default_dir() -> str:
    """The user's cache folder for hloprobe (`platformdirs.user_cache_dir`):
    on Linux $XDG_CACHE_HOME/hloprobe, else ~/.cache/hloprobe; on macOS
    ~/Library/Caches/hloprobe. The record cache's folder by default, and
    the versions stage's venvs/ is under it."""
    return platformdirs.user_cache_dir("hloprobe", appauthor=False)

  @property
  def records_dir(self) -> str:
    return os.path.join(self.directory, "records")

  def usable(self) -> RecordCache | None:
    """This cache, or None (after one warning) when its folder cannot hold
    records at all: a file, a path the system refuses as too long, a
    folder that cannot be listed. The command then runs uncached, as it
    does (with a warning per entry) when the folder is read-only."""
    longest = os.path.abspath(self._path("0" * 64))  # temp files: shorter
    problem = None
    if len(os.fsencode(longest)) >= _PATH_MAX:
      problem = f"its record paths would be over the {_PATH_MAX}-byte limit"
    else:
      try:
        os.stat(self.records_dir)
      except FileNotFoundError:  # made on the first write
        pass
      except OSError as e:  # not a folder, a name too long, no permission
        problem = e.strerror
    if problem is None:
      return self
    self._warn(
      f"hloprobe: cannot use --cache_dir={self.directory!r} ({problem}); "
      "running uncached"
    )
    return None

  def _path(self, key: str) -> str:
    return os.path.join(self.records_dir, key[:2], key + _ENTRY)

  def get(self, key: str, case_dir: str | None = None):
    """The record stored under `key`, or None (missing or unreadable).

    A hit sets the entry's mtime to now, so eviction keeps it longest.
    Its paths are this process's (`relocate.resolved` with
    `Roots.of(case_dir)`: the folder of the file defining the case's
    program, hloprobe's package and checkout), whichever checkout wrote
    it. Reading runs no code the file chooses
    (`record_file.load_record`).
    """
    path = self._path(key)
    if not os.path.lexists(path):
      return None
    try:  # a FIFO, a device or a link to /dev/zero: refused unread
      data = InputFile(
        path, "the entry", HloprobeError, _MAX_ENTRY_BYTES, "cache entries"
      ).read_bytes()
      record = load_record(data)
    except (HloprobeError, RecordFileError) as e:  # a corrupt or forged entry
      if not os.path.lexists(path):  # evicted by another process meanwhile
        return None
      self._warn(f"hloprobe: ignoring unreadable cache entry {path}: {e}")
      return None
    try:
      os.utime(path)
    except OSError:  # evicted meanwhile, or a read-only folder
      pass
    return resolved(record, Roots.of(case_dir))

  def has(self, key: str) -> bool:
    """Whether an entry is stored under `key` (not read: `get` checks it)."""
    return os.path.isfile(self._path(key))

  def put(self, key: str, record, case_dir: str | None = None) -> None:
    """Stores `record` whole or not at all; a failed write only warns.

    Paths under `Roots.of(case_dir)` (the case program's folder, None:
    none; hloprobe's package and checkout) are stored relative to them
    (`relocate.relative`), so another checkout reads its own.

    Another process's `evict` may remove the entry's folder between its
    `makedirs` and the temporary file's creation (the folder is empty
    then): the folder is made again, up to `_WRITE_TRIES` times.
    """
    path = self._path(key)
    stored = relative(record, Roots.of(case_dir))
    write = lambda f: dump_record(stored, f)
    for tries_left in reversed(range(_WRITE_TRIES)):
      try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_whole(path, write, prefix=_TMP)
        return
      except FileNotFoundError as e:  # the folder was evicted meanwhile
        if not tries_left:
          self._warn(f"hloprobe: cannot write cache entry {path}: {e}")
      except (OSError, RecordFileError) as e:  # costs speed only: a
        # read-only or full disk, a value the format cannot hold
        self._warn(f"hloprobe: cannot write cache entry {path}: {e}")
        return

  def _shards(self) -> list[str]:
    """The `records/xx/` folders (none if records/ does not exist)."""
    try:
      return [d.path for d in os.scandir(self.records_dir) if d.is_dir()]
    except FileNotFoundError:
      return []

  def _scan(self) -> tuple[list[_Entry], list[str]]:
    """The entries, and temporary files left by writers that died."""
    entries, stale = [], []
    old_ns = time.time_ns() - int(_STALE_TMP_S * 1e9)
    for shard in self._shards():
      try:
        files = list(os.scandir(shard))
      except FileNotFoundError:
        continue
      for f in files:
        try:
          st = f.stat(follow_symlinks=False)
        except FileNotFoundError:  # removed by another process
          continue
        if f.name.endswith(_ENTRIES):
          entries.append(_Entry(f.path, st.st_size, st.st_mtime_ns))
        elif f.name.startswith(_TMP) and st.st_mtime_ns < old_ns:
          stale.append(f.path)
    return entries, stale

  def holds_at_least(self, count: int) -> bool:
    """Whether records/ holds `count` or more entries; cheap: it lists
    folders until it has counted `count`, and stats no file."""
    found = 0
    for shard in self._shards():
      if found >= count:
        break
      with contextlib.suppress(FileNotFoundError):  # evicted meanwhile
        with os.scandir(shard) as files:
          found += sum(f.name.endswith(_ENTRIES) for f in files)
    return found >= count

  def usage(self) -> CacheUsage:
    """How many records the folder holds and their size."""
    entries, _ = self._scan()
    return CacheUsage(
      self.records_dir, len(entries), sum(e.size_bytes for e in entries)
    )

  def evict(self, max_bytes: int) -> CacheUsage:
    """Removes least recently used entries until the rest fit `max_bytes`.

    Also removes temporary files a dead writer left (older than an hour),
    then every `records/xx/` folder that is empty. An entry another
    process removed first is skipped; one that cannot be removed
    (permissions) only warns. A folder is removed with `os.rmdir`, which
    fails, silently here, on a folder that is not empty (another process
    wrote into it meanwhile); that process's `put` makes a folder removed
    under it again.

    Args:
      max_bytes: the bound, in bytes (>= 0).

    Returns:
      What was removed (entries and bytes).
    """
    entries, stale = self._scan()
    for path in stale:
      _remove(path, self._warn)
    total = sum(e.size_bytes for e in entries)
    removed = []
    for e in sorted(entries, key=lambda e: (e.mtime_ns, e.path)):
      if total <= max_bytes:
        break
      total -= e.size_bytes
      if _remove(e.path, self._warn):
        removed.append(e)
    for shard in self._shards():
      with contextlib.suppress(OSError):  # not empty, or gone already
        os.rmdir(shard)
    return CacheUsage(
      self.records_dir, len(removed), sum(e.size_bytes for e in removed)
    )

  def clear(self) -> CacheUsage:
    """Removes every entry (`evict(0)`); returns what was removed."""
    return self.evict(0)


def _remove(path: str, warn: Warn) -> bool:
  """Unlinks `path`; False if it was gone already or cannot be removed
  (then `warn` is told)."""
  try:
    os.unlink(path)
  except FileNotFoundError:
    return False
  except OSError as e:
    warn(f"hloprobe: cannot remove cache entry {path}: {e}")
    return False
  return True
