"""The commits a jaxlib release was built from: JAX's, and XLA's from a table.

The JAX commit comes from the release itself, at run time: its
`jaxlib/version.py` `_git_hash` (`compat.jaxlib_git_hash`, read in the
worker; the wheels of 0.6.0 to 0.8.0 record none). The XLA commit comes from
`xla_commits.json`, shipped with hloprobe: for each release it knows, the
`XLA_COMMIT` of JAX's `third_party/xla/revision.bzl` (`workspace.bzl`
before 0.7.0) at the commit the wheel was built from, with where it was
read. A release beyond the table, or one whose wheel names another JAX
commit than the table's, has an unknown XLA commit, never a guess.

Private in intent: use the package, `hloprobe.versions`.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import json
from collections.abc import Mapping

__all__ = [
  "BuiltFrom",
  "TableEntry",
  "built_from",
  "compare_link",
  "load_table",
  "xla_range",
]

_TABLE = "xla_commits.json"
_COMPARE_URL = "https://github.com/openxla/xla/compare/{old}...{new}"


@dataclasses.dataclass(frozen=True, slots=True)
class TableEntry:
  """One release of `xla_commits.json`.

  Attributes:
    jax_commit: the JAX commit the wheel was built from (40 hex digits).
    jax_commit_from: "wheel" (its `_git_hash`) or "tag" (the wheel records
      none; the release tag's commit).
    xla_commit: XLA_COMMIT at `jax_commit`, or None where it is not known.
    source: where `xla_commit` was read, or why it is unknown.
  """

  jax_commit: str | None
  jax_commit_from: str
  xla_commit: str | None
  source: str


@dataclasses.dataclass(frozen=True, slots=True)
class BuiltFrom:
  """What one release's jaxlib was built from.

  Attributes:
    jaxlib: the release, e.g. "0.10.2".
    jax_commit: its `_git_hash` as the release reported it; None when it
      records none or did not run.
    xla_commit: the XLA commit (40 hex digits), or None: unknown.
    xla_source: where `xla_commit` comes from, or why it is unknown.
  """

  jaxlib: str
  jax_commit: str | None
  xla_commit: str | None
  xla_source: str


def load_table(text: str | None = None) -> dict[str, TableEntry]:
  """The table, release -> entry.

  Args:
    text: a document in the format of `xla_commits.json`; None reads the
      one shipped with hloprobe.

  Raises:
    ValueError: not that document (its "schema" is not
      "hloprobe.xla_commits").
  """
  if text is None:
    text = (
      importlib.resources.files("hloprobe.versions")
      .joinpath(_TABLE)
      .read_text(encoding="utf-8")
    )
  doc = json.loads(text)
  if doc.get("schema") != "hloprobe.xla_commits":
    raise ValueError(
      f"not an hloprobe.xla_commits document: schema {doc.get('schema')!r}"
    )
  return {
    jaxlib: TableEntry(
      e["jax_commit"], e["jax_commit_from"], e["xla_commit"], e["source"]
    )
    for jaxlib, e in doc["releases"].items()
  }


def built_from(
  jaxlib: str, jax_commit: str | None, table: Mapping[str, TableEntry]
) -> BuiltFrom:
  """The commits of one release: its own JAX commit, the table's XLA one.

  Args:
    jaxlib: the release, e.g. "0.10.2".
    jax_commit: the `_git_hash` the release reported, or None.
    table: `load_table()`.
  """
  entry = table.get(jaxlib)
  if entry is None:
    why = f"unknown: jaxlib {jaxlib} is not in hloprobe's {_TABLE}"
    return BuiltFrom(jaxlib, jax_commit, None, why)
  if entry.xla_commit is None:
    return BuiltFrom(jaxlib, jax_commit, None, entry.source)
  if jax_commit is not None and jax_commit != entry.jax_commit:
    why = (
      f"unknown: this jaxlib {jaxlib} was built from jax {jax_commit[:12]}, "
      f"the table's XLA commit is that of jax {entry.jax_commit[:12]}"
    )
    return BuiltFrom(jaxlib, jax_commit, None, why)
  return BuiltFrom(jaxlib, jax_commit, entry.xla_commit, entry.source)


def compare_link(old: str, new: str) -> str:
  """GitHub's page of the openxla/xla commits from `old` to `new`."""
  return _COMPARE_URL.format(old=old, new=new)


def xla_range(old: BuiltFrom, new: BuiltFrom) -> str:
  """The XLA commits between two releases in one line, e.g.
  "XLA from jaxlib 0.10.1 (9b635916ecc6) to 0.10.2 (5a9e73cbd925):
  https://github.com/openxla/xla/compare/9b63...5a9e..."; "unknown" with
  the reason when either end is not known."""
  head = f"XLA from jaxlib {old.jaxlib} to {new.jaxlib}"
  missing = [b for b in (old, new) if b.xla_commit is None]
  if missing:
    why = "; ".join(
      f"{b.jaxlib}: {b.xla_source.removeprefix('unknown: ')}" for b in missing
    )
    return f"{head}: unknown ({why})"
  if old.xla_commit == new.xla_commit:
    return f"{head}: the same commit {old.xla_commit}"
  return (
    f"{head} ({old.xla_commit[:12]} to {new.xla_commit[:12]}): "
    f"{compare_link(old.xla_commit, new.xla_commit)}"
  )
