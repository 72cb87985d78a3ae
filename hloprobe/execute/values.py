"""HLO element types as numpy dtypes, literals, layouts, and the checks of
the arguments an execution is given.

Element types map onto numpy and ml_dtypes (bfloat16, the float8 and
float4 formats, int4/int2): `numpy_dtype`. Under `widen` every float type
is computed as float64 (`compute_dtype`).

Private in intent: use the package, `hloprobe.execute`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import ml_dtypes
import numpy as np

from hloprobe.errors import ExecutionError
from hloprobe.ir import HloInstruction

__all__ = [
  "MISSING",
  "Unsupported",
  "check_arguments",
  "compute_dtype",
  "is_float",
  "minor_to_major",
  "numpy_dtype",
  "parse_literal",
]

_FIXED = {
  "pred": np.bool_,
  "s8": np.int8,
  "s16": np.int16,
  "s32": np.int32,
  "s64": np.int64,
  "u8": np.uint8,
  "u16": np.uint16,
  "u32": np.uint32,
  "u64": np.uint64,
  "f16": np.float16,
  "f32": np.float32,
  "f64": np.float64,
  "c64": np.complex64,
  "c128": np.complex128,
}
# HLO spelling -> ml_dtypes attribute (ml_dtypes 0.5 and later have them all).
_ML_DTYPES = {
  "bf16": "bfloat16",
  "s4": "int4",
  "u4": "uint4",
  "s2": "int2",
  "u2": "uint2",
  "f8e4m3fn": "float8_e4m3fn",
  "f8e5m2": "float8_e5m2",
  "f8e4m3": "float8_e4m3",
  "f8e3m4": "float8_e3m4",
  "f8e4m3fnuz": "float8_e4m3fnuz",
  "f8e5m2fnuz": "float8_e5m2fnuz",
  "f8e4m3b11fnuz": "float8_e4m3b11fnuz",
  "f8e8m0fnu": "float8_e8m0fnu",
  "f4e2m1fn": "float4_e2m1fn",
}
_NUMBER = re.compile(r"[-+]?(?:inf|nan|[0-9.]+(?:e[-+]?[0-9]+)?)|true|false")


@dataclasses.dataclass(frozen=True, slots=True)
class _Missing:
  """The value of an instruction that was not computed."""


# The one value of an instruction not computed (and of all computed from it).
MISSING = _Missing()


class Unsupported(Exception):
  """Raised inside the executor for an op it cannot compute; the
  interpreter turns it into a `NotExecuted` record (never escapes
  `execute_module`)."""

  def __init__(self, reason: str, target: str | None = None):
    super().__init__(reason)
    self.reason = reason
    self.target = target


def numpy_dtype(hlo_type: str) -> np.dtype:
  """The numpy dtype of an HLO element type ("f32", "bf16", "pred", ...).

  Raises:
    Unsupported: a type numpy cannot hold (token, opaque, a tuple).
  """
  if hlo_type in _FIXED:
    return np.dtype(_FIXED[hlo_type])
  name = _ML_DTYPES.get(hlo_type)
  if name is not None and hasattr(ml_dtypes, name):
    return np.dtype(getattr(ml_dtypes, name))
  raise Unsupported(f"no numpy type for element type {hlo_type}")


def is_float(dtype: np.dtype) -> bool:
  """Whether `dtype` is a real floating type (numpy's or ml_dtypes')."""
  dtype = np.dtype(dtype)
  if dtype.kind == "f":
    return True
  return dtype.kind == "V" and dtype.names is None and _is_ml_float(dtype)


def _is_ml_float(dtype: np.dtype) -> bool:
  try:
    ml_dtypes.finfo(dtype)
  except ValueError:
    return False
  return True


def compute_dtype(hlo_type: str, widen: bool) -> np.dtype:
  """The dtype values of `hlo_type` are held in: its own, or float64 for a
  float type under `widen`."""
  dtype = numpy_dtype(hlo_type)
  if widen and is_float(dtype):
    return np.dtype(np.float64)
  return dtype


def minor_to_major(layout: str | None, rank: int) -> tuple[int, ...]:
  """The minor-to-major dimension order of a printed layout.

  `{1,0}` -> (1, 0); tiling and memory space after ':' (`{1,0:T(8,128)}`)
  are ignored, as they do not change which element is where logically.
  No layout (or `{}` of a scalar) is the default, descending order.

  Raises:
    Unsupported: the layout does not name each dimension once.
  """
  default = tuple(range(rank - 1, -1, -1))
  if not layout:
    return default
  body = layout.strip().strip("{}").split(":")[0]
  dims = tuple(int(d) for d in body.split(",") if d.strip())
  if not dims and rank == 0:
    return ()
  if sorted(dims) != list(range(rank)):
    raise Unsupported(f"layout {layout} is not a permutation of rank {rank}")
  return dims


def parse_literal(text: str, dtype: np.dtype, dims: Sequence[int]):
  """The value of a `constant(...)` literal, as an array of `dtype`.

  Reads scalars (`16`, `-inf`, `true`, `0.1`) and nested `{...}` arrays,
  in row-major order of `dims`.

  Raises:
    Unsupported: an elided literal (`{...}`), a complex literal, or a count
      of numbers that does not fill `dims`.
  """
  body = text.strip()
  if "..." in body:
    raise Unsupported("the constant's literal is elided in the text")
  if "(" in body:
    raise Unsupported("complex literals are not read")
  words = _NUMBER.findall(body.lower())
  size = int(np.prod(dims, dtype=np.int64))
  if len(words) != size:
    raise Unsupported(
      f"literal has {len(words)} values for {size} elements: {body[:40]!r}"
    )
  if dtype == np.bool_:
    values = [
      w == "true" or (w not in ("false", "0") and float(w) != 0) for w in words
    ]
    return np.array(values, dtype=np.bool_).reshape(dims)
  if np.dtype(dtype).kind in "iu":
    ints = [1 if w == "true" else 0 if w == "false" else int(w) for w in words]
    return np.array(ints, dtype=np.int64).astype(dtype).reshape(dims)
  floats = [
    1.0 if w == "true" else 0.0 if w == "false" else float(w) for w in words
  ]
  return np.array(floats, dtype=np.float64).astype(dtype).reshape(dims)


def check_arguments(
  parameters: dict[int, HloInstruction], arguments: Sequence
) -> None:
  """Checks the entry's arguments against its parameters.

  Args:
    parameters: the entry's parameter instructions by number.
    arguments: one array per parameter, in parameter order (a tuple-shaped
      parameter takes a tuple of arrays).

  Raises:
    ExecutionError: a wrong count, or an argument whose shape or dtype is
      not the parameter's (one line naming the parameter).
  """
  if len(arguments) != len(parameters):
    raise ExecutionError(
      f"[hloprobe] the module takes {len(parameters)} arguments, "
      f"got {len(arguments)}"
    )
  for number, inst in sorted(parameters.items()):
    _check_one(inst.name, inst.shape, arguments[number])


def _check_one(name: str, shape, argument) -> None:
  if shape.is_tuple:
    if not isinstance(argument, (tuple, list)) or len(argument) != len(
      shape.elements
    ):
      raise ExecutionError(
        f"[hloprobe] parameter {name} is a tuple of {len(shape.elements)}; "
        f"got {type(argument).__name__}"
      )
    for element, arg in zip(shape.elements, argument):
      _check_one(name, element, arg)
    return
  array = np.asarray(argument)
  try:
    dtype = numpy_dtype(shape.dtype)
  except Unsupported:
    raise ExecutionError(
      f"[hloprobe] parameter {name} has type {shape.dtype}, which no numpy "
      "array holds"
    ) from None
  if tuple(array.shape) != tuple(shape.dims) or array.dtype != dtype:
    raise ExecutionError(
      f"[hloprobe] parameter {name} is {shape} ({dtype}); got an array "
      f"{array.dtype}{list(array.shape)}"
    )
