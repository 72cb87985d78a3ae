"""A record cache entry's file: JSON and raw numpy bytes, never a pickle.

Issue 27 (item 1): entries used to be pickles, so whoever could write
the cache folder (another user of a group-writable `--cache_dir`, or of
a folder a symlink points into) ran code as hloprobe's user when it
read them. An entry is now data that cannot run code when read:

  line 1    `hloprobe-record 2 sha256=<hex>`: the format and the sha256
            of everything after the line (the integrity check)
  the rest  a `.npz` zip (`numpy.savez`): `record.json`, the record as
            JSON in uint8, and `a0`, `a1`, ...: each array's bytes as
            uint8, read back with `numpy.load(allow_pickle=False)`

The JSON is a tree of tagged nodes: `{"t": "dataclass", "type":
"hloprobe.records.ConfigResult", "fields": {...}}`, `{"t": "enum",
"type": ..., "name": "HIGH"}`, `{"t": "tuple" | "frozenset" | "set",
"items": [...]}`, `{"t": "dict", "items": [[key, value], ...]}`,
`{"t": "array", "index": 3, "dtype": "<f4" | "bfloat16", "shape":
[2, 8], "scalar": false}` (a numpy scalar: `"scalar": true`), `{"t":
"bytes", "index": 4}`, `{"t": "complex", "re": 1.0, "im": -2.0}`; lists, strings, numbers (NaN and infinities
as Python's json writes them), booleans and null are themselves.

Reading runs no code of the file's choosing: a type is looked up only
among the dataclasses and enums of hloprobe's modules already imported
(`sys.modules`; nothing is imported on a file's word), and a dataclass
is rebuilt without calling its `__init__` (`object.__new__`, then each
field set; the file must name exactly the class's fields, and each value
must be of its field's annotated type: `n` a string or `execution` a
dict is refused, whatever the hash says). A dtype is
one of numpy's plain kinds (bool, integers, floats, complex) or an
ml_dtypes float (bfloat16, float8_*); object and structured dtypes are
refused. Anything else -- a wrong hash, an unknown type or field, a
malformed file -- raises `RecordFileError`, which the cache turns into
a miss with a warning.

The hash is not a signature: it catches a torn or corrupted file, not a
forger, who could write a valid one. A forged entry can lie about
results but can run nothing.

Private in intent: use the package, `hloprobe.runtime`.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import io
import json
import sys
import types
import typing
import zipfile
from typing import BinaryIO

import ml_dtypes
import numpy as np

__all__ = ["RecordFileError", "dump_record", "load_record"]

_MAGIC = b"hloprobe-record 2 sha256="
_JSON = "record.json"
# numpy dtype kinds an array may have: bool, signed, unsigned, float,
# complex (never object "O", void/structured "V", strings "U"/"S").
_PLAIN_KINDS = frozenset("biufc")
# The package whose dataclasses and enums a record may hold.
_PACKAGE = "hloprobe"


class RecordFileError(ValueError):
  """Raised when an entry's bytes are not a whole, valid record file, or a
  record holds a value this format cannot write."""


def dump_record(record, f: BinaryIO) -> None:
  """Writes `record` (dataclasses and enums of hloprobe, containers,
  scalars, numpy arrays) to the binary file `f` in the format above.

  Raises:
    RecordFileError: `record` holds a value of another type (nothing
      useful was written; the caller discards the file).
  """
  arrays: list[np.ndarray] = []
  tree = _encode(record, arrays)
  buffer = io.BytesIO()
  named = {f"a{i}": a for i, a in enumerate(arrays)}
  text = json.dumps(tree, separators=(",", ":")).encode()
  named[_JSON] = np.frombuffer(text, np.uint8)
  np.savez(buffer, allow_pickle=False, **named)
  payload = buffer.getvalue()
  f.write(_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n")
  f.write(payload)


def load_record(data: bytes):
  """The record in `data` (a whole file's bytes).

  Raises:
    RecordFileError: a foreign or old format (a pickle), a hash that does
      not match, or content this format does not allow (see the module
      docstring).
  """
  head, sep, payload = data.partition(b"\n")
  if not sep or not head.startswith(_MAGIC):
    raise RecordFileError("not an hloprobe record file (format 2)")
  if hashlib.sha256(payload).hexdigest().encode() != head[len(_MAGIC) :]:
    raise RecordFileError("its sha256 does not match its content")
  try:
    _check_stored(payload)
    with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
      named = {name: npz[name] for name in npz.files}
    text = named.pop(_JSON)
    if text.dtype != np.uint8:
      raise RecordFileError(f"{_JSON} is not bytes")
    return _Decoder(named).decode(json.loads(text.tobytes()))
  except RecordFileError:
    raise
  except (
    OSError,
    ValueError,  # json's errors too
    KeyError,
    TypeError,  # e.g. a list as a dict key
    RecursionError,
    zipfile.BadZipFile,
  ) as e:
    raise RecordFileError(f"malformed: {type(e).__name__}: {e}") from None


def _check_stored(payload: bytes) -> None:
  """Refuses a zip whose members are compressed or larger than the file
  (`numpy.savez` stores them: a forged deflated member could be a
  decompression bomb)."""
  with zipfile.ZipFile(io.BytesIO(payload)) as z:
    members = z.infolist()
  if any(m.compress_type != zipfile.ZIP_STORED for m in members) or sum(
    m.file_size for m in members
  ) > len(payload):
    raise RecordFileError("its arrays are compressed or larger than it")


def _type_name(cls: type) -> str:
  return f"{cls.__module__}:{cls.__qualname__}"


def _encode(value, arrays: list[np.ndarray]):
  """The JSON tree of `value`; its arrays appended to `arrays`."""
  if isinstance(value, enum.Enum):  # first: a str or int Enum is one
    return {"t": "enum", "type": _type_name(type(value)), "name": value.name}
  if value is None or type(value) in (bool, int, float, str):
    return value
  if isinstance(value, (np.ndarray, np.generic)):
    return _encode_array(value, arrays)
  if type(value) is bytes:
    arrays.append(np.frombuffer(value, np.uint8))
    return {"t": "bytes", "index": len(arrays) - 1}
  if type(value) is complex:
    return {"t": "complex", "re": value.real, "im": value.imag}
  if dataclasses.is_dataclass(value) and not isinstance(value, type):
    fields = {
      f.name: _encode(getattr(value, f.name), arrays)
      for f in dataclasses.fields(value)
    }
    return {"t": "dataclass", "type": _type_name(type(value)), "fields": fields}
  if type(value) is list:
    return [_encode(v, arrays) for v in value]
  if type(value) in (tuple, frozenset, set):
    kind = type(value).__name__
    items = value if kind == "tuple" else sorted(value, key=repr)
    return {"t": kind, "items": [_encode(v, arrays) for v in items]}
  if type(value) is dict:
    items = [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]
    return {"t": "dict", "items": items}
  raise RecordFileError(f"cannot store a {type(value).__qualname__}")


def _encode_array(value, arrays: list[np.ndarray]) -> dict:
  a = np.asarray(value)
  _check_dtype(a.dtype)
  arrays.append(np.frombuffer(np.ascontiguousarray(a).tobytes(), np.uint8))
  ml = a.dtype.type.__module__.startswith("ml_dtypes")
  return {
    "t": "array",
    "index": len(arrays) - 1,
    "dtype": a.dtype.name if ml else a.dtype.str,
    "shape": list(a.shape),
    "scalar": isinstance(value, np.generic),
  }


def _check_dtype(dtype: np.dtype) -> None:
  ml = dtype.type.__module__.startswith("ml_dtypes")
  if not ml and dtype.kind not in _PLAIN_KINDS:
    raise RecordFileError(f"arrays of dtype {dtype} are not stored")


def _dtype(text) -> np.dtype:
  """The dtype `text` names: an ml_dtypes float or a plain numpy dtype."""
  if not isinstance(text, str):
    raise RecordFileError(f"bad dtype {text!r}")
  ml = getattr(ml_dtypes, text, None)
  try:
    dtype = np.dtype(ml if isinstance(ml, type) else text)
  except TypeError:
    raise RecordFileError(f"bad dtype {text!r}") from None
  _check_dtype(dtype)
  return dtype


class _Decoder:
  """Rebuilds a record from its JSON tree and its arrays."""

  def __init__(self, arrays: dict[str, np.ndarray]):
    self._arrays = arrays

  def decode(self, node):
    if node is None or type(node) in (bool, int, float, str):
      return node
    if type(node) is list:
      return [self.decode(v) for v in node]
    if type(node) is not dict:
      raise RecordFileError(f"bad node {type(node).__name__}")
    kind = node.get("t")
    if kind == "tuple":
      return tuple(self._items(node))
    if kind in ("frozenset", "set"):
      return (frozenset if kind == "frozenset" else set)(self._items(node))
    if kind == "dict":
      return {self.decode(k): self.decode(v) for k, v in self._pairs(node)}
    if kind == "array":
      return self._array(node)
    if kind == "bytes":
      return self._raw(node).tobytes()
    if kind == "complex":
      re, im = node.get("re"), node.get("im")
      if type(re) is not float or type(im) is not float:
        raise RecordFileError("bad complex node")
      return complex(re, im)
    if kind == "enum":
      cls = _lookup(node.get("type"), enum.Enum)
      try:
        return cls[node.get("name")]
      except KeyError:
        raise RecordFileError(f"no {node.get('name')!r} in {cls}") from None
    if kind == "dataclass":
      return self._dataclass(node)
    raise RecordFileError(f"bad node kind {kind!r}")

  def _items(self, node) -> list:
    items = node.get("items")
    if type(items) is not list:
      raise RecordFileError("bad items")
    return [self.decode(v) for v in items]

  def _pairs(self, node) -> list:
    items = node.get("items")
    if type(items) is not list or any(
      type(p) is not list or len(p) != 2 for p in items
    ):
      raise RecordFileError("bad dict items")
    return items

  def _raw(self, node) -> np.ndarray:
    raw = self._arrays.get(f"a{node.get('index')}")
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1:
      raise RecordFileError("bad array node")
    return raw

  def _array(self, node) -> np.ndarray | np.generic:
    raw, shape = self._raw(node), node.get("shape")
    if type(shape) is not list:
      raise RecordFileError("bad array node")
    try:
      a = raw.view(_dtype(node.get("dtype"))).reshape(shape)
    except (ValueError, TypeError) as e:
      raise RecordFileError(f"bad array: {e}") from None
    return a[()] if node.get("scalar") else a

  def _dataclass(self, node):
    cls = _lookup(node.get("type"), None)
    fields = node.get("fields")
    names = {f.name for f in dataclasses.fields(cls)}
    if type(fields) is not dict or set(fields) != names:
      raise RecordFileError(f"fields of {cls.__qualname__} do not match")
    hints = _field_types(cls)
    obj = object.__new__(cls)
    for name, value in fields.items():
      decoded = self.decode(value)
      if not _fits(decoded, hints.get(name, typing.Any)):
        raise RecordFileError(
          f"{cls.__qualname__}.{name} is a {type(decoded).__name__}, not "
          f"{_hint_words(hints[name])}"
        )
      object.__setattr__(obj, name, decoded)
    return obj


def _field_types(cls: type) -> dict:
  """`cls`'s fields' annotated types (resolved); {} where they cannot be
  resolved (then no field is checked)."""
  try:
    return typing.get_type_hints(cls)
  except Exception:  # noqa: BLE001 (a name the annotations cannot find)
    return {}


def _hint_words(hint) -> str:
  return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _fits(value, hint) -> bool:
  """Whether `value` (decoded) is of the annotated type `hint`: classes,
  `X | None`, `tuple[X, ...]`, `tuple[X, Y]`, `list[X]`, `dict[K, V]`,
  `(frozen)set[X]`, `Literal`; numpy scalars stand for Python numbers. A
  hint this does not know (a TypeVar, `Callable`) accepts anything."""
  if hint is typing.Any or hint is object:
    return True
  if hint is None or hint is type(None):
    return value is None
  origin = typing.get_origin(hint)
  args = typing.get_args(hint)
  if origin in (typing.Union, types.UnionType):
    return any(_fits(value, a) for a in args)
  if origin is typing.Literal:
    return value in args
  if origin is None:
    return _is_instance(value, hint)
  if not isinstance(origin, type):
    return True
  if not _is_instance(value, origin):
    return False
  if origin is tuple and args:
    if len(args) == 2 and args[1] is Ellipsis:
      return all(_fits(v, args[0]) for v in value)
    return len(args) == len(value) and all(map(_fits, value, args))
  if origin in (list, set, frozenset) and args:
    return all(_fits(v, args[0]) for v in value)
  if origin is dict and len(args) == 2:
    return all(
      _fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items()
    )
  return True


def _is_instance(value, cls) -> bool:
  """isinstance, with numpy's scalars as Python's numbers (an `int` field
  takes no bool, a `float` field takes an int)."""
  if not isinstance(cls, type):
    return True  # a TypeVar, a NewType, a string left unresolved
  if cls is float:
    return isinstance(value, (int, float, np.integer, np.floating)) and (
      type(value) is not bool
    )
  if cls is int:
    return isinstance(value, (int, np.integer)) and type(value) is not bool
  if cls is bool:
    return isinstance(value, (bool, np.bool_))
  if cls is complex:
    return isinstance(value, (complex, float, int, np.number))
  if issubclass(cls, enum.Enum) and issubclass(cls, str) and type(value) is str:
    return value in {m.value for m in cls}  # a str enum's plain value
  return isinstance(value, cls)


def _lookup(name, base: type | None) -> type:
  """The class `module:qualname` of an imported hloprobe module: a
  dataclass (`base` None) or a subclass of `base`."""
  if not isinstance(name, str) or ":" not in name:
    raise RecordFileError(f"bad type name {name!r}")
  module_name, _, qualname = name.partition(":")
  if module_name != _PACKAGE and not module_name.startswith(_PACKAGE + "."):
    raise RecordFileError(f"type {name!r} is not hloprobe's")
  obj = sys.modules.get(module_name)
  for part in qualname.split("."):
    obj = None if part.startswith("__") else getattr(obj, part, None)
  ok = isinstance(obj, type) and obj.__module__ == module_name
  if ok and base is None:
    ok = dataclasses.is_dataclass(obj) and not issubclass(obj, enum.Enum)
  elif ok:
    ok = issubclass(obj, base)
  if not ok:
    raise RecordFileError(f"unknown type {name!r}")
  return obj
