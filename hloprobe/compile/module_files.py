"""Module files as cases: HLO text, HloModuleProto, HloSnapshot, StableHLO,
jax.export artifacts, read by their contents into one `ModuleFile` record.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = [
  "MAX_MODULE_BYTES",
  "MODULE_KINDS",
  "ModuleFile",
  "is_module_file",
  "read_module_file",
  "unknown_custom_calls",
]

# The largest module file read, in bytes (256 MiB): bug-report modules with
# an HloSnapshot's arguments run to tens of MiB; a file over this is refused
# in one line rather than read into memory.
MAX_MODULE_BYTES = 256 * 1024 * 1024

# The kinds of module file, as `ModuleFile.kind` names them.
MODULE_KINDS = (
  "hlo_text",
  "hlo_proto",
  "hlo_proto_text",
  "hlo_snapshot",
  "stablehlo_text",
  "stablehlo_bytecode",
  "jax_export",
)


@dataclasses.dataclass(frozen=True)
class ModuleFile:
  """One module file read whole; picklable (it goes to worker processes).

  Attributes:
    path: the file's path as the user gave it.
    kind: one of `MODULE_KINDS`, from the file's contents (not its suffix).
    name: the module's name (HloModule name, or the StableHLO module's
      `sym_name`), for the case's name.
    stablehlo: the module as StableHLO text (MLIR), what jax/XLA compile.
    hlo_text: the HLO text where the input is HLO (text, proto, snapshot);
      None for StableHLO and jax.export inputs.
    optimized: True for an after-optimizations module (scheduled, fusion
      computations, `__cublas`/`__cudnn`/`__triton` custom calls): executed
      as it stands, not compiled again.
    parameters: the entry computation's parameters in order, each
      (shape, dtype name as HLO writes it: "f32", "bf16", "s8", "pred").
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
    ModuleFileError: one line naming the file and what is wrong.
  """
  raise NotImplementedError("read_module_file")


def is_module_file(spec: str) -> bool:
  """Whether a --case word names a module file: an existing regular file,
  not a `.py` file nor a `module:factory` spec, whose first bytes look like
  a module of one of `MODULE_KINDS` (by contents, not suffix). Never raises.
  """
  raise NotImplementedError("is_module_file")


def unknown_custom_calls(mf: ModuleFile) -> tuple[str, ...]:
  """The custom-call targets of `mf` that neither XLA:CPU nor hloprobe's
  executor knows (e.g. "foo"), sorted, each once; () when there are none.
  The module parses, but cannot run where one of these is called."""
  raise NotImplementedError("unknown_custom_calls")
