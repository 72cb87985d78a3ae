"""Reading compiler text into records; no JAX runtime here.

hlo (optimized HLO text: XLA's own parser through `hloprobe.private_api`
for the structure, hlo_text for the rest, into hlo_records), stablehlo
(StableHLO dot_general ops, read with MLIR's parser through mlir_context,
the adapter to jaxlib's MLIR bindings),
ptx (PTX kernels), xla_proto (binary HloModuleProto, HloProto and
HloSnapshot files; literals as numpy), stablehlo_module (a whole StableHLO
module from text, bytecode or a portable artifact), canonical (canonical forms for goldens), precisions (the
precision and DotAlgorithmPreset vocabulary).

The stage's interface is `__all__`; the modules behind it are private in
intent. The StableHLO names (`StableHloDot`, `parse_stablehlo_dots`,
`parse_precision_config`, `read_stablehlo_module`) are imported on first
use (PEP 562 `__getattr__`): they load jaxlib's MLIR bindings, which the HLO
and PTX readers do not need (`import hloprobe` and those readers load no
jaxlib); so are the HloProto/HloSnapshot reader's (xla_proto: protobuf).
"""

from __future__ import annotations

from hloprobe.ir.canonical import canonical_text as canonical_text
from hloprobe.ir.fused_attention import (
  is_attention_target as is_attention_target,
)
from hloprobe.ir.hlo import parse_hlo_module as parse_hlo_module
from hloprobe.ir.hlo_records import HloComputation as HloComputation
from hloprobe.ir.hlo_records import HloInstruction as HloInstruction
from hloprobe.ir.hlo_records import HloModule as HloModule
from hloprobe.ir.precisions import ALGORITHMS as ALGORITHMS
from hloprobe.ir.precisions import DEFAULT_PRECISIONS as DEFAULT_PRECISIONS
from hloprobe.ir.precisions import PRECISION_ALIASES as PRECISION_ALIASES
from hloprobe.ir.precisions import Precision as Precision
from hloprobe.ir.precisions import as_precision as as_precision
from hloprobe.ir.ptx import PtxKernel as PtxKernel
from hloprobe.ir.ptx import parse_ptx as parse_ptx
from hloprobe.ir.textfile import InputFile as InputFile
from hloprobe.ir.textfile import path_part as path_part
from hloprobe.ir.textfile import write_whole as write_whole

__all__ = [
  "ALGORITHMS",
  "DEFAULT_PRECISIONS",
  "HloComputation",
  "HloInstruction",
  "HloModule",
  "InputFile",
  "PRECISION_ALIASES",
  "Precision",
  "PtxKernel",
  "StableHloDot",
  "as_precision",
  "canonical_text",
  "is_attention_target",
  "module_signature",
  "parse_hlo_module",
  "parse_precision_config",
  "parse_ptx",
  "parse_stablehlo_dots",
  "path_part",
  "read_proto_file",
  "read_stablehlo_module",
  "wire_problem",
  "write_whole",
]


# Names imported on first use, by module: the StableHLO readers load
# jaxlib's MLIR bindings, the proto reader the protobuf package.
_LAZY = {
  "StableHloDot": "stablehlo",
  "parse_precision_config": "stablehlo",
  "parse_stablehlo_dots": "stablehlo",
  "read_stablehlo_module": "stablehlo_module",
  "wire_problem": "proto_wire",
  "module_signature": "xla_proto",
  "read_proto_file": "xla_proto",
}


def __getattr__(name: str):
  """The lazily loaded names, on first use (see the docstring)."""
  if name in _LAZY:
    if _LAZY[name] == "stablehlo":
      from hloprobe.ir import stablehlo as module
    elif _LAZY[name] == "stablehlo_module":
      from hloprobe.ir import stablehlo_module as module
    elif _LAZY[name] == "proto_wire":
      from hloprobe.ir import proto_wire as module
    else:
      from hloprobe.ir import xla_proto as module
    return getattr(module, name)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
