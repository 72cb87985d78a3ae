"""Records the fixtures of a program whose output holds a mean over the
batch: the README's `my_case` (`y = x @ w`, loss `jnp.mean(y * y)`),
float32, compiled for hloprobe's compile-only `a100` target through
`hloprobe.compile.compile_case` (as record_fixtures.py does).

The loss's reduction sums over every row of `y`: it computes no row, and
the batch-invariance answer must not name it (issue 38's wrong answer).

Run from the repository root, once per jaxlib:

  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 .venv/bin/python \\
      tests/testdata/kernels/record_batch_mean.py
  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 PYTHONPATH=$PWD \\
      .venv-jax0.10.2/bin/python \\
      tests/testdata/kernels/record_batch_mean.py

Writes, for each batch size n in 1, 2, 8, into
tests/testdata/kernels/<jaxlib>/:
  batch_mean_a100_n<n>.hlo.txt    the optimized HLO
  batch_mean_a100_n<n>.ptx.txt    the PTX files of the compile, joined
                                  (each file's text after a line
                                  "// hloprobe: file <i>")
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from hloprobe import compile as compile_mod  # noqa: E402

BATCH_SIZES = (1, 2, 8)


def predict_and_loss(x, w):
  """x f32[n, 256], w f32[256, 64]: {"loss": f32[], "y": f32[n, 64]}."""
  y = x @ w
  return {"loss": jnp.mean(y * y), "y": y}


def inputs():
  g = np.random.default_rng(0)
  x = g.standard_normal((8, 256)).astype(np.float32)
  w = g.standard_normal((256, 64)).astype(np.float32)
  return x, w


CASE = compile_mod.Case(
  "batch_mean",
  "README my_case: x @ w and its mean square over the batch",
  predict_and_loss,
  inputs,
  in_axes=(0, None),
  output_axis=(None, 0),
)


def main() -> int:
  # The same recording as the issue model's (record_fixtures.py, beside
  # this script: run as a script, its folder is on sys.path).
  from record_fixtures import record

  record(CASE, inputs(), "batch_mean", BATCH_SIZES)
  return 0


if __name__ == "__main__":
  sys.exit(main())
