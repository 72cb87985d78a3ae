"""Text-to-records parsing of HLO modules, as XLA prints them.

This module imports no JAX: it takes the text of `Compiled.as_text()` (the
optimized HLO) or of `Lowered.as_text(dialect="hlo")` and returns immutable
records. The grammar it accepts is the one of XLA's `HloModule::ToString`
(xla/hlo/ir/hlo_module.cc, hlo_instruction.cc), checked on jaxlib 0.10.2
and 0.12.0.1:

  HloModule <name>, <attr>=<value>, ...
  FileNames / FunctionNames / FileLocations / StackFrames tables (optional)
  [ENTRY] %<computation> (<params>) -> <shape> {
    [ROOT] %<name> = <shape> <opcode>(<operands>), <attr>=<value>, ...
  }

Attribute values are kept as raw text (so a printer can write them back) and
interpreted on demand: `metadata`, `backend_config` (JSON), called
computations, and dot dimension numbers.

Compact tuple operands: XLA's dumps print an operand that is a
`get-tuple-element` of a tuple as `%tuple#index` (`%arg_tuple.1#1`, nested
`%p#1#0`) and leave the get-tuple-element instruction out
(xla/service/dump.cc: `print_options.set_compact_gte(debug_options.
xla_dump_compact_gte())`, flag added 2026-06-15). Seen in every
`xla_dump_hlo_pass_re` dump of jaxlib 0.12.0.1, never in its
`Compiled.as_text()`, nor anywhere on jaxlib 0.10.2. The parser gives each
such operand back its instruction: a `get-tuple-element` named as the operand
is printed (`arg_tuple.1#1`, a name XLA never gives, `#` not being allowed in
its names), with `index=` and the element's shape, placed before its first
use (`_expand_compact_gte`), so every consumer sees the long form.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping

from hloprobe.errors import HloParseError

__all__ = [
  "HLO_DTYPES",
  "HloComputation",
  "HloInstruction",
  "HloModule",
  "Shape",
  "parse_hlo_module",
  "parse_shape",
  "split_top_level",
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
_ARRAY_SHAPE_RE = re.compile(
  rf"^({'|'.join(sorted(HLO_DTYPES, key=len, reverse=True))})"
  r"\[([^\]]*)\](\{[^}]*\})?$"
)
_COMMENT_RE = re.compile(r"/\*.*?\*/")
_HEADER_RE = re.compile(r"^HloModule\s+([^\s,]+)(.*)$")
_COMPUTATION_RE = re.compile(
  r"^(ENTRY\s+)?%?([^\s(]+)\s*(\(.*\)\s*->.*?)?\s*\{$"
)
_INSTRUCTION_RE = re.compile(r"^(ROOT\s+)?%?([^\s=]+)\s*=\s*(.*)$")
_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
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
    return self.dtype == "tuple"

  def __str__(self) -> str:
    if self.is_tuple:
      return "(" + ", ".join(str(e) for e in self.elements) + ")"
    return f"{self.dtype}[{','.join(map(str, self.dims))}]"


def parse_shape(text: str) -> Shape:
  """Parses an HLO shape such as `f32[2,48]{1,0}` or `(f32[2], s32[])`.

  Raises:
    HloParseError: the text is not an HLO shape.
  """
  text = _COMMENT_RE.sub("", text).strip()
  if text.startswith("(") and text.endswith(")"):
    inner = text[1:-1].strip()
    parts = split_top_level(inner) if inner else []
    return Shape("tuple", elements=tuple(parse_shape(p) for p in parts))
  m = _ARRAY_SHAPE_RE.match(text)
  if not m:
    raise HloParseError(
      f"[hloprobe] bad shape {text!r}; expected e.g. 'bf16[8,128]{{1,0}}'"
    )
  dims_text = m.group(2).replace("<=", "").strip()
  try:
    dims = tuple(int(d) for d in dims_text.split(",")) if dims_text else ()
  except ValueError as e:
    raise HloParseError(f"[hloprobe] bad dimensions in shape {text!r}") from e
  return Shape(m.group(1), dims, m.group(3))


def _outside_strings(text: str, start: int = 0):
  """Yields (index, char) of `text` from `start`, skipping quoted strings."""
  in_str, i = False, start
  while i < len(text):
    c = text[i]
    if in_str:
      if c == "\\":
        i += 1
      elif c == '"':
        in_str = False
    elif c == '"':
      in_str = True
    else:
      yield i, c
    i += 1
  if in_str:
    raise HloParseError(f"[hloprobe] unterminated string in {text!r}")


def split_top_level(text: str, sep: str = ",") -> list[str]:
  """Splits `text` at `sep` outside brackets, braces, parens and strings."""
  parts, depth, start = [], 0, 0
  for i, c in _outside_strings(text):
    if c in "([{":
      depth += 1
    elif c in ")]}":
      depth -= 1
    elif c == sep and depth == 0:
      parts.append(text[start:i].strip())
      start = i + 1
  if depth != 0:
    raise HloParseError(f"[hloprobe] unbalanced brackets or quotes in {text!r}")
  parts.append(text[start:].strip())
  return parts


def _matching_paren(text: str, open_at: int) -> int:
  """Index of the parenthesis closing the one at `open_at`."""
  depth = 0
  for i, c in _outside_strings(text, open_at):
    if c == "(":
      depth += 1
    elif c == ")":
      depth -= 1
      if depth == 0:
        return i
  raise HloParseError(f"[hloprobe] unbalanced parentheses in {text!r}")


def _parse_braced_fields(text: str) -> dict[str, str]:
  """Parses `{key=value key="v w" ...}` (metadata, table rows) into a dict."""
  body = text.strip()
  if body.startswith("{") and body.endswith("}"):
    body = body[1:-1]
  out = {}
  for m in re.finditer(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', body):
    value = m.group(2)
    out[m.group(1)] = _json_string(value) if value.startswith('"') else value
  return out


def _json_string(text: str):
  """A JSON value printed in HLO text; HloParseError when it is not JSON."""
  try:
    return json.loads(text)
  except (json.JSONDecodeError, RecursionError) as e:
    raise HloParseError(f"[hloprobe] bad JSON {text[:60]!r}: {e}") from None


def _int(text: str, what: str) -> int:
  """An integer printed in HLO text; HloParseError when it is not one."""
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
    if self.opcode != "parameter" or self.literal is None:
      return None
    return _int(self.literal, "parameter number")

  @property
  def metadata(self) -> dict[str, str]:
    """The `metadata={...}` fields (op_name, stack_frame_id, ...)."""
    raw = self.attrs.get("metadata")
    return _parse_braced_fields(raw) if raw else {}

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
  def called_computations(self) -> tuple[str, ...]:
    """Names of the computations this instruction calls (fusions, reduces)."""
    names = []
    for key in _CALLED_ATTRS:
      raw = self.attrs.get(key)
      if raw:
        names += [n.strip().lstrip("%") for n in raw.strip("{}").split(",")]
    return tuple(n for n in names if n)

  def dims_attr(self, key: str) -> tuple[int, ...]:
    """An integer-list attribute such as `lhs_contracting_dims={1}`."""
    raw = self.attrs.get(key, "{}").strip("{}")
    return tuple(_int(d, key) for d in raw.split(",") if d.strip())

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
    return {i.name: i for i in self.instructions}

  @property
  def root(self) -> HloInstruction:
    for inst in self.instructions:
      if inst.is_root:
        return inst
    return self.instructions[-1]

  def parameters(self) -> dict[int, HloInstruction]:
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
    return self.computations[self.entry_name]

  def all_instructions(self) -> Iterator[tuple[HloComputation, HloInstruction]]:
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
      frame = frames.get(_int(meta.get("stack_frame_id", ""), "frame id"))
      if frame is None:
        return None
      loc_id = _int(frame["file_location_id"], "file location id")
      loc = self.tables.get("FileLocations", {}).get(loc_id)
      if not loc:
        return None
      names = self.tables.get("FileNames", {})
      fname = names.get(_int(loc["file_name_id"], "file name id"))
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


def parse_instruction(line: str, lineno: int = 0) -> HloInstruction:
  """Parses one instruction line such as `%d = f32[2]{0} dot(%a, %b), ...`.

  Raises:
    HloParseError: the line is not an HLO instruction.
  """
  m = _INSTRUCTION_RE.match(line.strip())
  if not m:
    raise HloParseError(
      f"[hloprobe] line {lineno}: not an instruction: {line!r}"
    )
  is_root, name, rest = bool(m.group(1)), m.group(2), m.group(3)
  shape_end = _shape_end(rest, lineno)
  shape = parse_shape(rest[:shape_end])
  rest = rest[shape_end:].strip()
  op = re.match(r"([\w\-]+)\(", rest)
  if not op:
    raise HloParseError(f"[hloprobe] line {lineno}: no opcode in {line!r}")
  close = _matching_paren(rest, op.end() - 1)
  args_text = rest[op.end() : close]
  operands, literal = _parse_operands(op.group(1), args_text)
  attrs = {}
  tail = rest[close + 1 :].strip()
  if tail:
    if not tail.startswith(","):
      raise HloParseError(
        f"[hloprobe] line {lineno}: junk after operands: {tail!r}"
      )
    for item in split_top_level(tail[1:]):
      key, eq, value = item.partition("=")
      if not eq:
        raise HloParseError(f"[hloprobe] line {lineno}: bad attribute {item!r}")
      attrs[key.strip()] = value.strip()
  return HloInstruction(
    name, op.group(1), shape, operands, literal, attrs, is_root
  )


def _shape_end(rest: str, lineno: int) -> int:
  """End index of the leading shape in `<shape> <opcode>(...)`."""
  if rest.startswith("("):
    return _matching_paren(rest, 0) + 1
  m = re.match(r"[\w]+\[[^\]]*\](\{[^}]*\})?", rest)
  if not m:
    raise HloParseError(f"[hloprobe] line {lineno}: bad shape in {rest[:60]!r}")
  return m.end()


_LITERAL_OPCODES = ("constant", "parameter", "iota", "rng-get-and-update-state")


def _parse_operands(
  opcode: str, text: str
) -> tuple[tuple[str, ...], str | None]:
  if opcode in _LITERAL_OPCODES:
    return (), text.strip()
  if not text.strip():
    return (), None
  names = []
  for part in split_top_level(_COMMENT_RE.sub("", text)):
    # Operands print as `%name` or, in long form, `f32[2]{0} %name`.
    if not part.split():
      raise HloParseError(f"[hloprobe] empty operand in ({text[:60]})")
    names.append(part.split()[-1].lstrip("%"))
  return tuple(names), None


def _expand_compact_gte(
  insts: list[HloInstruction], computation: str
) -> list[HloInstruction]:
  """`insts` with a `get-tuple-element` for each compact operand `%t#i`.

  See the module docstring (xla_dump_compact_gte; jaxlib 0.12.0.1 pass
  dumps). Each `t#i` (and `t#i#j`, the element j of `t#i`) gets one
  instruction named as printed, before its first user, whose shape is the
  element's of `t`'s tuple shape.

  Raises:
    HloParseError: `t` is not an instruction of the computation, not a
      tuple, or has no element i.
  """
  if not any("#" in o for inst in insts for o in inst.operands):
    return insts
  shapes = {inst.name: inst.shape for inst in insts}
  out: list[HloInstruction] = []
  for inst in insts:
    for operand in inst.operands:
      if "#" in operand:
        _add_gte(operand, shapes, out, computation)
    out.append(inst)
  return out


def _add_gte(ref: str, shapes: dict, out: list, computation: str) -> None:
  """Appends to `out` each get-tuple-element of `ref` (`t#i#j`) not known."""
  name, *indices = ref.split("#")
  for index in indices:
    element = f"{name}#{index}"
    if element not in shapes:
      whole = shapes.get(name)
      if (
        whole is None
        or not whole.is_tuple
        or not re.fullmatch(r"[0-9]{1,9}", index)
        or int(index) >= len(whole.elements)
      ):
        raise HloParseError(
          f"[hloprobe] computation {computation!r}: operand %{ref} is no "
          f"element of a tuple instruction (%{name}: {whole}); expected e.g. "
          "'%p#1' with %p a tuple of at least 2 elements"
        )
      shapes[element] = whole.elements[int(index)]
      out.append(
        HloInstruction(
          element,
          "get-tuple-element",
          shapes[element],
          (name,),
          None,
          {"index": index},
        )
      )
    name = element


def _parse_table_row(table: str, line: str) -> tuple[int, object]:
  key, _, value = line.strip().partition(" ")
  value = value.strip()
  if table in ("FileNames", "FunctionNames"):
    return _int(key, f"{table} row key"), _json_string(value)
  return _int(key, f"{table} row key"), _parse_braced_fields(value)


def parse_hlo_module(text: str) -> HloModule:
  """Parses the text of one HLO module.

  Args:
    text: HLO text as printed by `Compiled.as_text()` or
      `Lowered.as_text(dialect="hlo")`.

  Returns:
    An `HloModule` record.

  Raises:
    HloParseError: the text has no `HloModule` header, no ENTRY computation,
      an instruction outside a computation, or a malformed line.
  """
  lines = text.splitlines()
  header = next((l for l in lines if l.strip()), "")
  hm = _HEADER_RE.match(header.strip())
  if not hm:
    raise HloParseError(
      f"[hloprobe] not an HLO module: first line {header[:60]!r}; "
      "expected 'HloModule <name>, ...'"
    )
  computations, tables, entry = {}, {t: {} for t in _TABLES}, None
  current, insts, table = None, [], None
  for lineno, raw in enumerate(lines[lines.index(header) + 1 :], start=2):
    line = _COMMENT_RE.sub("", raw).strip()
    if not line:
      table = None if current is None else table
      continue
    if current is None and line in _TABLES:
      table = line
      continue
    if current is None and table is not None:
      k, v = _parse_table_row(table, line)
      tables[table][k] = v
      continue
    if current is None:
      cm = _COMPUTATION_RE.match(line)
      if not cm:
        raise HloParseError(
          f"[hloprobe] line {lineno}: expected a computation, got {line[:60]!r}"
        )
      current, insts = (cm.group(2), bool(cm.group(1))), []
      continue
    if line == "}":
      name, is_entry = current
      if not insts:
        raise HloParseError(
          f"[hloprobe] line {lineno}: empty computation {name!r}"
        )
      insts = _expand_compact_gte(insts, name)
      computations[name] = HloComputation(name, tuple(insts), is_entry)
      entry = name if is_entry else entry
      current = None
      continue
    try:
      insts.append(parse_instruction(line, lineno))
    except RecursionError:  # e.g. a tuple shape nested 1,000 deep
      raise HloParseError(
        f"[hloprobe] line {lineno}: nested too deeply to parse"
      ) from None
  if current is not None:
    raise HloParseError(
      f"[hloprobe] computation {current[0]!r} is not closed (truncated text?)"
    )
  if entry is None:
    raise HloParseError("[hloprobe] the module has no ENTRY computation")
  return HloModule(
    hm.group(1), hm.group(2).strip(", "), computations, entry, tables
  )
