"""The one adapter to private jax/jaxlib API (`_adapter`, read its
docstring): nothing else in hloprobe imports that API
(tests/layering_test.py checks). Importing it loads neither jax nor
jaxlib: each function imports what it reads.
"""

from __future__ import annotations

from hloprobe.private_api._adapter import (
  XLA_BRIDGE_LOGGER,
  XlaComputation,
  cuda_path,
  cudnn_version,
  custom_call_targets,
  gpu_target_config,
  hlo_proto_to_text,
  hlo_text_to_proto,
  jaxlib_embedded,
  jaxlib_git_hash,
  kept_arguments,
  register_upstream_dialects,
  stablehlo_to_hlo_text,
  while_has_dce_rule,
  xla_hlo_structure,
  xla_instruction_counts,
  xla_runtime_error_type,
)

__all__ = [
  "XLA_BRIDGE_LOGGER",
  "XlaComputation",
  "cuda_path",
  "cudnn_version",
  "custom_call_targets",
  "gpu_target_config",
  "hlo_proto_to_text",
  "hlo_text_to_proto",
  "jaxlib_embedded",
  "jaxlib_git_hash",
  "kept_arguments",
  "register_upstream_dialects",
  "stablehlo_to_hlo_text",
  "while_has_dce_rule",
  "xla_hlo_structure",
  "xla_instruction_counts",
  "xla_runtime_error_type",
]
