"""Module files as cases: HLO text, HloModuleProto, HloSnapshot, StableHLO,
jax.export artifacts, read by their contents into one `ModuleFile` record.

What a bug report attaches, and how each becomes StableHLO (what jax and
XLA compile):

  hlo_text            `HloModule name, ...` (an `--xla_dump_to` folder's
                      `*.before_optimizations.txt` / `*after_optimizations.txt`)
                      -> XLA's HLO parser -> HloModuleProto
  hlo_proto           a binary HloModuleProto, or the HloProto around one
                      (`--xla_dump_hlo_as_proto`'s `*.hlo.pb`)
  hlo_snapshot        a binary HloSnapshot (`--xla_dump_hlo_snapshots`'
                      `*.snapshot.*.pb`: the module, its arguments, result)
  hlo_proto_text      an HloModuleProto, HloProto or HloSnapshot in protobuf
                      text format, read with XLA's schema as jaxlib embeds
                      it (`ir.read_proto_file` of the text), then as binary
  stablehlo_text      MLIR text: `module @...`, `func.func`
  stablehlo_bytecode  MLIR bytecode or a StableHLO portable artifact
                      (magic "ML\\xefR")
  jax_export          `jax.export.Exported.serialize()` (a flatbuffer that
                      `jax.export.deserialize` reads; its `mlir_module()`)

An HloModuleProto becomes StableHLO by `jax.extend.mlir.hlo_to_stablehlo`
(jax 0.10.2 and 0.12.0.1), and HLO text by XLA's own printer
(`private_api.hlo_proto_to_text`). The pieces that need no JAX runtime are
`hloprobe.ir`'s (xla_proto, stablehlo_module); private jaxlib calls are
`hloprobe.private_api`'s.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re

import numpy as np

from hloprobe import private_api
from hloprobe.compile import module_guard, module_sniff
from hloprobe.errors import HloParseError, ModuleFileError
from hloprobe.ir import InputFile

__all__ = [
  "MAX_MODULE_BYTES",
  "MODULE_KINDS",
  "ModuleFile",
  "OptimizedModule",
  "is_module_file",
  "optimized_module",
  "read_module_file",
  "unknown_custom_calls",
  "unoptimized_twin",
]

# An XLA dump's file name: module_NNNN.<name>.<stage>.txt.
_DUMP_NAME = re.compile(r"(module_\d+)\.")

# The largest module file read, in bytes (256 MiB): bug-report modules with
# an HloSnapshot's arguments run to tens of MiB; a file over this is refused
# in one line rather than read into memory.
MAX_MODULE_BYTES = 256 * 1024 * 1024

# The kinds of module file, as `ModuleFile.kind` names them.
MODULE_KINDS = module_sniff.MODULE_KINDS

# Custom-call targets something downstream consumes though XLA:CPU's
# registry does not list them: those XLA's `ShardingRemover` pass drops
# (xla/service/sharding_remover.cc, `ShardingRemover::Run`: the sharding
# annotations and Shardy's round-trip calls, xla/service/spmd/shardy/
# constants.h; hloprobe's executor passes the first three through), and
# the GPU library calls hloprobe's executor computes or names as not
# executed (`hloprobe.execute`), matched by prefix.
_PASS_TARGETS = (
  "Sharding",
  "SPMDFullToShardShape",
  "SPMDShardToFullShape",
  "xla.sdy.FuncResultSharding",
  "xla.sdy.ShardingGroup",
)
_EXECUTED_PREFIXES = ("__cublas$", "__cudnn$")
# What marks an after-optimizations module in its HLO text: the header's
# `is_scheduled=true` (HloModule::ToString after scheduling), a fusion
# instruction, or a cuBLAS/cuDNN-convolution call or Triton fusion, which
# XLA's GPU passes make (a cuDNN attention call `__cudnn$fmha...` is jax's
# own lowering, in unoptimized modules too).
_SCHEDULED = re.compile(r"\A[^\n]*\bis_scheduled=true")
_OPTIMIZED = re.compile(
  r"\sfusion\(.*?\bkind=k|custom_call_target=\"__(?:cublas\$|cudnn\$conv|triton)"
)
_HLO_TARGET = re.compile(r'custom_call_target="([^"]*)"')
_MLIR_TARGET = re.compile(
  r'stablehlo\.custom_call\s+@([\w$.\-]+)|call_target_name\s*=\s*"([^"]*)"'
)


@dataclasses.dataclass(frozen=True)
class ModuleFile:
  """One module file read whole; picklable (it goes to worker processes).

  Attributes:
    path: the file's path as the user gave it.
    kind: one of `MODULE_KINDS`, from the file's contents (not its suffix).
    name: the module's name (HloModule name, or the StableHLO module's
      `sym_name`; the file's base name where it has none), for the case's
      name.
    stablehlo: the module as StableHLO text (MLIR, with locations; every
      dot a `stablehlo.dot_general`), what jax/XLA compile; "" for an
      optimized module XLA cannot translate (it is executed, not compiled).
    hlo_text: the HLO text where the input is HLO (the file's own text, or
      XLA's printing of a proto or snapshot); None for StableHLO and
      jax.export inputs.
    optimized: True for an after-optimizations module (scheduled, fusion
      computations, `__cublas`/`__cudnn`/`__triton` calls): executed as it
      stands, not compiled again.
    parameters: the entry computation's parameters in order, each
      (dims, dtype name as HLO writes it: "f32", "bf16", "s8", "pred").
    arguments: an HloSnapshot's arguments, one array per parameter
      (ml_dtypes dtypes for bf16/fp8); None when the file holds none.
    result: an HloSnapshot's recorded result, its tuple's leaves in order
      (one array for a non-tuple result); None when the file holds none.
  """

  path: str
  kind: str
  name: str
  stablehlo: str
  hlo_text: str | None
  optimized: bool
  parameters: tuple[tuple[tuple[int, ...], str], ...]
  arguments: tuple[np.ndarray, ...] | None
  result: tuple[np.ndarray, ...] | None


def read_module_file(
  path: str, *, max_bytes: int = MAX_MODULE_BYTES
) -> ModuleFile:
  """Reads a module file of any kind in `MODULE_KINDS`, by its contents.

  Args:
    path: the file, as the user gave it.
    max_bytes: the largest file read, in bytes (default 256 MiB).

  Returns:
    The ModuleFile.

  Raises:
    ModuleFileError: one line naming the file and what is wrong: cannot be
      read, a directory, over `max_bytes`, empty, not a module of any
      kind, a truncated proto, text XLA's or MLIR's parser rejects (its
      first message, with line:col), a snapshot whose arguments do not
      match the module's parameters.
  """
  what = f"module file {path!r}"
  data = InputFile(
    path, what, ModuleFileError, max_bytes, limit_for="module files"
  ).read_bytes()
  try:
    kind = module_sniff.sniff(data)
  except ValueError as e:  # a snapshot's literals; a guarded reader's death
    raise ModuleFileError(f"{what}: {_one_line(str(e))}") from None
  if isinstance(kind, module_sniff.NotAModule):
    hint = ""
    if path.endswith(".py"):  # a program, given without its factory
      hint = f"; a Python file is a case as {path}:FACTORY"
    raise ModuleFileError(f"{what}: {kind.why}{hint}")
  try:
    return _read(path, kind, data)
  except (HloParseError, ValueError, module_guard.GuardError) as e:
    raise ModuleFileError(f"{what}: {_one_line(str(e))}") from None


def _one_line(text: str) -> str:
  """The first line of a message, whitespace folded; "[hloprobe] " off."""
  lines = text.strip().splitlines() or ["(no message)"]
  return " ".join(lines[0].removeprefix("[hloprobe] ").split())


def _read(path: str, kind: module_sniff.Sniffed, data: bytes) -> ModuleFile:
  """The ModuleFile of a sniffed file; ValueError / HloParseError for what
  is wrong in it (read_module_file words them)."""
  from hloprobe import ir

  if kind.kind == "hlo_text":
    text = data.decode("utf-8")
    proto = _hlo_proto(text)
    return _from_hlo(path, kind.kind, proto, text, None, None)
  if kind.kind in ("hlo_proto", "hlo_snapshot"):
    return _from_proto(path, kind.kind, kind.proto)
  if kind.kind == "hlo_proto_text":
    found = ir.read_proto_file(
      data.decode("utf-8"), private_api.jaxlib_embedded
    )
    if found is None:
      raise ValueError("an HLO proto in text format, but with no module in it")
    return _from_proto(path, kind.kind, found)
  if kind.kind == "jax_export":
    source: str | bytes = _checked_text(kind.export_text, mlir=True)
  elif kind.kind == "stablehlo_text":
    source = data.decode("utf-8")
  else:  # bytecode: only its guarded child reads it (module_guard)
    source = _checked_text(
      module_guard.guarded_text(data, "stablehlo_bytecode"), mlir=True
    )
  module = ir.read_stablehlo_module(source)
  return ModuleFile(
    path=path,
    kind=kind.kind,
    name=module.name or _base_name(path),
    stablehlo=module.text,
    hlo_text=None,
    optimized=False,
    parameters=module.parameters,
    arguments=None,
    result=None,
  )


def _from_proto(path: str, kind: str, found) -> ModuleFile:
  """A ModuleFile from a proto taken apart (`ir.ProtoFile`). The untrusted
  proto is printed as HLO text in a guarded child (module_guard); that
  text, checked, is parsed here into the proto used from then on."""
  text = _checked_text(
    module_guard.guarded_text(found.module_proto, "hlo_proto"), mlir=False
  )
  proto = _hlo_proto(text)
  return _from_hlo(path, kind, proto, text, found.arguments, found.result)


def _checked_text(text: str, mlir: bool) -> str:
  """A guarded child's text, its nesting (and, for MLIR, its strings:
  UTF-8) checked before a parser here."""
  problem = module_guard.nesting_problem(text.encode(), mlir=mlir)
  if problem is None and mlir:
    problem = module_guard.strings_problem(text)
  if problem is not None:
    raise ValueError(problem)
  return text


def _base_name(path: str) -> str:
  return os.path.basename(path).split(".")[0] or "module"


def _hlo_proto(text: str) -> bytes:
  """HLO text as an HloModuleProto, by XLA's parser.

  Raises:
    ValueError: XLA's parser's first error, "HLO text does not parse: XLA's
      parser at line:col: <message>".
  """
  try:
    # XLA's parser CHECK-fails (SIGABRT) on some text (make fuzz, seed 0,
    # mutation 12080: `parameter(4294967296)`): parsed in the guarded
    # child first; a refusal there is worded by the parse here.
    module_guard.guarded_text(text.encode(), "hlo_text")
  except module_guard.GuardError as e:
    if e.died:
      raise
  try:
    proto = private_api.hlo_text_to_proto(text)
  except ValueError as e:
    raise ValueError(
      f"HLO text does not parse: {_xla_parse_error(e)}"
    ) from None
  if proto is None:
    raise ValueError("this jaxlib has no HLO text parser")
  return proto


def _xla_parse_error(e: ValueError) -> str:
  """XLA's parser status in one line: its first "was parsing L:C: error:
  M" as "XLA's parser at line L:C: M", else the status's first line."""
  for line in str(e).splitlines():
    m = re.match(r"was parsing (\d+:\d+): error: (.*)", line.strip())
    if m:
      return f"XLA's parser at line {m[1]}: {m[2].rstrip(':')}"
  return _one_line(str(e))


def _from_hlo(
  path: str,
  kind: str,
  proto: bytes,
  text: str,
  arguments: tuple[np.ndarray, ...] | None,
  result: tuple[np.ndarray, ...] | None,
) -> ModuleFile:
  """A ModuleFile from an HLO module (its proto and text)."""
  from hloprobe import ir

  signature = ir.module_signature(proto)
  optimized = bool(_SCHEDULED.search(text) or _OPTIMIZED.search(text))
  try:
    stablehlo = ir.read_stablehlo_module(_hlo_to_stablehlo(proto)).text
  except (HloParseError, ValueError):
    if not optimized:
      raise
    stablehlo = ""  # an optimized module is executed, not compiled
  if arguments is not None:
    signature.check_arguments(arguments)
  return ModuleFile(
    path=path,
    kind=kind,
    name=signature.name,
    stablehlo=stablehlo,
    hlo_text=text,
    optimized=optimized,
    parameters=signature.parameters,
    arguments=arguments,
    result=result,
  )


def _hlo_to_stablehlo(proto: bytes) -> str:
  """`jax.extend.mlir.hlo_to_stablehlo`, in module_guard's child (it
  aborts in process on some modules: make fuzz seed 0, mutation 2495), as
  MLIR text; ValueError when XLA's translation fails."""
  try:
    text = module_guard.guarded_text(proto, "hlo_to_stablehlo")
  except module_guard.GuardError as e:
    if e.died:
      raise
    raise ValueError(f"XLA cannot translate it to StableHLO: {e}") from None
  return _checked_text(text, mlir=True)


