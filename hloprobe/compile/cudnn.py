"""cuDNN's library for compile-only cuDNN attention: what is missing, in words.

`jax.nn.dot_product_attention(..., implementation="cudnn")` lowers to a
`__cudnn$fmha*` custom call that XLA compiles for a compile-only target
without a GPU, but jax reads cuDNN's version while tracing it
(jax/_src/cudnn/fused_attention_stablehlo.py, `dot_product_attention` ->
`check_cudnn_version` -> the CUDA plugin's `cuda_versions.
cudnn_get_version()`; jax 0.10.2 and 0.12.0.1), which loads libcudnn.so.9
from the nvidia-cudnn-cu12 wheel (hloprobe's extra `cudnn`, which `make
full` installs; `make run` leaves it out: 2.0 GB). Without the wheel every config fails
with jax's "cuDNN not found." (or "cuDNN is not detected." without a
CUDA plugin); `missing_cudnn_message` turns that into one line naming
what is missing and how to get it. Checked: with the wheel pinned in
pyproject.toml (`CUDNN_WHEEL`) installed, cuDNN attention traces and
compiles for the a100 and h100 (forward and backward) on a machine with no
GPU and no driver, on jaxlib 0.12.0.1 and 0.10.2.

Private in intent: use the package, `hloprobe.compile`.
"""

from __future__ import annotations

from hloprobe import private_api

__all__ = ["CUDNN_WHEEL", "cudnn_version", "missing_cudnn_message"]

# The wheel and version pyproject.toml pins (keep the two equal).
CUDNN_WHEEL = "nvidia-cudnn-cu12==9.10.2.21"
# What jax raises when it finds no cuDNN library (jax 0.10.2, 0.12.0.1):
# the plugin's `cudnn_get_version`, and `check_cudnn_version` without a
# CUDA plugin at all.
_JAX_MESSAGES = ("cuDNN not found", "cuDNN is not detected")


def cudnn_version() -> int | None:
  """The cuDNN library's version as JAX finds it (91002 for 9.10.2), or
  None where there is none (`private_api.cudnn_version`)."""
  return private_api.cudnn_version()


def missing_cudnn_message(error: BaseException) -> str | None:
  """One line naming the missing cuDNN library and how to get it, where
  `error` is jax's failure to find it; None for any other error.

  Args:
    error: what tracing or lowering a case raised.
  """
  text = str(error).strip()
  if not isinstance(error, RuntimeError) or not text.startswith(_JAX_MESSAGES):
    return None
  return (
    "cuDNN attention (jax.nn.dot_product_attention implementation='cudnn') "
    "needs cuDNN's library even to compile for a target without a GPU: "
    f"jax found none ({text.rstrip('.')}); `make full` installs it "
    f"(hloprobe's extra `cudnn`: pip install '{CUDNN_WHEEL}')"
  )
