"""One convolution computed the way a dot algorithm computes it, on the CPU.

A convolution is a contraction: each output element sums K = (input
features per group) x (window elements) products of an input and a kernel
value. `emulated_conv_general_dilated` writes it as a dot over patches
(im2col) and hands that dot to `emulate_dot.emulated_dot_general`, so a
convolution site gets every algorithm, summation order and TF32 rounding a
dot site gets: operands rounded to the algorithm's storage type, products
exact, sums in its accumulation type. The patches are taken by
`lax.conv_general_dilated_patches` (jax/_src/lax/other.py: a convolution
with one-hot kernels, input feature major in the patch dimension, then
the window in kernel order; checked on jax 0.12.0.1), which copies
finite values exactly; an infinite or NaN input also makes the patches
around it NaN (inf x 0), where the convolution itself would not.

What it does not promise: the order cuDNN's engine sums in (implicit GEMM
tiles, Winograd or FFT transforms, which change more than the order; they
are chosen by cuDNN and not visible in the HLO); how a cuDNN TF32 engine
rounds f32 to TF32 (the caller's `tf32_rounding` is used; the numpy
executor's cuDNN model, execute/conv.py, uses round to nearest even). The
`order` argument lets a caller measure how much the order of an f32 sum
matters, as for dots.
Not emulated: `batch_group_count` > 1 (a grouped convolution's kernel
gradient), which raises `EmulationError`.

Private in intent: use the package, `hloprobe.numerics`.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from hloprobe.errors import EmulationError
from hloprobe.numerics.emulate_dot import emulated_dot_general

__all__ = ["emulated_conv_general_dilated"]


def emulated_conv_general_dilated(
  lhs,
  rhs,
  params: dict,
  algorithm: str,
  *,
  order: str = "xla",
  tf32_rounding: str = "rna",
) -> jnp.ndarray:
  """`lax.conv_general_dilated` as `algorithm` computes it; usable under `jit`.

  Args:
    lhs, rhs: the input and the kernel, real floating arrays.
    params: the `conv_general_dilated` equation's params (jax 0.10.2 and
      0.12.0.1): window_strides, padding (pairs), lhs_dilation,
      rhs_dilation, dimension_numbers (`ConvDimensionNumbers`),
      feature_group_count, batch_group_count.
    algorithm, order, tf32_rounding: as `emulated_dot_general`.

  Returns:
    The result in the accumulation type (f32, or f64 for F64_F64_F64),
    laid out as the convolution's output (`dimension_numbers.out_spec`).

  Raises:
    EmulationError: batch_group_count > 1, or as `emulated_dot_general`.
    InvalidArgumentError: as `emulated_dot_general`.
  """
  if params["batch_group_count"] != 1:
    raise EmulationError(
      "[hloprobe] cannot emulate a convolution with batch_group_count="
      f"{params['batch_group_count']} (a grouped convolution's kernel "
      "gradient); only batch_group_count=1 is emulated"
    )
  lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
  lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
  window = tuple(rhs.shape[d] for d in rhs_spec[2:])
  # The patches are copies: take them in the operand's own type, so that
  # the algorithm's rounding (in `emulated_dot_general`) sees the values.
  patches = lax.conv_general_dilated_patches(
    lhs,
    window,
    params["window_strides"],
    params["padding"],
    lhs_dilation=params["lhs_dilation"],
    rhs_dilation=params["rhs_dilation"],
    dimension_numbers=params["dimension_numbers"],
    precision=lax.Precision.HIGHEST,
  )
  groups = params["feature_group_count"]
  feature = out_spec[1]
  # (..., C * S) -> (..., G, Cg * S): input feature major in the patches.
  cols = jnp.moveaxis(patches, feature, -1)
  cols = cols.reshape(*cols.shape[:-1], groups, cols.shape[-1] // groups)
  # Kernel (O, I, window...) -> (G, O / G, I * S), I major as the patches.
  kernel = jnp.transpose(rhs, (rhs_spec[0], rhs_spec[1], *rhs_spec[2:]))
  out_features = kernel.shape[0]
  kernel = kernel.reshape(groups, out_features // groups, -1)
  g = cols.ndim - 2
  dn = (((g + 1,), (2,)), ((g,), (0,)))
  out = emulated_dot_general(
    cols, kernel, dn, algorithm, order=order, tf32_rounding=tf32_rounding
  )  # (G, ..., O / G)
  out = jnp.moveaxis(out, 0, -2)
  out = out.reshape(*out.shape[:-2], out_features)
  return jnp.moveaxis(out, -1, feature)
