"""A mesh case's bit-exact sites by the kernel model split as its mesh asks.

sharded_matmul's x @ w has K = 256 sharded over 8 devices: XLA's SPMD
partitioner makes each device's dot over its K / 8 = 32 slice, then an
all-reduce adds the 8 partial sums (xla/service/spmd/dot_handler.cc), and
on an A100 each device's slice is a Triton gemm of TF32 mma.sync m16n8k8
(the PTX `sweep --case=sharded_matmul --targets=a100` records at
bfloat16, n = 2 and 8). `kernel_model_run` of the case must therefore be
the kernel model's gemm of each slice, added in device order in f32, as
the emulated sites' partial sums are (`evaluator.partial_sums`), not one
gemm over K = 256 (a review's finding: it was).

Expected: `kernel_model.kernel_gemm` called here on each slice (numpy), the
partials added in float32 in device order: the split composed here, not
by the code under test.
"""

import numpy as np
import pytest

from hloprobe.compile import CASES
from hloprobe.numerics import kernel_model_run, site_model
from hloprobe.numerics.kernel_model import kernel_gemm

pytestmark = pytest.mark.compiles  # the model runs under jax

_TF32 = ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",)
_DEVICES = 8


@pytest.mark.parametrize("jit", [False, True])
def test_a_split_sites_kernel_gemms_are_per_device_slices(jit):
  case = CASES["sharded_matmul"]
  x, w = case.inputs_for(case.full_inputs(), 2)
  site = site_model("Triton gemm", _TF32, "8.0", None, "TF32_TF32_F32")
  assert site.ins is not None  # a bit-exact model
  algorithms = ("TF32_TF32_F32",)
  (got,) = kernel_model_run(case, (x, w), algorithms, {0: site}, jit=jit)
  step = x.shape[1] // _DEVICES
  want = None
  for j in range(_DEVICES):
    part = kernel_gemm(
      x[None, :, j * step : (j + 1) * step],
      w[None, j * step : (j + 1) * step, :],
      site.ins,
      tf32_rounding=site.tf32_rounding,
    )[0]
    want = part if want is None else (want + part).astype(np.float32)
  np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
  (whole,) = kernel_model_run(case.fn, (x, w), algorithms, {0: site}, jit=jit)
  assert not np.array_equal(whole, got)  # the split moves the bits
