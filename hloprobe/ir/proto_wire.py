"""Protobuf's wire format, walked by hand, and HLO protos in text format.

`wire_problem` says why bytes are not a whole message (a truncated file),
looking only at the top-level fields: the varint tags and lengths of
https://protobuf.dev/programming-guides/encoding/.

`proto_text_to_binary` reads an HloModuleProto, HloProto or HloSnapshot in
protobuf text format. Text format needs the whole schema, which hloprobe
does not vendor: XLA's own FileDescriptorProtos are read from the jaxlib
installed (the generated C++ code of every .proto embeds its serialized
descriptor, `descriptor_table_protodef_xla_2fservice_2fhlo_2eproto` and
the like; `private_api.jaxlib_embedded` finds them), so the schema is
exactly the one that jaxlib's XLA reads. `google/protobuf/*` dependencies
come from the protobuf package.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

from collections.abc import Callable

from google.protobuf import (
  any_pb2,
  descriptor_pb2,
  descriptor_pool,
  duration_pb2,
  message_factory,
  text_format,
  timestamp_pb2,
)
from google.protobuf.message import DecodeError

__all__ = ["proto_text_to_binary", "wire_problem"]

# FileDescriptorProto's field numbers (google/protobuf/descriptor.proto:
# name = 1 ... edition = 14) and their wire types: varints (10, 11 and
# 12's are LEN or varint) or length-delimited.
_FILE_FIELDS = range(1, 15)
_WELL_KNOWN = {
  "google/protobuf/any.proto": any_pb2,
  "google/protobuf/duration.proto": duration_pb2,
  "google/protobuf/timestamp.proto": timestamp_pb2,
}
# The top-level message a text file holds, by its first field's name (a
# text with none of these names is an HloModuleProto).
_TEXT_ROOTS = (
  ("xla.HloSnapshot", ("hlo", "arguments", "result", "execution_platform")),
  ("xla.HloProto", ("hlo_module", "buffer_assignment")),
  ("xla.HloModuleProto", ()),
)


def wire_problem(data: bytes) -> str | None:
  """What is wrong with `data` as a protobuf message on the wire, looking
  at its top-level fields only: a field that runs past the end (a
  truncated file), a bad tag; None where every field ends in bounds."""
  return _walk(data, range(1, 1 << 29))[1]


def _walk(data: bytes, numbers: range) -> tuple[int, str | None]:
  """Walks top-level fields while their numbers are in `numbers`: (where
  the last whole field ends, what stopped the walk or None at the end)."""
  pos, end = 0, len(data)
  while pos < end:
    start = pos
    key, pos = _varint(data, pos)
    if key is None:
      return (
        start,
        f"truncated: a field's tag at byte {start} runs past the end",
      )
    number, wire = key >> 3, key & 7
    if number not in numbers or wire in (3, 4, 6, 7):
      return start, f"not a protobuf: bad field tag 0x{key:x} at byte {start}"
    if wire == 0:
      _, pos = _varint(data, pos)
      if _ is None:
        return (
          start,
          f"truncated: field {number} at byte {start} runs past the end",
        )
    elif wire == 2:
      size, pos = _varint(data, pos)
      if size is None or pos + size > end:
        return start, (
          f"truncated: field {number} at byte {start} runs past the end of "
          f"the file ({end} bytes)"
        )
      pos += size
    else:
      pos += 8 if wire == 1 else 4
      if pos > end:
        return (
          start,
          f"truncated: field {number} at byte {start} runs past the end",
        )
  return end, None


def _varint(data: bytes, pos: int) -> tuple[int | None, int]:
  """A base-128 varint at `pos`: (value, next position); (None, pos) when
  it runs past the end or over 10 bytes."""
  value = shift = 0
  for i in range(pos, min(pos + 10, len(data))):
    value |= (data[i] & 0x7F) << shift
    shift += 7
    if not data[i] & 0x80:
      return value, i + 1
  return None, pos


def xla_schema(
  find: Callable[[bytes], list[bytes]],
) -> descriptor_pool.DescriptorPool | None:
  """XLA's `xla/service/hlo.proto` and its dependencies as a pool.

  Args:
    find: the byte windows that start with a marker, in the library that
      embeds the descriptors (`private_api.jaxlib_embedded`). A serialized
      FileDescriptorProto starts with its name (field 1) then its package
      (field 2): b"\\n" + length + name + b"\\x12" marks it; it ends where a
      field that no FileDescriptorProto has begins.

  Returns:
    The pool, or None where a file's descriptor is not found; kept per
    `find` for this process (finding the descriptors scans the library:
    about 0.5 s).
  """
  if find in _SCHEMAS:
    return _SCHEMAS[find]
  _SCHEMAS[find] = pool = _xla_schema(find)
  return pool


# find -> xla_schema's pool.
_SCHEMAS: dict[Callable, descriptor_pool.DescriptorPool | None] = {}


def _xla_schema(
  find: Callable[[bytes], list[bytes]],
) -> descriptor_pool.DescriptorPool | None:
  files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
  todo = ["xla/service/hlo.proto"]
  while todo:
    name = todo.pop()
    if name in files or name in _WELL_KNOWN:
      continue
    marker = b"\n" + bytes([len(name)]) + name.encode() + b"\x12"
    found = []
    for window in find(marker):
      end, _ = _walk(window, _FILE_FIELDS)
      try:
        fd = descriptor_pb2.FileDescriptorProto.FromString(window[:end])
      except DecodeError:
        continue
      if fd.name == name:
        found.append(fd)
    if not found:
      return None
    files[name] = max(found, key=lambda f: len(f.SerializeToString()))
    todo += files[name].dependency
  pool = descriptor_pool.DescriptorPool()
  added: set[str] = set()

  def add(name: str) -> None:
    if name in added:
      return
    added.add(name)
    if name in _WELL_KNOWN:
      fd = descriptor_pb2.FileDescriptorProto()
      _WELL_KNOWN[name].DESCRIPTOR.CopyToProto(fd)
    else:
      fd = files[name]
      for dep in fd.dependency:
        add(dep)
    pool.Add(fd)

  add("xla/service/hlo.proto")
  return pool


def proto_text_to_binary(
  text: str, find: Callable[[bytes], list[bytes]]
) -> bytes:
  """An HloSnapshot, HloProto or HloModuleProto in text format, as the
  binary message (the root told by the first field's name).

  Raises:
    ValueError: XLA's schema is not found in this jaxlib, or the text does
      not parse (protobuf's message: "line:col : ...").
  """
  pool = xla_schema(find)
  if pool is None:
    raise ValueError(
      "an HLO proto in text format, but this jaxlib's XLA schema "
      "(xla/service/hlo.proto) was not found to read it"
    )
  first = text.lstrip().split(":", 1)[0].split("{", 1)[0].strip()
  root = next(r for r, names in _TEXT_ROOTS if not names or first in names)
  cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(root))
  try:
    return text_format.Parse(text, cls()).SerializeToString()
  except text_format.ParseError as e:
    raise ValueError(f"{root} text format does not parse: {e}") from None
