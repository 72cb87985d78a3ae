"""What kind of module a file holds, from its contents (never its suffix).

In order: MLIR bytecode's magic "ML\\xefR" (mlir/Bytecode/Encoding.h,
`kMLIRBytecodeMagic`; plain bytecode and StableHLO portable artifacts
alike); UTF-8 text by its first meaningful line (`HloModule` for HLO text,
XLA's HloModule::ToString; `module`, `func.func` or an attribute alias
`#...` for MLIR; `name:` or a `hlo_module {` / `hlo {` / `computations {`
block for an HLO proto in text format); a binary HloModuleProto, HloProto
or HloSnapshot (`hloprobe.ir.read_proto_file`); a `jax.export` artifact
(`jax.export.deserialize` reads it: a flatbuffer without a file identifier,
so reading it is the only test; it is read in a guarded child process,
`module_guard.guarded_text`, never here: a malformed artifact can crash or
spin jaxlib's native reader).

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import re

from hloprobe import ir
from hloprobe.compile import module_guard

__all__ = ["MODULE_KINDS", "NotAModule", "Sniffed", "sniff"]

MODULE_KINDS = (
  "hlo_text",
  "hlo_proto",
  "hlo_proto_text",
  "hlo_snapshot",
  "stablehlo_text",
  "stablehlo_bytecode",
  "jax_export",
)
_MLIR_MAGIC = b"ML\xefR"
# The first meaningful line of each text kind.
_TEXT_KINDS = (
  ("hlo_text", re.compile(r"HloModule\s")),
  (
    "stablehlo_text",
    re.compile(r"(module\b|func\.func\b|#\w+\s*=|\"builtin\.module\")"),
  ),
  (
    "hlo_proto_text",
    re.compile(
      r"(name|entry_computation_name|execution_platform)\s*:|"
      r"(hlo_module|hlo|computations|arguments)\s*[:{]"
    ),
  ),
)
_COMMENT = re.compile(r"\s*(//[^\n]*|#(?!\w+\s*=)[^\n]*)?\n")
# A text file's first bytes, for messages.
_SHOWN = 40


@dataclasses.dataclass(frozen=True)
class Sniffed:
  """A file's kind, and what telling it already read.

  Attributes:
    kind: one of MODULE_KINDS.
    proto: the binary proto taken apart (hlo_proto, hlo_snapshot), else None.
    export_text: a jax.export artifact's StableHLO text, else None.
  """

  kind: str
  proto: object = None
  export_text: str | None = None


@dataclasses.dataclass(frozen=True)
class NotAModule:
  """Why a file is no module file, in words: "empty", "truncated: ..."."""

  why: str


def sniff(data: bytes) -> Sniffed | NotAModule:
  """The kind of module `data` holds.

  Raises:
    ValueError: a snapshot whose literals cannot be read; a flatbuffer
      whose guarded reading crashed, aborted or ran past its limits
      ("read as a jax.export artifact, its reader ...").
  """
  if not data.strip():
    return NotAModule("empty" if not data else "only whitespace")
  if data.startswith(_MLIR_MAGIC):
    problem = module_guard.bytecode_problem(data)
    if problem is not None:
      return NotAModule(problem)
    return Sniffed("stablehlo_bytecode")
  text = _as_text(data)
  if text is not None:
    kind = _text_kind(text)
    if isinstance(kind, Sniffed):
      # Checked before any jaxlib parser sees it (module_guard).
      mlir = kind.kind == "stablehlo_text"
      problem = module_guard.nesting_problem(data, mlir=mlir)
      if problem is None and mlir:
        problem = module_guard.strings_problem(text)
      if problem is not None:
        return NotAModule(problem)
      return kind
  found = ir.read_proto_file(data)
  if found is not None:
    return Sniffed(found.kind, proto=found)
  exported = _export_text(data)
  if exported is not None:
    return Sniffed("jax_export", export_text=exported)
  if text is not None:
    return kind
  if data[:1] in (b"\x0a", b"\x12", b"\x1a"):  # field 1, 2 or 3, bytes
    problem = ir.wire_problem(data)
    if problem is not None:
      return NotAModule(f"{problem}; not a whole HLO proto")
    return NotAModule(
      f"a protobuf ({len(data)} bytes), but not an HloModuleProto, HloProto "
      "nor HloSnapshot (no named module with an entry computation in it)"
    )
  return NotAModule(
    f"binary data ({len(data)} bytes, starting {data[:8].hex()}), not a "
    f"module file of any kind ({', '.join(MODULE_KINDS)})"
  )


def _as_text(data: bytes) -> str | None:
  if b"\0" in data[:65536]:
    return None
  try:
    return data.decode("utf-8")
  except UnicodeDecodeError:
    return None


def _text_kind(text: str) -> Sniffed | NotAModule:
  """The kind of a text file, by its first meaningful line."""
  pos = 0
  text = text.removeprefix("\ufeff")
  while m := _COMMENT.match(text, pos):
    if m.end() == pos:
      break
    pos = m.end()
  start = text[pos:].lstrip()
  for kind, pattern in _TEXT_KINDS:
    if pattern.match(start):
      return Sniffed(kind)
  first = start[:_SHOWN].split("\n")[0]
  return NotAModule(
    f"text that is neither HLO (`HloModule ...`), StableHLO (`module @...`, "
    f"`func.func`) nor an HLO proto in text format; it begins {first!r}"
  )


def _export_text(data: bytes) -> str | None:
  """A jax.export artifact's StableHLO text, or None when `data` is none.

  A flatbuffer starts with its root table's offset (uint32, little-endian),
  which must lie inside the buffer, and the root table's first word is
  the signed offset back to its vtable, which must lie inside it too;
  only then is `jax.export.deserialize` tried, in a guarded child process
  (`module_guard.guarded_text`), and its refusal means "not an artifact".

  Raises:
    ValueError: the child crashed, aborted or ran past its limits.
  """
  if not _flatbuffer_like(data):
    return None
  try:
    return module_guard.guarded_text(data, "jax_export")
  except module_guard.GuardError as e:
    if e.died:
      raise ValueError(f"read as a jax.export artifact, {e}") from None
    return None


def _flatbuffer_like(data: bytes) -> bool:
  """Whether `data` could be a flatbuffer: its root offset and the root
  table's vtable (flatbuffers' binary format: `uoffset_t` root, `soffset_t`
  vtable, `voffset_t` sizes) lie inside it."""
  if len(data) < 12:
    return False
  root = int.from_bytes(data[:4], "little")
  if root % 4 or root + 4 > len(data):
    return False
  vtable = root - int.from_bytes(data[root : root + 4], "little", signed=True)
  if vtable < 0 or vtable % 2 or vtable + 4 > len(data):
    return False
  size = int.from_bytes(data[vtable : vtable + 2], "little")
  return 4 <= size and size % 2 == 0 and vtable + size <= len(data)
