"""Reading compiler text into records; no JAX runtime here.

hlo (optimized HLO text: XLA's own parser through `hloprobe.private_api`
for the structure, hlo_text for the rest, into hlo_records), stablehlo
(StableHLO dot_general ops, read with MLIR's parser through mlir_context,
the adapter to jaxlib's MLIR bindings),
ptx (PTX kernels), canonical (canonical forms for goldens), precisions (the
precision and DotAlgorithmPreset vocabulary).
"""

from __future__ import annotations

__all__: list[str] = []