def is_module_file(spec: str) -> bool:
  """Whether a --case word names a module file.

  True for an existing path that is not a `.py` file (a `module:factory`
  or `file.py:factory` spec names no existing path): a module file of one
  of `MODULE_KINDS`, told by its contents when `read_module_file` reads it,
  or a file or directory it will refuse in one line naming what is wrong.
  Never raises.
  """
  if spec.endswith(".py"):
    return False
  try:
    return os.path.lexists(spec)
  except (OSError, ValueError):
    return False


def unknown_custom_calls(mf: ModuleFile) -> tuple[str, ...]:
  """The custom-call targets of `mf` that neither XLA:CPU nor hloprobe's
  executor knows (e.g. "foo"), sorted, each once; () when there are none.

  Known: XLA:CPU's registry (`private_api.custom_call_targets("cpu")`,
  with jax's CPU targets), the sharding annotations XLA's passes remove,
  and the `__cublas$`/`__cudnn$` calls `hloprobe.execute` computes (or
  names as not executed). The module parses, but cannot run where one of
  the unknown targets is called: the case stage names them there.
  """
  if mf.hlo_text is not None:
    found = set(_HLO_TARGET.findall(mf.hlo_text))
  else:
    found = {a or b for a, b in _MLIR_TARGET.findall(mf.stablehlo)}
  registered = private_api.custom_call_targets("cpu") or frozenset()
  return tuple(
    sorted(
      t
      for t in found
      if t not in registered
      and t not in _PASS_TARGETS
      and not t.startswith(_EXECUTED_PREFIXES)
    )
  )


