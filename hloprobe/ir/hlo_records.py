"""The records of a parsed HLO module: `Shape`, `HloInstruction`,
`HloComputation` and `HloModule`, frozen and slotted.

Attribute values are kept as the raw text the module printed (so a printer
can write them back) and interpreted on demand: `metadata`,
`backend_config` (JSON), called computations, dot dimension numbers and
source locations (the FileNames / FileLocations / StackFrames tables). Who
fills them is `hloprobe.ir.hlo`'s business (XLA's parser, the text reader);
this module imports no JAX.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping

from hloprobe.errors import HloParseError
from hloprobe.ir.precisions import algorithm_from_hlo
from hloprobe.ir.ptx import kernel_name

__all__ = [
  "HLO_DTYPES",
  "HloComputation",
  "HloInstruction",
  "HloModule",
  "Shape",
  "braced_fields",
  "hlo_int",
  "json_value",
]

# HLO's element type spellings (xla/primitive_util.cc LowercasePrimitiveTypeName).
HLO_DTYPES = (
  "pred",
  "s2",
  "s4",
  "s8",
  "s16",
  "s32",
  "s64",
  "u2",
  "u4",
  "u8",
  "u16",
  "u32",
  "u64",
  "f16",
  "bf16",
  "f32",
  "f64",
  "c64",
  "c128",
  "f8e4m3fn",
  "f8e5m2",
  "f8e4m3",
  "f8e3m4",
  "f8e4m3fnuz",
  "f8e5m2fnuz",
  "f8e4m3b11fnuz",
  "f8e8m0fnu",
  "f4e2m1fn",
  "token",
  "opaque",
)
# An SPMD-partitioned module's header attribute.
_PARTITIONS_RE = re.compile(r"\bnum_partitions=(\d+)")
_CALLED_ATTRS = (
  "calls",
  "to_apply",
  "body",
  "condition",
  "branch_computations",
  "called_computations",
  "true_computation",
  "false_computation",
)


@dataclasses.dataclass(frozen=True, slots=True)
class Shape:
  """An HLO shape: an array `dtype[dims]{layout}` or a tuple of shapes.

  Attributes:
    dtype: HLO element type spelling (`f32`, `bf16`, ...), or "tuple".
    dims: dimension sizes, () for scalars and tuples.
    layout: minor-to-major layout text such as "{1,0}", or None if absent.
    elements: the element shapes of a tuple, () for arrays.
  """

  dtype: str
  dims: tuple[int, ...] = ()
  layout: str | None = None
  elements: tuple[Shape, ...] = ()

  @property
  def is_tuple(self) -> bool:
    """Whether this is a tuple shape (its `elements` hold the parts)."""
    return self.dtype == "tuple"

  def __str__(self) -> str:
    if self.is_tuple:
      return "(" + ", ".join(str(e) for e in self.elements) + ")"
    return f"{self.dtype}[{','.join(map(str, self.dims))}]"


def braced_fields(text: str) -> dict[str, str]:
  """Parses `{key=value key="v w" ...}` (metadata, table rows) into a dict."""
  body = text.strip()
  if body.startswith("{") and body.endswith("}"):
    body = body[1:-1]
  out = {}
  for m in re.finditer(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', body):
    value = m.group(2)
    out[m.group(1)] = json_value(value) if value.startswith('"') else value
  return out


def json_value(text: str):
  """A JSON value printed in HLO text (a backend_config, a quoted string).

  Raises:
    HloParseError: `text` is not JSON, or nests too deep to read.
  """
  try:
    return json.loads(text)
  except (json.JSONDecodeError, RecursionError) as e:
    raise HloParseError(f"[hloprobe] bad JSON {text[:60]!r}: {e}") from None


def hlo_int(text: str, what: str) -> int:
  """An integer printed in HLO text (at most 18 digits, so an int64).

  Args:
    text: the printed integer, e.g. "-3".
    what: what it is, for the error ("parameter number").

  Raises:
    HloParseError: `text` is not such an integer.
  """
  if not re.fullmatch(r"\s*-?[0-9]{1,18}\s*", text):
    raise HloParseError(
      f"[hloprobe] bad {what} {text[:60]!r}; expected an integer"
    )
  return int(text)


@dataclasses.dataclass(frozen=True, slots=True)
class HloInstruction:
  """One HLO instruction.

  Attributes:
    name: instruction name without the leading '%'.
    opcode: HLO opcode such as "dot", "fusion", "custom-call".
    shape: result shape.
    operands: operand instruction names, in order.
    literal: raw operand text of `constant(...)`/`parameter(...)`/`iota`.
    attrs: raw attribute text by key, in printed order.
    is_root: whether the line starts with ROOT.
  """

  name: str
  opcode: str
  shape: Shape
  operands: tuple[str, ...]
  literal: str | None
  attrs: Mapping[str, str]
  is_root: bool = False

  @property
  def parameter_number(self) -> int | None:
    """N of a `parameter(N)` instruction; None for any other.

    Raises:
      HloParseError: N is not an integer (`hlo_int`).
    """
    if self.opcode != "parameter" or self.literal is None:
      return None
    return hlo_int(self.literal, "parameter number")

  @property
  def metadata(self) -> dict[str, str]:
    """The `metadata={...}` fields (op_name, stack_frame_id, ...)."""
    raw = self.attrs.get("metadata")
    return braced_fields(raw) if raw else {}

  @property
  def backend_config(self) -> dict:
    """The `backend_config` JSON as a dict; {} when absent or not JSON."""
    raw = self.attrs.get("backend_config")
    if not raw:
      return {}
    try:
      if raw.startswith('"'):
        raw = json.loads(raw)
      value = json.loads(raw)
    except (json.JSONDecodeError, RecursionError, TypeError):
      return {}
    return value if isinstance(value, dict) else {}

  @property
  def kernel_names(self) -> tuple[str, ...]:
    """The PTX kernel names XLA may give this instruction's code
    (`ptx.kernel_name`, XLA's `SanitizeFunctionName`): its own name's,
    then, where XLA deduplicated the fusion (`metadata.deduplicated_name`),
    the kernel of the fusion it shares, which is the one that runs."""
    names = [kernel_name(self.name)]
    dedup = self.metadata.get("deduplicated_name")
    if dedup:
      names.append(kernel_name(str(dedup)))
    return tuple(names)

  @property
  def call_precision_config(self) -> dict:
    """A custom call's backend_config `precision_config` (inside
    `gemm_backend_config` where the config has one: jaxlib 0.10.2 and
    0.12.0.1), e.g. {"operand_precision": ["DEFAULT", "DEFAULT"],
    "algorithm": "ALG_UNSET"}; {} where it has none."""
    config = self.backend_config
    return (config.get("gemm_backend_config") or config).get(
      "precision_config"
    ) or {}

  @property
  def algorithm_preset(self) -> str | None:
    """The dot algorithm the instruction states, named as a
    DotAlgorithmPreset (e.g. "TF32_TF32_F32"; the printed name where no
    preset matches, `precisions.algorithm_from_hlo`), or None where it
    states none.

    A dot prints it as an attribute (`algorithm=dot_tf32_tf32_f32`); a
    gemm custom call in its backend_config's `precision_config.algorithm`
    (`ALG_DOT_TF32_TF32_F32`; `ALG_UNSET` states none), inside
    `gemm_backend_config` where the config has one (jaxlib 0.10.2 and
    0.12.0.1).
    """
    if self.opcode == "custom-call":
      algo = self.call_precision_config.get("algorithm")
      if algo in (None, "ALG_UNSET"):
        return None
      return algorithm_from_hlo(algo.removeprefix("ALG_").lower())
    algo = self.attrs.get("algorithm")
    return algorithm_from_hlo(algo) if algo else None

  @property
  def called_computations(self) -> tuple[str, ...]:
    """Names of the computations this instruction calls (fusions, reduces)."""
    names = []
    for key in _CALLED_ATTRS:
      raw = self.attrs.get(key)
      if raw:
        names += [n.strip().lstrip("%") for n in raw.strip("{}").split(",")]
    return tuple(n for n in names if n)

  @property
  def attrs_without_calls(self) -> tuple[tuple[str, str], ...]:
    """Its attributes, in text order, but those that name the computations
    it calls (`called_computations`' attributes: `calls=`, `to_apply=`,
    ...): what it is, whatever its callees are named."""
    return tuple(
      (k, v) for k, v in self.attrs.items() if k not in _CALLED_ATTRS
    )

  def dims_attr(self, key: str) -> tuple[int, ...]:
    """An integer-list attribute such as `lhs_contracting_dims={1}`."""
    raw = self.attrs.get(key, "{}").strip("{}")
    return tuple(hlo_int(d, key) for d in raw.split(",") if d.strip())

  def to_text(self, rename: Mapping[str, str] | None = None) -> str:
    """Prints the instruction back as HLO text, optionally renaming."""
    rename = rename or {}
    name = rename.get(self.name, self.name)
    if self.literal is not None:
      args = self.literal
    else:
      args = ", ".join("%" + rename.get(o, o) for o in self.operands)
    attrs = "".join(f", {k}={v}" for k, v in self.attrs.items())
    root = "ROOT " if self.is_root else ""
    return (
      f"{root}%{name} = {_shape_text(self.shape)} {self.opcode}({args}){attrs}"
    )


def _shape_text(shape: Shape) -> str:
  if shape.is_tuple:
    return "(" + ", ".join(_shape_text(e) for e in shape.elements) + ")"
  return f"{shape}{shape.layout or ''}"


@dataclasses.dataclass(frozen=True, slots=True)
class HloComputation:
  """A named HLO computation: its instructions in printed order."""

  name: str
  instructions: tuple[HloInstruction, ...]
  is_entry: bool = False

  def by_name(self) -> dict[str, HloInstruction]:
    """Instruction name (without %) -> its record."""
    return {i.name: i for i in self.instructions}

  @property
  def root(self) -> HloInstruction:
    """The ROOT instruction; the last one where none is marked."""
    for inst in self.instructions:
      if inst.is_root:
        return inst
    return self.instructions[-1]

  def parameters(self) -> dict[int, HloInstruction]:
    """Parameter number -> its `parameter(N)` instruction."""
    return {
      i.parameter_number: i
      for i in self.instructions
      if i.parameter_number is not None
    }


@dataclasses.dataclass(frozen=True, slots=True)
class HloModule:
  """A parsed HLO module.

  Attributes:
    name: module name.
    header_attrs: raw text of the header's attributes.
    computations: computations by name, in printed order.
    entry_name: name of the ENTRY computation.
    tables: the FileNames, FunctionNames, FileLocations and StackFrames
      tables, each a dict from id to its row (str or field dict).
  """

  name: str
  header_attrs: str
  computations: Mapping[str, HloComputation]
  entry_name: str
  tables: Mapping[str, Mapping[int, object]]

  @property
  def entry(self) -> HloComputation:
    """The ENTRY computation.

    Raises:
      KeyError: `entry_name` names no computation (only a record made by
        hand: `parse_hlo_module` refuses a module without its ENTRY).
    """
    return self.computations[self.entry_name]

  @property
  def partition_count(self) -> int:
    """N of an SPMD-partitioned module's header `num_partitions=N`
    (HloModuleConfig's, printed by HloModule::ToString); else 1."""
    m = _PARTITIONS_RE.search(self.header_attrs)
    return int(m.group(1)) if m else 1

  def all_instructions(self) -> Iterator[tuple[HloComputation, HloInstruction]]:
    """(computation, instruction) for every instruction of every
    computation, computations and instructions in printed order."""
    for comp in self.computations.values():
      for inst in comp.instructions:
        yield comp, inst

  def source_location(self, inst: HloInstruction) -> str | None:
    """`file:line` of an instruction's innermost stack frame, or None."""
    meta = inst.metadata
    if "source_file" in meta and "source_line" in meta:
      return f"{meta['source_file']}:{meta['source_line']}"
    try:  # malformed or dangling table rows: not known
      frames = self.tables.get("StackFrames", {})
      frame = frames.get(hlo_int(meta.get("stack_frame_id", ""), "frame id"))
      if frame is None:
        return None
      loc_id = hlo_int(frame["file_location_id"], "file location id")
      loc = self.tables.get("FileLocations", {}).get(loc_id)
      if not loc:
        return None
      names = self.tables.get("FileNames", {})
      fname = names.get(hlo_int(loc["file_name_id"], "file name id"))
      return f"{fname}:{loc['line']}"
    except (HloParseError, KeyError, TypeError):
      return None

  def source_frames(self, inst: HloInstruction) -> tuple[str, ...]:
    """An instruction's source stack, innermost first, as `file:line:column`.

    From `metadata.stack_frame_id` and the StackFrames / FileLocations /
    FileNames tables; `file:line` alone from `source_file`/`source_line`;
    () without either. The printed `parent_frame_id` is the parent's id plus
    one, 1 meaning no parent (jaxlib 0.10.2: a helper called from two lines
    gives frames `4 {file_location_id=4 parent_frame_id=4}` whose parent is
    frame 3, the calling line).
    """
    meta = inst.metadata
    if "stack_frame_id" not in meta:
      if "source_file" in meta and "source_line" in meta:
        return (f"{meta['source_file']}:{meta['source_line']}",)
      return ()
    frames, locs = (
      self.tables.get("StackFrames", {}),
      self.tables.get("FileLocations", {}),
    )
    names, out = self.tables.get("FileNames", {}), []
    frame_id = int(meta["stack_frame_id"])
    while frame_id in frames and len(out) < 64:
      loc = locs.get(int(frames[frame_id]["file_location_id"]))
      if not loc:
        break
      fname = names.get(int(loc["file_name_id"]))
      out.append(f"{fname}:{loc['line']}:{loc.get('column', 0)}")
      frame_id = int(frames[frame_id].get("parent_frame_id", 1)) - 1
    return tuple(out)
