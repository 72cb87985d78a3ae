"""Records the fixtures of two elementwise programs for
`kernels.fp_contract` (issue 38: the elementwise control's a100 note
claimed a multiply and an add could fuse into an FMA, though its HLO is
subtract, multiply, maximum):

  elementwise_only  the built-in control, relu((x - b) * s): a subtract
                    feeds the multiply, which feeds a maximum;
  scale_shift       relu(x * s - b): the multiply feeds the subtract.

x f32[n, 256], b and s f32[256], float32, compiled for hloprobe's
compile-only `a100` target through `hloprobe.compile.compile_case` (as
record_fixtures.py does), at n = 8.

Run from the repository root, once per jaxlib:

  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 .venv/bin/python \\
      tests/testdata/kernels/record_fp_contract.py
  JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 PYTHONPATH=$PWD \\
      .venv-jax0.10.2/bin/python \\
      tests/testdata/kernels/record_fp_contract.py

Writes into tests/testdata/kernels/<jaxlib>/:
  <name>_a100_n8.hlo.txt    the optimized HLO
  <name>_a100_n8.ptx.txt    the PTX files of the compile, joined (each
                            file's text after "// hloprobe: file <i>")
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from hloprobe import compile as compile_mod  # noqa: E402
from hloprobe.compile.invariance_cases import INVARIANCE_CASES  # noqa: E402


def scale_shift(x, b, s):
  """x f32[n, 256], b and s f32[256] -> relu(x * s - b), f32[n, 256]."""
  return jnp.maximum(x * s - b, 0.0)


def inputs():
  g = np.random.default_rng(0)
  x = g.standard_normal((8, 256)).astype(np.float32)
  b = g.standard_normal(256).astype(np.float32)
  s = g.standard_normal(256).astype(np.float32)
  return x, b, s


SCALE_SHIFT = compile_mod.Case(
  "scale_shift",
  "relu(x * s - b): a multiply feeding a subtract",
  scale_shift,
  inputs,
  in_axes=(0, None, None),
)


def main() -> int:
  # The same recording as the issue model's (record_fixtures.py, beside
  # this script: run as a script, its folder is on sys.path).
  from record_fixtures import record

  (control,) = [c for c in INVARIANCE_CASES if c.name == "elementwise_only"]
  record(control, control.make_inputs(), "elementwise_only", (8,))
  record(SCALE_SHIFT, inputs(), "scale_shift", (8,))
  return 0


if __name__ == "__main__":
  sys.exit(main())
