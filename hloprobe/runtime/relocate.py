"""Source paths in cached records, stored relative, resolved on read.

A record holds the paths of the checkout that compiled it: each dot
site's `location` and `frames` (`file:line` of the program's source), the
StableHLO text's debug locations. The record cache is shared by every
checkout and venv of a user (`--cache_dir`), and its key (`CaseKey.
config_key`) does not depend on where the source lies (hloprobe's source
is hashed by relative path; a case by its jaxpr and inputs), so a record
written from one checkout is read by another: it said
`"location": "/somewhere/else/hloprobe/compile/builtin_cases.py:104"`.

So `relative` writes every path under a known folder (`Roots`) as a token
and the rest of the path, and `resolved` puts this process's folders back
on read: the case file's folder (`{hloprobe:case}`), hloprobe's package
(`{hloprobe:package}`) and the folder above it, a source checkout with its
`.venv` (`{hloprobe:checkout}`); the longest folder first, so a case kept
inside the checkout is the case's. A path under none of them (a system
library's, another user's module) is kept as it is: no folder here
stands for it.

Records are walked generically (frozen dataclasses, tuples, lists, dicts
and their strings, each rebuilt only where a string changed), so a field
added to a record is covered without a change here.

Private in intent: use the package, `hloprobe.runtime`.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Callable

__all__ = ["Roots", "relative", "resolved"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CASE, _PACKAGE_TOKEN, _CHECKOUT = (
  "{hloprobe:case}",
  "{hloprobe:package}",
  "{hloprobe:checkout}",
)


@dataclasses.dataclass(frozen=True, slots=True)
class Roots:
  """The folders a record's paths are stored relative to.

  Attributes:
    folders: (token, absolute folder) pairs, longest folder first; a
      token may have several folders (a case folder as given and as its
      real path), the first of them is where it resolves to.
  """

  folders: tuple[tuple[str, str], ...]

  @classmethod
  def of(cls, case_dir: str | None = None, package: str = _PACKAGE) -> Roots:
    """This process's roots: the case's folder (None: none), hloprobe's
    package folder and the folder above it."""
    pairs = []
    if case_dir:
      for folder in dict.fromkeys(
        (os.path.abspath(case_dir), os.path.realpath(case_dir))
      ):
        pairs.append((_CASE, folder))
    for folder in dict.fromkeys((package, os.path.realpath(package))):
      pairs.append((_PACKAGE_TOKEN, folder))
      pairs.append((_CHECKOUT, os.path.dirname(folder)))
    pairs = [(t, f.rstrip(os.sep)) for t, f in pairs if f != os.sep]
    return cls(tuple(sorted(pairs, key=lambda p: -len(p[1]))))

  def home(self, token: str) -> str | None:
    """The folder `token` resolves to here, or None."""
    return next((f for t, f in self.folders if t == token), None)


def relative(record, roots: Roots):
  """`record` with each path under a folder of `roots` as its token, e.g.
  "{hloprobe:package}/compile/builtin_cases.py:104"."""

  def store(text: str) -> str:
    for token, folder in roots.folders:
      text = text.replace(folder + os.sep, token + "/")
    return text

  return _map(record, store)


def resolved(record, roots: Roots):
  """`record` (as `relative` stored it) with each token made this
  process's folder again; a token with no folder here (a case of no
  file) stays, so a foreign path is never made up."""
  homes = {t: roots.home(t) for t in (_CASE, _PACKAGE_TOKEN, _CHECKOUT)}

  def load(text: str) -> str:
    if "{hloprobe:" not in text:
      return text
    for token, home in homes.items():
      if home is not None:
        text = text.replace(token + "/", home + os.sep)
    return text

  return _map(record, load)


def _map(value, fn: Callable[[str], str]):
  """`value` with `fn` applied to every string in it; containers and
  records are rebuilt only where something changed (else the same
  object comes back)."""
  kind = type(value)
  if kind is str:
    new = fn(value)
    return value if new == value else new
  if kind in (tuple, list):
    items = [_map(v, fn) for v in value]
    same = all(a is b for a, b in zip(items, value))
    return value if same else kind(items)
  if kind is dict:
    pairs = [(_map(k, fn), _map(v, fn)) for k, v in value.items()]
    same = all(
      a is k and b is v for (a, b), (k, v) in zip(pairs, value.items())
    )
    return value if same else dict(pairs)
  if isinstance(value, tuple) and hasattr(value, "_fields"):  # NamedTuple
    items = [_map(v, fn) for v in value]
    same = all(a is b for a, b in zip(items, value))
    return value if same else kind(*items)
  if dataclasses.is_dataclass(value) and not isinstance(value, type):
    return _map_record(value, fn)
  return value


def _map_record(value, fn: Callable[[str], str]):
  """A dataclass record with `fn` applied to its fields' strings: a copy
  with the changed fields set (frozen records included), or `value`."""
  changed = {}
  for field in dataclasses.fields(value):
    old = getattr(value, field.name)
    new = _map(old, fn)
    if new is not old:
      changed[field.name] = new
  if not changed:
    return value
  out = copy.copy(value)
  for name, new in changed.items():
    object.__setattr__(out, name, new)
  return out
