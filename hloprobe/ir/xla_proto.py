"""XLA's HloProto, HloSnapshot and LiteralProto on the wire, in Python.

Only the messages hloprobe needs are built, as descriptors in Python
(`descriptor_pb2` + `message_factory`, the `protobuf` package): no XLA
.proto file nor generated code is vendored. Field numbers and names are
XLA's (openxla/xla, read at 0b8fa9f2 for `xla/service/hlo.proto` and
011b7582 for `xla/xla_data.proto`):

  HloSnapshot   { HloProto hlo = 1; repeated LiteralProto arguments = 2;
                  LiteralProto result = 3; string execution_platform = 4; }
  HloProto      { HloModuleProto hlo_module = 1; (buffer_assignment = 3) }
  HloModuleProto { string name = 1; string entry_computation_name = 2;
                  repeated HloComputationProto computations = 3;
                  ProgramShapeProto host_program_shape = 4; ... }
  ProgramShapeProto { repeated ShapeProto parameters = 1; ... }
  HloComputationProto { string name = 1;
                  repeated HloInstructionProto instructions = 2; ... }
  HloInstructionProto { string name = 1; string opcode = 2; ...
                  int64 id = 35; ... }
  LiteralProto  { ShapeProto shape = 1; the data fields below;
                  repeated LiteralProto tuple_literals = 10; }
  ShapeProto    { PrimitiveType element_type = 2; repeated int64
                  dimensions = 3; repeated ShapeProto tuple_shapes = 4;
                  LayoutProto layout = 5; }
  LayoutProto   { repeated int64 minor_to_major = 1; repeated TileProto
                  tiles = 6; ... }

`HloProto.hlo_module` is declared `bytes` here: a message field and a bytes
field are the same on the wire (length-delimited), so the module proto is
handed to XLA's own reader (`hlo_module_from_proto`) untouched, every field
kept. The module skeleton (`_MODULE_SKELETON`, names and opcodes only) is
what tells a module apart from other protos by its contents.

A literal's data is in its layout's order (`LiteralBase::Piece::
CopyFromProto`, xla/literal.cc, copies the proto's field into the literal's
buffer as it stands); 16-bit and 8-bit types are little-endian bytes
fields (`f16s`, `bf16s`, `s16s`, `u16s`, `s8s`, `u8s`, one per fp8 type),
the rest repeated scalars.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import NamedTuple

import ml_dtypes
import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

__all__ = [
  "ModuleSignature",
  "ProtoFile",
  "hlo_dtype_name",
  "literal_from_array",
  "literal_to_arrays",
  "module_signature",
  "read_proto_file",
  "snapshot_bytes",
]


_T = descriptor_pb2.FieldDescriptorProto
_BYTES = _T.TYPE_BYTES


@dataclasses.dataclass(frozen=True)
class _Element:
  """One PrimitiveType: its xla_data.proto number, its LiteralProto data
  field (name, number, type: bytes, or a repeated scalar), numpy dtype."""

  number: int
  field: str
  field_number: int
  field_type: int
  dtype: np.dtype


def _element(number, field, field_number, field_type, dtype) -> _Element:
  return _Element(number, field, field_number, field_type, np.dtype(dtype))


# HLO dtype name -> PrimitiveType (xla/xla_data.proto `PrimitiveType`) and
# its LiteralProto field. Sub-byte types (s1/s2/s4, u1/u2/u4, f4e2m1fn) are
# not read: the proto packs them per XLA's in-memory type, unchecked here.
_ELEMENTS = {
  "pred": _element(1, "preds", 2, _T.TYPE_BOOL, np.bool_),
  "s8": _element(2, "s8s", 15, _BYTES, np.int8),
  "s16": _element(3, "s16s", 17, _BYTES, np.int16),
  "s32": _element(4, "s32s", 4, _T.TYPE_INT32, np.int32),
  "s64": _element(5, "s64s", 5, _T.TYPE_INT64, np.int64),
  "u8": _element(6, "u8s", 3, _BYTES, np.uint8),
  "u16": _element(7, "u16s", 16, _BYTES, np.uint16),
  "u32": _element(8, "u32s", 6, _T.TYPE_UINT32, np.uint32),
  "u64": _element(9, "u64s", 7, _T.TYPE_UINT64, np.uint64),
  "f16": _element(10, "f16s", 11, _BYTES, np.float16),
  "f32": _element(11, "f32s", 8, _T.TYPE_FLOAT, np.float32),
  "f64": _element(12, "f64s", 9, _T.TYPE_DOUBLE, np.float64),
  "c64": _element(15, "c64s", 12, _T.TYPE_FLOAT, np.complex64),
  "c128": _element(18, "c128s", 18, _T.TYPE_DOUBLE, np.complex128),
  "bf16": _element(16, "bf16s", 13, _BYTES, ml_dtypes.bfloat16),
  "f8e5m2": _element(19, "f8e5m2s", 19, _BYTES, ml_dtypes.float8_e5m2),
  "f8e4m3fn": _element(20, "f8e4m3fns", 20, _BYTES, ml_dtypes.float8_e4m3fn),
  "f8e4m3b11fnuz": _element(
    23, "f8e4m3b11fnuzs", 23, _BYTES, ml_dtypes.float8_e4m3b11fnuz
  ),
  "f8e5m2fnuz": _element(
    24, "f8e5m2fnuzs", 24, _BYTES, ml_dtypes.float8_e5m2fnuz
  ),
  "f8e4m3fnuz": _element(
    25, "f8e4m3fnuzs", 25, _BYTES, ml_dtypes.float8_e4m3fnuz
  ),
  "f8e4m3": _element(28, "f8e4m3s", 28, _BYTES, ml_dtypes.float8_e4m3),
  "f8e3m4": _element(29, "f8e3m4s", 29, _BYTES, ml_dtypes.float8_e3m4),
  "f8e8m0fnu": _element(33, "f8e8m0fnus", 33, _BYTES, ml_dtypes.float8_e8m0fnu),
}
_BY_NUMBER = {e.number: name for name, e in _ELEMENTS.items()}
_TUPLE = 13  # PrimitiveType TUPLE


@dataclasses.dataclass(frozen=True)
class ProtoFile:
  """A binary HLO proto file, taken apart.

  Attributes:
    kind: "hlo_proto" (an HloModuleProto, or an HloProto around one, as
      `--xla_dump_hlo_as_proto` writes `*.hlo.pb`) or "hlo_snapshot".
    module_proto: the serialized HloModuleProto, as in the file.
    arguments: a snapshot's arguments (one array per literal; a tuple
      argument's leaves are not supported), else None.
    result: a snapshot's result, its tuple's leaves in order, else None.
    platform: a snapshot's `execution_platform` ("" when not recorded).
  """

  kind: str
  module_proto: bytes
  arguments: tuple[np.ndarray, ...] | None
  result: tuple[np.ndarray, ...] | None
  platform: str


def _field(msg, name: str, number: int, ftype: int, *, label=None, tn=None):
  f = msg.field.add(name=name, number=number, type=ftype)
  f.label = label or _T.LABEL_OPTIONAL
  if tn:
    f.type_name = tn
  return f


def _classes() -> dict[str, type]:
  """The message classes, built in a fresh pool (no shared state)."""
  fd = descriptor_pb2.FileDescriptorProto(
    name="hloprobe_xla_subset.proto", package="xla", syntax="proto3"
  )
  rep, msg_t, str_t = _T.LABEL_REPEATED, _T.TYPE_MESSAGE, _T.TYPE_STRING
  layout = fd.message_type.add(name="LayoutProto")
  _field(layout, "minor_to_major", 1, _T.TYPE_INT64, label=rep)
  _field(layout, "tiles", 6, _T.TYPE_BYTES, label=rep)
  shape = fd.message_type.add(name="ShapeProto")
  _field(shape, "element_type", 2, _T.TYPE_INT32)
  _field(shape, "dimensions", 3, _T.TYPE_INT64, label=rep)
  _field(shape, "tuple_shapes", 4, msg_t, label=rep, tn=".xla.ShapeProto")
  _field(shape, "layout", 5, msg_t, tn=".xla.LayoutProto")
  lit = fd.message_type.add(name="LiteralProto")
  _field(lit, "shape", 1, msg_t, tn=".xla.ShapeProto")
  for e in _ELEMENTS.values():
    label = None if e.field_type == _BYTES else rep
    _field(lit, e.field, e.field_number, e.field_type, label=label)
  _field(lit, "tuple_literals", 10, msg_t, label=rep, tn=".xla.LiteralProto")
  inst = fd.message_type.add(name="HloInstructionProto")
  _field(inst, "name", 1, str_t)
  _field(inst, "opcode", 2, str_t)
  _field(inst, "id", 35, _T.TYPE_INT64)
  comp = fd.message_type.add(name="HloComputationProto")
  _field(comp, "name", 1, str_t)
  _field(
    comp, "instructions", 2, msg_t, label=rep, tn=".xla.HloInstructionProto"
  )
  program = fd.message_type.add(name="ProgramShapeProto")
  _field(program, "parameters", 1, msg_t, label=rep, tn=".xla.ShapeProto")
  module = fd.message_type.add(name="HloModuleProto")
  _field(module, "name", 1, str_t)
  _field(module, "entry_computation_name", 2, str_t)
  _field(module, "host_program_shape", 4, msg_t, tn=".xla.ProgramShapeProto")
  _field(
    module, "computations", 3, msg_t, label=rep, tn=".xla.HloComputationProto"
  )
  hlo = fd.message_type.add(name="HloProto")
  _field(hlo, "hlo_module", 1, _T.TYPE_BYTES)
  snap = fd.message_type.add(name="HloSnapshot")
  _field(snap, "hlo", 1, _T.TYPE_BYTES)
  _field(snap, "arguments", 2, msg_t, label=rep, tn=".xla.LiteralProto")
  _field(snap, "result", 3, msg_t, tn=".xla.LiteralProto")
  _field(snap, "execution_platform", 4, str_t)
  pool = descriptor_pool.DescriptorPool()
  pool.Add(fd)
  return {
    m.name: message_factory.GetMessageClass(
      pool.FindMessageTypeByName(f"xla.{m.name}")
    )
    for m in fd.message_type
  }


def _parse(cls: type, data: bytes):
  """`cls` parsed from `data`, or None where the bytes are not one."""
  msg = cls()
  try:
    msg.ParseFromString(data)
  except (DecodeError, RuntimeError, ValueError):
    return None
  return msg


def _is_module(classes: dict[str, type], data: bytes) -> bool:
  """Whether `data` is an HloModuleProto: a name, an entry computation's
  name among its computations, each computation's instructions named and
  with an opcode.

  Raises:
    ValueError: an instruction id whose local part is over
      `_MAX_LOCAL_ID` (`_id_problem`).
  """
  module = _parse(classes["HloModuleProto"], data)
  if module is None or not module.name or not module.computations:
    return False
  names = {c.name for c in module.computations}
  if module.entry_computation_name not in names:
    return False
  if not all(
    c.instructions and all(i.name and i.opcode for i in c.instructions)
    for c in module.computations
  ):
    return False
  problem = _id_problem(module)
  if problem is not None:
    raise ValueError(problem)
  return True


# The largest local instruction id a module may hold (an id's low 32 bits:
# XLA's `HloInstruction::CalculateLocalId`; a computation's id is in the
# high 32). XLA's `HloComputation::CreateFromProto` (xla/hlo/ir/
# hlo_computation.cc) sizes a vector of instruction pointers, 8 bytes
# each, by the largest (seen in a stack sample, jaxlib 0.12.0.1: local id
# 1,293,934,592 took 10 GB in 40 s; 10^8 took 0.55 GB). 2^24 - 1 keeps
# that vector under 128 MiB; XLA numbers a computation's instructions
# from 0 up as it makes them, far below this in any real module.
_MAX_LOCAL_ID = (1 << 24) - 1


def _id_problem(module) -> str | None:
  """Why XLA's reader would take too much memory on `module` (an
  HloModuleProto message): its first instruction whose local id is over
  `_MAX_LOCAL_ID`; None when there is none."""
  for computation in module.computations:
    for instruction in computation.instructions:
      local = instruction.id & 0xFFFFFFFF
      if local > _MAX_LOCAL_ID:
        return (
          f"instruction {instruction.name!r} has id {instruction.id} (local "
          f"id {local}, over {_MAX_LOCAL_ID}): XLA's reader would allocate "
          f"{8 * (local + 1) >> 20} MiB for it"
        )
  return None


def read_proto_file(
  data: bytes | str, find: Callable[[bytes], list[bytes]] | None = None
) -> ProtoFile | None:
  """An HloModuleProto, HloProto or HloSnapshot, by its contents.

  Args:
    data: the file's bytes (the binary wire format), or its text in
      protobuf text format (str; the root message told by its first
      field's name, `proto_wire.proto_text_to_binary`).
    find: for text, how XLA's own FileDescriptorProtos are found in the
      jaxlib installed (`private_api.jaxlib_embedded`): text format needs
      the whole schema, which hloprobe does not vendor.

  Returns:
    The ProtoFile, or None where `data` is none of the three (a truncated
    proto is none of them: its last field runs past the end).

  Raises:
    ValueError: a snapshot whose literal cannot be read (its message says
      which argument, e.g. "argument 1: f32[2,3] has 5 values"); a module
      with an instruction id XLA's reader would take gigabytes on (a
      local id over `_MAX_LOCAL_ID`); text whose schema is not found in
      this jaxlib, or that does not parse.
  """
  if isinstance(data, str):
    from hloprobe.ir.proto_wire import proto_text_to_binary

    if find is None:
      raise ValueError("an HLO proto in text format needs XLA's schema")
    data = proto_text_to_binary(data, find)
  classes = _classes()
  if _is_module(classes, data):
    return ProtoFile("hlo_proto", data, None, None, "")
  hlo = _parse(classes["HloProto"], data)
  if hlo is not None and _is_module(classes, hlo.hlo_module):
    return ProtoFile("hlo_proto", hlo.hlo_module, None, None, "")
  snap = _parse(classes["HloSnapshot"], data)
  if snap is None:
    return None
  inner = _parse(classes["HloProto"], snap.hlo)
  if inner is None or not _is_module(classes, inner.hlo_module):
    return None
  arguments = []
  for i, literal in enumerate(snap.arguments):
    leaves = _leaves(literal, f"argument {i}")
    if len(leaves) != 1:
      raise ValueError(f"argument {i} is a tuple (not supported)")
    arguments.append(leaves[0])
  result = _leaves(snap.result, "result") if snap.HasField("result") else None
  return ProtoFile(
    "hlo_snapshot",
    inner.hlo_module,
    tuple(arguments),
    result,
    snap.execution_platform,
  )


def _leaves(literal, what: str) -> tuple[np.ndarray, ...]:
  """A literal's arrays, a tuple's leaves depth first."""
  if literal.shape.element_type == _TUPLE:
    out: list[np.ndarray] = []
    for j, part in enumerate(literal.tuple_literals):
      out += _leaves(part, f"{what}[{j}]")
    return tuple(out)
  return (_array(literal, what),)


def literal_to_arrays(data: bytes) -> tuple[np.ndarray, ...]:
  """A serialized LiteralProto's arrays (a tuple's leaves, depth first).

  Raises:
    ValueError: not a LiteralProto, or one this reader cannot read.
  """
  literal = _parse(_classes()["LiteralProto"], data)
  if literal is None:
    raise ValueError("not a LiteralProto")
  return _leaves(literal, "literal")


def _array(literal, what: str) -> np.ndarray:
  """One array literal as numpy, in logical (row-major) order."""
  shape = literal.shape
  name = _BY_NUMBER.get(shape.element_type)
  if name is None:
    raise ValueError(
      f"{what}: PrimitiveType {shape.element_type} is not supported "
      f"(supported: {', '.join(sorted(_ELEMENTS))})"
    )
  element = _ELEMENTS[name]
  dims = tuple(int(d) for d in shape.dimensions)
  text = f"{name}[{','.join(map(str, dims))}]"
  if shape.layout.tiles:
    raise ValueError(f"{what}: {text} has a tiled layout (not supported)")
  raw = getattr(literal, element.field)
  if element.field_type == _BYTES:
    flat = np.frombuffer(raw, dtype=element.dtype.newbyteorder("<"))
  elif name in ("c64", "c128"):
    parts = np.asarray(raw, dtype=element.dtype.type(0).real.dtype)
    flat = parts[0::2] + 1j * parts[1::2] if parts.size else parts
  else:
    flat = np.asarray(raw, dtype=element.dtype)
  size = int(np.prod(dims, dtype=np.int64))
  if flat.size != size:
    raise ValueError(f"{what}: {text} has {flat.size} values, not {size}")
  order = list(shape.layout.minor_to_major) or list(range(len(dims)))[::-1]
  if sorted(order) != list(range(len(dims))):
    raise ValueError(f"{what}: {text} has a bad layout {order}")
  major_to_minor = order[::-1]
  physical = flat.astype(element.dtype).reshape(
    [dims[d] for d in major_to_minor]
  )
  return np.ascontiguousarray(
    np.transpose(physical, np.argsort(major_to_minor))
  )


def literal_from_array(array: np.ndarray) -> bytes:
  """A serialized LiteralProto of `array` in the default (row-major) layout.

  Raises:
    ValueError: its dtype has no LiteralProto field here.
  """
  literal = _classes()["LiteralProto"]()
  _fill_literal(literal, np.asarray(array))
  return literal.SerializeToString()


def _fill_literal(literal, array: np.ndarray) -> None:
  """Sets an empty LiteralProto message to `array` (row-major layout)."""
  name = hlo_dtype_name(array.dtype)
  if name is None:
    raise ValueError(f"dtype {array.dtype} has no LiteralProto field here")
  element = _ELEMENTS[name]
  literal.shape.element_type = element.number
  literal.shape.dimensions.extend(array.shape)
  literal.shape.layout.minor_to_major.extend(range(array.ndim)[::-1])
  flat = np.ascontiguousarray(array).reshape(-1)
  if element.field_type == _BYTES:
    setattr(
      literal,
      element.field,
      flat.astype(element.dtype.newbyteorder("<")).tobytes(),
    )
  elif name in ("c64", "c128"):
    getattr(literal, element.field).extend(
      np.stack([flat.real, flat.imag], axis=1).reshape(-1).tolist()
    )
  else:
    getattr(literal, element.field).extend(flat.tolist())


def snapshot_bytes(
  module_proto: bytes,
  arguments: tuple[np.ndarray, ...],
  result: tuple[np.ndarray, ...] | None = None,
  platform: str = "",
) -> bytes:
  """A serialized HloSnapshot (as XLA writes `*.snapshot.*.pb`): the
  module proto inside an HloProto, one literal per argument, the result
  (a tuple literal of its leaves when there are several).

  Raises:
    ValueError: an array of a dtype with no LiteralProto field here.
  """
  classes = _classes()
  hlo = classes["HloProto"](hlo_module=module_proto)
  snap = classes["HloSnapshot"](
    hlo=hlo.SerializeToString(), execution_platform=platform
  )
  for a in arguments:
    _fill_literal(snap.arguments.add(), np.asarray(a))
  if result is not None:
    if len(result) == 1:
      _fill_literal(snap.result, np.asarray(result[0]))
    else:
      snap.result.shape.element_type = _TUPLE
      for leaf in result:
        part = snap.result.tuple_literals.add()
        _fill_literal(part, np.asarray(leaf))
        snap.result.shape.tuple_shapes.append(part.shape)
  return snap.SerializeToString()


class ModuleSignature(NamedTuple):
  """An HloModuleProto's name and entry parameters (`module_signature`).

  Attributes:
    name: the module's name.
    parameters: each entry parameter (dims, HLO dtype name), in order.
  """

  name: str
  parameters: tuple[tuple[tuple[int, ...], str], ...]

  def check_arguments(self, arguments: Sequence[np.ndarray]) -> None:
    """A snapshot's arguments against the parameters.

    Raises:
      ValueError: another count, shape or dtype (the first that differs),
        e.g. "the snapshot's argument 0 is f32[2, 3], its parameter
        f32[3, 2]".
    """
    if len(arguments) != len(self.parameters):
      raise ValueError(
        f"the snapshot has {len(arguments)} arguments for "
        f"{len(self.parameters)} parameters"
      )
    for i, (a, (dims, dtype)) in enumerate(zip(arguments, self.parameters)):
      got = (tuple(a.shape), hlo_dtype_name(a.dtype))
      if got != (dims, dtype):
        raise ValueError(
          f"the snapshot's argument {i} is {got[1]}{list(got[0])}, "
          f"its parameter {dtype}{list(dims)}"
        )


def module_signature(module_proto: bytes) -> ModuleSignature:
  """An HloModuleProto's name and entry parameters, from its
  `host_program_shape` (the entry computation's layout, which
  HloModule::ToProto writes).

  Raises:
    ValueError: not a module proto; a parameter that is a tuple or of a
      PrimitiveType not read here.
  """
  module = _parse(_classes()["HloModuleProto"], module_proto)
  if module is None:
    raise ValueError("not an HloModuleProto")
  parameters = []
  for i, shape in enumerate(module.host_program_shape.parameters):
    name = _BY_NUMBER.get(shape.element_type)
    if name is None:
      what = "a tuple" if shape.element_type == _TUPLE else "of a type"
      raise ValueError(
        f"entry parameter {i} is {what} hloprobe does not read "
        f"(PrimitiveType {shape.element_type})"
      )
    parameters.append((tuple(int(d) for d in shape.dimensions), name))
  return ModuleSignature(module.name, tuple(parameters))


def hlo_dtype_name(dtype: np.dtype) -> str | None:
  """The HLO name of a numpy dtype ("f32", "bf16", ...), or None where it
  has no LiteralProto field here."""
  for name, element in _ELEMENTS.items():
    if element.dtype == dtype:
      return name
  return None
