"""The text reader of HLO modules, as XLA prints them.

It takes the text of `Compiled.as_text()` (the optimized HLO), of
`Lowered.as_text(dialect="hlo")` or of an `xla_dump_to` pass dump and gives
`hlo_records` records, importing no JAX. `hloprobe.ir.hlo` says which of
its parts come from XLA's own parser instead and when. The grammar is the
one of XLA's `HloModule::ToString` (xla/hlo/ir/hlo_module.cc,
hlo_instruction.cc), checked on jaxlib 0.10.2 and 0.12.0.1:

  HloModule <name>, <attr>=<value>, ...
  FileNames / FunctionNames / FileLocations / StackFrames tables (optional)
  [ENTRY] %<computation> (<params>) -> <shape> {
    [ROOT] %<name> = <shape> <opcode>(<operands>), <attr>=<value>, ...
  }

Compact tuple operands: XLA's dumps print an operand that is a
`get-tuple-element` of a tuple as `%tuple#index` (`%arg_tuple.1#1`, nested
`%p#1#0`) and leave the get-tuple-element instruction out
(xla/service/dump.cc: `print_options.set_compact_gte(debug_options.
xla_dump_compact_gte())`, flag added 2026-06-15). Seen in every
`xla_dump_hlo_pass_re` dump of jaxlib 0.12.0.1, never in its
`Compiled.as_text()`, nor anywhere on jaxlib 0.10.2. The reader gives each
such operand back its instruction: a `get-tuple-element` named as the operand
is printed (`arg_tuple.1#1`, a name XLA never gives, `#` not being allowed in
its names), with `index=` and the element's shape, placed before its first
use (`_expand_compact_gte`), so every consumer sees the long form.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

import functools
import re

from hloprobe.errors import HloParseError
from hloprobe.ir.hlo_records import (
  HLO_DTYPES,
  HloComputation,
  HloInstruction,
  HloModule,
  Shape,
  braced_fields,
  hlo_int,
  json_value,
)

__all__ = [
  "parse_instruction",
  "parse_shape",
  "parse_text_module",
  "split_top_level",
]

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


def _uncommented(text: str) -> str:
  """`text` without its `/* ... */` comments."""
  return _COMMENT_RE.sub("", text) if "/*" in text else text


def parse_shape(text: str) -> Shape:
  """Parses an HLO shape such as `f32[2,48]{1,0}` or `(f32[2], s32[])`.

  Raises:
    HloParseError: the text is not an HLO shape.
  """
  text = _uncommented(text).strip()
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


# A quoted string (a backslash escapes the next character), a quote that
# opens no closed string, or a character that one of the scans below reads.
_STRING = r'"(?:[^"\\]|\\.)*"|(")'
_PARENS_RE = re.compile(_STRING + r"|[()]", re.S)


@functools.lru_cache(maxsize=16)
def _brackets_re(sep: str) -> re.Pattern:
  """Strings, unclosed quotes, brackets and `sep` (`split_top_level`)."""
  return re.compile(_STRING + "|[" + re.escape("()[]{}" + sep) + "]", re.S)


def split_top_level(text: str, sep: str = ",") -> list[str]:
  """Splits `text` at `sep` outside brackets, braces, parens and strings,
  each part stripped: "a, f(b, c), {d}" -> ["a", "f(b, c)", "{d}"].

  Raises:
    HloParseError: unbalanced brackets or an unterminated string.
  """
  parts, depth, start = [], 0, 0
  for m in _brackets_re(sep).finditer(text):
    c = m.group()
    if c[0] == '"':  # a string, skipped
      if m.group(1) is not None:  # no closing quote up to the end
        raise HloParseError(f"[hloprobe] unterminated string in {text!r}")
    elif c in "([{":
      depth += 1
    elif c in ")]}":
      depth -= 1
    elif c == sep and depth == 0:
      parts.append(text[start : m.start()].strip())
      start = m.end()
  if depth != 0:
    raise HloParseError(f"[hloprobe] unbalanced brackets or quotes in {text!r}")
  parts.append(text[start:].strip())
  return parts


def _matching_paren(text: str, open_at: int) -> int:
  """Index of the parenthesis closing the one at `open_at` (strings
  skipped).

  Raises:
    HloParseError: none closes it, or a string is not closed before.
  """
  depth = 0
  for m in _PARENS_RE.finditer(text, open_at):
    c = m.group()
    if c[0] == '"':  # a string, skipped
      if m.group(1) is not None:  # no closing quote up to the end
        raise HloParseError(f"[hloprobe] unterminated string in {text!r}")
    elif c == "(":
      depth += 1
    else:
      depth -= 1
      if depth == 0:
        return m.start()
  raise HloParseError(f"[hloprobe] unbalanced parentheses in {text!r}")


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
  for part in split_top_level(_uncommented(text)):
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


@functools.lru_cache(maxsize=4096)
def _parse_table_row(table: str, line: str) -> tuple[int, object]:
  """One row of a FileNames / FunctionNames / FileLocations / StackFrames
  table: (id, its value). Kept per (table, line), since every module of a
  compile, and each of its pass dumps, repeats its tables.

  Raises:
    HloParseError: a row XLA does not print (not cached).
  """
  key, _, value = line.strip().partition(" ")
  value = value.strip()
  if table in ("FileNames", "FunctionNames"):
    return hlo_int(key, f"{table} row key"), json_value(value)
  return hlo_int(key, f"{table} row key"), braced_fields(value)


def parse_text_module(
  text: str, memo: dict[str, HloInstruction] | None = None
) -> HloModule:
  """Parses the text of one HLO module, from the text alone.

  `hlo.parse_hlo_module` is the reader to call: it runs this one, then
  takes the structure from XLA's parser where it can.

  Args:
    text: HLO text as printed by `Compiled.as_text()` or
      `Lowered.as_text(dialect="hlo")`.
    memo: None, or instruction line (comments removed, stripped) -> its
      record, kept by the caller from one call to the next: a line found
      there is not read again, and a successful call leaves there the lines
      of `text` alone. A line's record is a function of the line (its
      number only enters error messages), and records are frozen, so the
      result is the same with or without it.

  Returns:
    An `HloModule` record.

  Raises:
    HloParseError: the text has no `HloModule` header, no ENTRY computation,
      an instruction outside a computation, or a malformed line.
  """
  known, read = memo if memo is not None else {}, {}
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
    line = _uncommented(raw).strip()
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
    inst = known.get(line)
    if inst is None:
      try:
        inst = parse_instruction(line, lineno)
      except RecursionError:  # e.g. a tuple shape nested 1,000 deep
        raise HloParseError(
          f"[hloprobe] line {lineno}: nested too deeply to parse"
        ) from None
    insts.append(inst)
    read[line] = inst
  if current is not None:
    raise HloParseError(
      f"[hloprobe] computation {current[0]!r} is not closed (truncated text?)"
    )
  if entry is None:
    raise HloParseError("[hloprobe] the module has no ENTRY computation")
  if memo is not None:
    memo.clear()
    memo.update(read)
  return HloModule(
    hm.group(1), hm.group(2).strip(", "), computations, entry, tables
  )
