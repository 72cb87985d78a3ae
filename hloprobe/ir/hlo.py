"""HLO modules as records: XLA's own parser for the structure, the text
reader for the rest.

`parse_hlo_module(text)` reads a module (`Compiled.as_text()`,
`Lowered.as_text(dialect="hlo")`, an `xla_dump_to` pass dump) into the
`hlo_records` records. Each part comes from where it can:

From XLA's parser, `jaxlib._hlo.hlo_module_from_text` through
`private_api.xla_hlo_structure` (checked on jaxlib 0.12.0.1 and 0.10.2):
  * which computations the module has, in XLA's order;
  * each computation's instructions, in XLA's order;
  * each instruction's opcode (as HLO text spells it) and its operands.

From the text (`hlo_text`), because XLA's Python bindings do not give it:
  * the header (module name and attributes) and the FileNames /
    FunctionNames / FileLocations / StackFrames tables;
  * the ENTRY and ROOT marks (no entry_computation or root_instruction);
  * shapes: `HloInstruction.shape` exists on 0.12.0.1 only, so both
    releases read the printed shape and their records agree;
  * the literal of constant / parameter / iota, and every attribute as its
    printed text: operand_precision, algorithm, backend_config, metadata,
    custom_call_target, dimension numbers, the called computations
    (calls=, to_apply=, ...). On 0.12.0.1 `as_serialized_proto` holds them,
    but decoding an HloInstructionProto needs XLA's generated protobuf
    classes, which jaxlib does not ship.

The text reader reads the whole module alone (a fallback that gives the
same records) where:
  * this jaxlib has no `hlo_module_from_text`, or its parser rejects the
    text (jaxlib 0.10.2 on the compact `%t#1` operands of 0.12.0.1's pass
    dumps; a module from a newer XLA);
  * an instruction's metadata names a stack frame the StackFrames table
    lacks (pass dumps of a fused computation print the ids, not the table):
    XLA's parser then logs "Invalid stack_frame_id" on stderr
    (xla/hlo/ir/hlo_module.cc), which would reach the user's terminal;
  * XLA's instructions are not the text's, name for name (other than
    compact get-tuple-elements, below).

Compact get-tuple-elements (see `hlo_text`): jaxlib 0.12.0.1's parser
creates the element of `%t#1` as `t_1`; records keep the printed name
`t#1`, as the text reader gives it, so XLA's name is mapped back.

tests/ir/hlo_text_test.py checks that both readings give equal records on
every recorded HLO fixture and golden, under both jaxlibs. The text is
always read first: text it cannot read is an `HloParseError`, as before.

Private in intent: use the package, `hloprobe.ir`.
"""

from __future__ import annotations

import dataclasses
import functools

from hloprobe import private_api
from hloprobe.ir.hlo_records import HLO_DTYPES as HLO_DTYPES
from hloprobe.ir.hlo_records import HloComputation as HloComputation
from hloprobe.ir.hlo_records import HloInstruction as HloInstruction
from hloprobe.ir.hlo_records import HloModule as HloModule
from hloprobe.ir.hlo_records import Shape as Shape
from hloprobe.ir.hlo_records import braced_fields
from hloprobe.ir.hlo_text import parse_instruction as parse_instruction
from hloprobe.ir.hlo_text import parse_shape as parse_shape
from hloprobe.ir.hlo_text import parse_text_module
from hloprobe.ir.hlo_text import split_top_level as split_top_level

__all__ = [
  "HLO_DTYPES",
  "HloComputation",
  "HloInstruction",
  "HloModule",
  "Shape",
  "parse_hlo_module",
  "parse_instruction",
  "parse_shape",
  "split_top_level",
  "with_xla_structure",
]


def parse_hlo_module(
  text: str, memo: dict[str, HloInstruction] | None = None
) -> HloModule:
  """Parses the text of one HLO module (module docstring: what comes from
  XLA's parser, what from the text).

  Args:
    text: HLO text as printed by `Compiled.as_text()` or
      `Lowered.as_text(dialect="hlo")`, or an XLA pass dump.
    memo: None, or a dict the caller passes to each call on texts that
      share most lines (XLA's pass dumps of one compile): the lines of the
      text read last are not read again (`hlo_text.parse_text_module`);
      the result is the same.

  Returns:
    An `HloModule` record.

  Raises:
    HloParseError: the text has no `HloModule` header, no ENTRY computation,
      an instruction outside a computation, or a malformed line.
  """
  module = parse_text_module(text, memo)
  return with_xla_structure(module, text) or module


def with_xla_structure(module: HloModule, text: str) -> HloModule | None:
  """`module` (the text reader's records of `text`) with its computations,
  instructions, opcodes and operands as XLA's parser reads `text`.

  Returns:
    The records, or None where XLA's parser is not used (the fallback cases
    of the module docstring).
  """
  if _names_unknown_frames(module):
    return None
  structure = private_api.xla_hlo_structure(text)
  if structure is None:
    return None
  if sorted(c.name for c in structure) != sorted(module.computations):
    return None
  computations = {}
  for xla in structure:
    ours = module.computations[xla.name]
    rename = _xla_to_printed_names(ours, xla)
    if rename is None:
      return None
    by_name = ours.by_name()
    instructions = tuple(
      _with_structure(
        by_name[rename.get(i.name, i.name)],
        i.opcode,
        tuple(rename.get(o, o) for o in i.operands) if rename else i.operands,
      )
      for i in xla.instructions
    )
    computations[xla.name] = (
      ours
      if instructions == ours.instructions
      else HloComputation(xla.name, instructions, ours.is_entry)
    )
  return dataclasses.replace(module, computations=computations)


def _with_structure(
  inst: HloInstruction, opcode: str, operands: tuple[str, ...]
) -> HloInstruction:
  """`inst` with XLA's opcode and operands (`inst` itself where they are
  its own: an equal record, made faster)."""
  if inst.opcode == opcode and inst.operands == operands:
    return inst
  return dataclasses.replace(inst, opcode=opcode, operands=operands)


def _xla_to_printed_names(
  ours: HloComputation, xla: private_api.XlaComputation
) -> dict[str, str] | None:
  """XLA's name of each compact get-tuple-element to its printed `t#i`
  name; None when the instructions differ otherwise."""
  if len(ours.instructions) != len(xla.instructions):
    return None
  rename = {}
  for printed, parsed in zip(ours.instructions, xla.instructions):
    if printed.name == parsed.name:
      continue
    if (
      "#" not in printed.name
      or printed.opcode != "get-tuple-element"
      or parsed.opcode != "get-tuple-element"
    ):
      return None
    rename[parsed.name] = printed.name
  return rename


def _names_unknown_frames(module: HloModule) -> bool:
  """Whether an instruction's metadata names a `stack_frame_id` the
  module's StackFrames table lacks (XLA's parser would log it)."""
  frames = module.tables.get("StackFrames", {})
  for _, inst in module.all_instructions():
    raw = inst.attrs.get("metadata", "")
    if "stack_frame_id" not in raw:
      continue
    frame = _frame_id(raw)
    if frame is not None and (not frame.isdigit() or int(frame) not in frames):
      return True
  return False


@functools.lru_cache(maxsize=4096)
def _frame_id(metadata: str):
  """The `stack_frame_id` of a `metadata={...}` text (`HloInstruction.
  metadata`'s), or None: the pass dumps of a compile repeat their metadata."""
  return braced_fields(metadata).get("stack_frame_id")
