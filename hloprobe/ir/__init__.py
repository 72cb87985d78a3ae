"""Reading compiler text into records; no JAX runtime here.

hlo (optimized HLO text: XLA's own parser through `hloprobe.private_api`
for the structure, hlo_text for the rest, into hlo_records), stablehlo
(StableHLO dot_general ops, read with MLIR's parser through mlir_context,
the adapter to jaxlib's MLIR bindings),
ptx (PTX kernels), canonical (canonical forms for goldens), precisions (the
precision and DotAlgorithmPreset vocabulary).

The stage's interface is `__all__`; the modules behind it are private in
intent. The StableHLO names (`StableHloDot`, `parse_stablehlo_dots`,
`parse_precision_config`) are imported on first use (PEP 562
`__getattr__`): they load jaxlib's MLIR bindings, which the HLO and PTX
readers do not need (`import hloprobe` and those readers load no jaxlib).
"""

from __future__ import annotations

from hloprobe.ir.canonical import canonical_hlo as canonical_hlo
from hloprobe.ir.canonical import canonical_stablehlo as canonical_stablehlo
from hloprobe.ir.fused_attention import attention_dims as attention_dims
from hloprobe.ir.fused_attention import (
  is_attention_target as is_attention_target,
)
from hloprobe.ir.hlo import parse_hlo_module as parse_hlo_module
from hloprobe.ir.hlo_records import HloComputation as HloComputation
from hloprobe.ir.hlo_records import HloInstruction as HloInstruction
from hloprobe.ir.hlo_records import HloModule as HloModule
from hloprobe.ir.precisions import ALGORITHMS as ALGORITHMS
from hloprobe.ir.precisions import DEFAULT_PRECISIONS as DEFAULT_PRECISIONS
from hloprobe.ir.precisions import PRECISION_NAMES as PRECISION_NAMES
from hloprobe.ir.precisions import Precision as Precision
from hloprobe.ir.precisions import (
  algorithm_from_fields as algorithm_from_fields,
)
from hloprobe.ir.precisions import algorithm_from_hlo as algorithm_from_hlo
from hloprobe.ir.precisions import as_precision as as_precision
from hloprobe.ir.precisions import parse_precision as parse_precision
from hloprobe.ir.ptx import PtxKernel as PtxKernel
from hloprobe.ir.ptx import for_operands as for_operands
from hloprobe.ir.ptx import kernel_name as kernel_name
from hloprobe.ir.ptx import parse_ptx as parse_ptx
from hloprobe.ir.textfile import read_text_file as read_text_file
from hloprobe.ir.textfile import umask_mode as umask_mode
from hloprobe.ir.textfile import write_whole as write_whole

__all__ = [
  "ALGORITHMS",
  "DEFAULT_PRECISIONS",
  "HloComputation",
  "HloInstruction",
  "HloModule",
  "PRECISION_NAMES",
  "Precision",
  "PtxKernel",
  "StableHloDot",
  "algorithm_from_fields",
  "algorithm_from_hlo",
  "as_precision",
  "attention_dims",
  "canonical_hlo",
  "canonical_stablehlo",
  "for_operands",
  "is_attention_target",
  "kernel_name",
  "parse_hlo_module",
  "parse_precision",
  "parse_precision_config",
  "parse_ptx",
  "parse_stablehlo_dots",
  "read_text_file",
  "umask_mode",
  "write_whole",
]


_STABLEHLO_NAMES = (
  "StableHloDot",
  "parse_precision_config",
  "parse_stablehlo_dots",
)


def __getattr__(name: str):
  """The StableHLO reader's names, on first use (see the docstring)."""
  if name in _STABLEHLO_NAMES:
    from hloprobe.ir import stablehlo

    return getattr(stablehlo, name)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