def unoptimized_twin(path: str) -> str | None:
  """The `before_optimizations` module (text, else proto) of the XLA dump
  `path` belongs to (same folder, same `module_NNNN.` prefix), or None."""
  folder, base = os.path.split(path)
  match = _DUMP_NAME.match(base)
  if match is None:
    return None
  for suffix in (".before_optimizations.txt", ".before_optimizations.hlo.pb"):
    pattern = glob.escape(match.group(1)) + ".*" + suffix
    found = sorted(glob.glob(os.path.join(glob.escape(folder or "."), pattern)))
    if found:
      return os.path.join(folder, os.path.basename(found[0]))
  return None


@dataclasses.dataclass(frozen=True, slots=True)
class OptimizedModule:
  """An optimized module file (an `after_optimizations` dump, as XLA ran
  it) and the unoptimized module of the same dump beside it.

  Attributes:
    file: the file, read (`read_module_file`); its `hlo_text` is not None.
    twin: the path of its `before_optimizations` module
      (`unoptimized_twin`).
  """

  file: ModuleFile
  twin: str

  def twin_hlo_text(self) -> str | None:
    """The twin's HLO text (`read_module_file(twin).hlo_text`; None for a
    StableHLO file).

    Raises:
      ModuleFileError: the twin cannot be read as a module.
    """
    return read_module_file(self.twin).hlo_text


def optimized_module(source: str) -> OptimizedModule | None:
  """The optimized module file a --case word names, with its twin.

  Returns:
    None where `source` is not a module file (`is_module_file`), is not
    optimized, holds no HLO text, or has no unoptimized twin beside it.

  Raises:
    ModuleFileError: `source` is a module file that cannot be read.
  """
  if not is_module_file(source):
    return None
  mf = read_module_file(source)
  twin = unoptimized_twin(source) if mf.optimized else None
  if twin is None or mf.hlo_text is None:
    return None
  return OptimizedModule(mf, twin)
