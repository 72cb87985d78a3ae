"""Records the fixtures of a program the kernel model computes bit for
bit at most batch sizes: two TF32 Triton gemms with a bias and a ReLU
between them, `relu(x @ w0 + b0) @ w1`, x f32[n, 64], w0 f32[64, 128],
w1 f32[128, 32], vmapped over rows, compiled for hloprobe's compile-only
`a100` target under `jax.default_matmul_precision("tensorfloat32")`
through `hloprobe.compile.compile_case` (as record_fixtures.py does).

Read by hand from the recording (jaxlib 0.12.0.1): at n = 1 both dots
are a multiply+reduce (dot strength reduction: a vector-matrix product);
at n = 8, 32, 64 both are Triton gemms with one `mma.sync.aligned.m16n8k8
.row.col.f32.tf32.tf32.f32` flavour, `cvt.rna.tf32.f32` and no split-K.

Run from the repository root:

  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 .venv/bin/python \\
      tests/testdata/kernels/record_model_bits.py

Writes, for each batch size n in 1, 8, 32, 64, into
tests/testdata/kernels/<jaxlib>/:
  model_bits_a100_n<n>.stablehlo.txt  the lowered StableHLO (the sites)
  model_bits_a100_n<n>.hlo.txt        the optimized HLO
  model_bits_a100_n<n>.ptx.txt        the PTX files of the compile, joined
                                      (each file's text after a line
                                      "// hloprobe: file <i>")
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jaxlib  # noqa: E402
import numpy as np  # noqa: E402

from hloprobe import compile as compile_mod  # noqa: E402

BATCH_SIZES = (1, 8, 32, 64)
D_IN, HIDDEN, OUT = 64, 128, 32


def model(x, w0, b0, w1):
  """One row: x f32[64] -> f32[32]."""
  return jnp.maximum(x @ w0 + b0, 0.0) @ w1


def batched(xs, w0, b0, w1):
  return jax.vmap(model, in_axes=(0, None, None, None))(xs, w0, b0, w1)


def inputs():
  g = np.random.default_rng(38)
  return (
    g.standard_normal((64, D_IN)).astype(np.float32),
    (g.standard_normal((D_IN, HIDDEN)) / 8).astype(np.float32),
    g.standard_normal(HIDDEN).astype(np.float32),
    (g.standard_normal((HIDDEN, OUT)) / 11).astype(np.float32),
  )


CASE = compile_mod.Case(
  "model_bits",
  "relu(x @ w0 + b0) @ w1, TF32: Triton gemms the kernel model computes",
  batched,
  inputs,
  in_axes=(0, None, None, None),
  rows_independent=True,
)


def main() -> int:
  compile_mod.start_backends("cpu")
  target = compile_mod.get_target("a100")
  out = os.path.join(os.path.dirname(__file__), jaxlib.__version__)
  os.makedirs(out, exist_ok=True)
  full = inputs()
  for n in BATCH_SIZES:
    args = CASE.inputs_for(full, n)
    compiled = compile_mod.compile_case(CASE, args, "tensorfloat32", target)
    stem = os.path.join(out, f"model_bits_a100_n{n}")
    for ext, text in (
      (".stablehlo.txt", compiled.stablehlo),
      (".hlo.txt", compiled.optimized_hlo),
    ):
      with open(stem + ext, "w", encoding="utf-8") as f:
        f.write(text)
    with open(stem + ".ptx.txt", "w", encoding="utf-8") as f:
      for i, text in enumerate(compiled.ptx):
        f.write(f"// hloprobe: file {i}\n{text}\n")
    print(n, len(compiled.ptx), "PTX files")
  return 0


if __name__ == "__main__":
  sys.exit(main())
